//! Escaping and capping attacker-influenced text before it is stored for an operator.
//!
//! Validator messages quote the offending value and instance paths carry member names the upstream
//! chose, so every such string is escaped (no terminal control sequences, no bidi tricks) and
//! length-capped on its way into a fault, a finding or an operator record.

use std::fmt::Write as _;

/// Longest validator message kept, in characters.
pub(crate) const MESSAGE_CAP: usize = 400;
/// Longest instance path or keyword location kept, in characters.
pub(crate) const PATH_CAP: usize = 200;
/// Most additional findings kept per record.
pub(crate) const FINDINGS_CAP: usize = 12;

/// Escapes control, format and bidirectional-override characters as `\u{..}` and caps the result
/// at `cap` characters, saying how much was cut. Quotes and backslashes are kept as they are:
/// the result is for display, and JSON serialization escapes it again.
pub(crate) fn sanitize(text: &str, cap: usize) -> String {
    let mut out = String::with_capacity(text.len().min(cap + 16));
    for (written, (offset, ch)) in text.char_indices().enumerate() {
        if written >= cap {
            let _ = write!(out, "… ({} more bytes)", text.len() - offset);
            return out;
        }
        if needs_escape(ch) {
            let _ = write!(out, "\\u{{{:04x}}}", ch as u32);
        } else {
            out.push(ch);
        }
    }
    out
}

fn needs_escape(ch: char) -> bool {
    ch.is_control()
        || matches!(ch,
            '\u{200b}'..='\u{200f}'   // zero-width and directional marks
            | '\u{2028}' | '\u{2029}' // line and paragraph separators
            | '\u{202a}'..='\u{202e}' // bidirectional embeddings and overrides
            | '\u{2066}'..='\u{2069}' // bidirectional isolates
            | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(
            sanitize("a\u{1b}[31mb\nc\u{202e}d", 100),
            "a\\u{001b}[31mb\\u{000a}c\\u{202e}d"
        );
    }

    #[test]
    fn long_text_is_capped_and_says_how_much_was_cut() {
        let long = "x".repeat(1000);
        let capped = sanitize(&long, 10);
        assert_eq!(capped, format!("{}… (990 more bytes)", "x".repeat(10)));
    }

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(
            sanitize("plain \"quoted\" text", 100),
            "plain \"quoted\" text"
        );
    }
}
