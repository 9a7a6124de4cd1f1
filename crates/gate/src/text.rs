//! G2 for text tools: the whole output must match one anchored pattern; its named captures become
//! the document that schema, rules and projection then see, exactly as for JSON.
//!
//! A transcript that merely contains the fact is not a contract: the pattern is anchored at both
//! ends of the output, so a banner, a warning or one extra line makes the output not match.

use std::borrow::Cow;

use regex::Regex;

use crate::document::{Builder, Document, Element};
use crate::fault::Fault;
use crate::outcome::Layer;

#[derive(Debug)]
pub(crate) struct TextPattern {
    regex: Regex,
}

impl TextPattern {
    /// Compiles `pattern` anchored to the whole text. It must name at least one capture.
    pub(crate) fn compile(pattern: &str) -> Result<TextPattern, String> {
        let regex =
            Regex::new(&format!(r"\A(?:{pattern})\z")).map_err(|error| error.to_string())?;
        if regex.capture_names().flatten().next().is_none() {
            return Err(
                "the pattern has no named capture (?P<name>...), so it extracts nothing".to_owned(),
            );
        }
        Ok(TextPattern { regex })
    }

    /// The captures as a document holding one object of strings, if the whole text matches.
    pub(crate) fn captures<'a>(&'a self, text: &'a str) -> Option<Document<'a>> {
        let captures = self.regex.captures(text)?;
        let mut builder = Builder::default();
        let mut object = builder.open_object();
        for name in self.regex.capture_names().flatten() {
            if let Some(found) = captures.name(name) {
                let value = Element::String(Cow::Borrowed(found.as_str()));
                // The regex crate refuses a pattern that names two groups alike.
                let _ = builder.push_member(&mut object, Cow::Borrowed(name), value);
            }
        }
        let root = builder.close_object(object);
        Some(builder.finish(root))
    }
}

/// The rejection for output that no shape's pattern matched.
pub(crate) fn mismatch(text: &str) -> Fault {
    let lines = text.lines().count();
    let first = text.lines().next().unwrap_or_default();
    Fault::new(
        Layer::Parse,
        "text_pattern",
        format!(
            "the output ({} bytes, {lines} lines) does not match the contract's pattern as a whole; it begins {first:?}",
            text.len()
        ),
        "the command printed something the contract does not expect (an extra line, a banner, a warning); make it print only the machine-readable fact",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_output_must_match() {
        let pattern = TextPattern::compile(r"(?P<state>active|inactive|failed)\n?").unwrap();
        let document = pattern.captures("active\n").unwrap();
        assert_eq!(
            document.root().get("state").unwrap().as_str(),
            Some("active")
        );
        assert!(
            pattern
                .captures("active\nWarning: unit file changed\n")
                .is_none()
        );
        assert!(
            pattern
                .captures("Last login: yesterday\nactive\n")
                .is_none()
        );
        assert!(pattern.captures("activeX").is_none());
    }

    #[test]
    fn a_pattern_without_named_captures_is_refused() {
        assert!(TextPattern::compile(r"active").is_err());
        assert!(TextPattern::compile(r"(?P<x>").is_err());
    }
}
