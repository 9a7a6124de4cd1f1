//! The bytes of every file `toolgate new` writes, and the proof that each reads back as meant.
//!
//! What a scaffold writes comes in part from a description or a server nobody here wrote: member
//! names, summaries, tool names. So nothing is written by formatting strings into YAML: a YAML
//! file is a serializer's rendering of a value, after a header of comments in which every
//! character that could end the comment or hide from a reader is escaped; a JSON file is
//! serde_json's, with every invisible or bidirectional character written as a `\u` escape (the
//! same value, nothing hidden on disk). And before anything is written, each file is parsed back
//! (strictly: the gate's YAML dialect, the gate's JSON parser) and must give back exactly the
//! value that was meant, and hold no hidden character at all.

use serde::Serialize;
use serde_json::Value;
use toolgate_gate::internals::{
    escape_hidden, escape_json_hidden, is_hidden, parse_strict_json, read_strict_yaml,
};

/// A file to write: its bytes, and what they must read back as.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The bytes written.
    pub bytes: Vec<u8>,
    /// What they must mean.
    pub meant: Meant,
}

impl Rendered {
    /// The file's text (every rendering is UTF-8).
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.bytes).unwrap_or_default()
    }
}

/// What a file's bytes must read back as.
#[derive(Debug, Clone)]
pub enum Meant {
    /// A YAML document with this value.
    Yaml(Value),
    /// A JSON document with this value.
    Json(Value),
    /// Raw bytes that are not one value (a duplicate member, on purpose): only held to having
    /// nothing hidden in them.
    Raw,
}

/// The longest comment line's text, in characters.
const COMMENT_CAP: usize = 300;

/// A comment line's text: one line whatever `text` holds, every hidden character (line breaks,
/// bidi controls, zero-width characters) shown as an escape, capped.
pub fn comment(text: &str) -> String {
    let capped: String = text.chars().take(COMMENT_CAP).collect();
    let cut = if text.chars().count() > COMMENT_CAP {
        "…"
    } else {
        ""
    };
    format!("{}{cut}", escape_hidden(&capped))
}

/// A YAML file: `comments` (each already made one line by [`comment`], written after `# `),
/// then `value` as the serializer writes it.
pub fn yaml(comments: &[String], value: &impl Serialize) -> Result<Rendered, String> {
    let meant = serde_json::to_value(value).map_err(|error| error.to_string())?;
    let body = serde_saphyr::to_string(value).map_err(|error| error.to_string())?;
    let mut text = String::new();
    for line in comments {
        if line.is_empty() {
            text.push_str("#\n");
        } else {
            text.push_str("# ");
            text.push_str(line);
            text.push('\n');
        }
    }
    text.push_str(&body);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(Rendered {
        bytes: text.into_bytes(),
        meant: Meant::Yaml(meant),
    })
}

/// A JSON file: `value`, pretty, with a final newline.
pub fn json(value: &Value) -> Rendered {
    let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    Rendered {
        bytes: escape_json_hidden(&text).into_bytes(),
        meant: Meant::Json(value.clone()),
    }
}

/// JSON text `text` that is not one value (a raw fixture), with its hidden characters escaped.
pub fn raw_json(text: &str) -> Rendered {
    Rendered {
        bytes: escape_json_hidden(text).into_bytes(),
        meant: Meant::Raw,
    }
}

/// Whether `rendered` reads back as meant and holds nothing hidden; `Err` says what is wrong
/// (`file` names it). A failure here is the scaffold's own defect: nothing is written.
pub fn check(file: &str, rendered: &Rendered) -> Result<(), String> {
    let text = std::str::from_utf8(&rendered.bytes)
        .map_err(|_| format!("{file}: the scaffold would write bytes that are not UTF-8"))?;
    if let Some(ch) = text.chars().find(|ch| *ch != '\n' && is_hidden(*ch)) {
        return Err(format!(
            "{file}: the scaffold would write the hidden character U+{:04X}; nothing was written",
            ch as u32
        ));
    }
    let (read, meant) = match &rendered.meant {
        Meant::Raw => return Ok(()),
        Meant::Yaml(meant) => (
            read_strict_yaml::<Value>(text).map_err(|error| error.to_string()),
            meant,
        ),
        Meant::Json(meant) => (parse_strict_json(text.as_bytes(), 512), meant),
    };
    match read {
        Ok(read) if &read == meant => Ok(()),
        Ok(_) => Err(format!(
            "{file}: the scaffold's file would not read back as what it means; nothing was written"
        )),
        Err(error) => Err(format!(
            "{file}: the scaffold's file would not read back ({error}); nothing was written"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_comment_is_one_line_whatever_it_holds() {
        let shown = comment("a\nretry: { max_attempts: 9 }\r\u{2028}b\u{202e}c\u{200b}");
        assert!(!shown.contains('\n') && !shown.contains('\r'), "{shown}");
        assert!(!shown.chars().any(is_hidden), "{shown}");
        assert_eq!(comment(&"x".repeat(400)).chars().count(), COMMENT_CAP + 1);
    }

    #[test]
    fn hostile_strings_read_back_as_themselves() {
        #[derive(Serialize)]
        struct File {
            tool: &'static str,
            from: String,
            reason: String,
        }
        for text in [
            "/a\nretry:\n  max_attempts: 9",
            "/x: y",
            "- item",
            "# not a comment",
            "'quoted'",
            "\"double\"",
            "{ flow: map }",
            "null",
            "true",
            "0x1f",
            "1e3",
            "~",
            "",
            " leading and trailing ",
            "tab\there",
            "\u{85}\u{2028}\u{2029}\u{feff}",
        ] {
            let file = File {
                tool: "t",
                from: text.to_owned(),
                reason: format!("why: {text}"),
            };
            let comments = [comment(text), String::new(), comment("second")];
            let rendered = yaml(&comments, &file).unwrap();
            assert_eq!(check("contract.yaml", &rendered), Ok(()), "{text:?}");
            let read: Value =
                read_strict_yaml(std::str::from_utf8(&rendered.bytes).unwrap()).unwrap();
            assert_eq!(read["from"], json!(text), "{text:?}");
            assert!(read.get("retry").is_none(), "{text:?}");
        }
    }

    #[test]
    fn json_is_written_with_nothing_hidden_and_the_same_value() {
        let value = json!({"a\u{202e}b": "zero\u{200b}width \u{1f600}", "plain": "é"});
        let rendered = json(&value);
        assert_eq!(check("s.json", &rendered), Ok(()));
        let text = String::from_utf8(rendered.bytes).unwrap();
        assert!(
            text.contains("a\\u202eb") && text.contains("zero\\u200bwidth"),
            "{text}"
        );
        // Only the hidden ones: an emoji and an accented letter are shown as themselves.
        assert!(text.contains('\u{1f600}') && text.contains('é'), "{text}");
    }

    #[test]
    fn what_does_not_read_back_is_refused() {
        let mut rendered = yaml(&[], &json!({"tool": "t"})).unwrap();
        rendered.bytes = b"tool: t\nretry: { max_attempts: 9 }\n".to_vec();
        assert!(check("contract.yaml", &rendered).is_err());
        let hidden = Rendered {
            bytes: "{\"a\u{202e}\": 1}".as_bytes().to_vec(),
            meant: Meant::Raw,
        };
        assert!(check("x.json", &hidden).unwrap_err().contains("U+202E"));
    }
}
