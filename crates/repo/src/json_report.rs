//! The one convention every JSON report of toolgate follows (`test`, `diff`, `lint` and `mutate`
//! with `--format json`): an object whose first member is `format_version`, snake_case member
//! names, sorted maps, nothing that varies between two runs of the same tree but timings, and a
//! JSON Schema published by `toolgate schema` that tests hold each report to.
//!
//! The reports' types are serialize-only and live beside their renderers, apart from the logic
//! (ripgrep's `jsont.rs`), so a format changes only on purpose.

use serde::Serialize;

/// The format version of every JSON report: bumped on any change a consumer could notice in any
/// of them, so one number tells a reader which toolgate it is reading.
pub const FORMAT_VERSION: u32 = 4;

/// `document` as pretty-printed JSON and a final newline.
///
/// A report printed to a CI log must not hold GitHub Actions' legacy `##[command]`, which the
/// runner reads anywhere in a line: in JSON it can only be inside a string, where `\u0023` is the
/// same `#` to every reader.
pub fn render(document: &impl Serialize) -> String {
    // Report types hold strings, numbers, booleans and sorted maps with string keys: serializing
    // them cannot fail.
    let mut text = serde_json::to_string_pretty(document).expect("a report always serializes");
    if text.contains("##[") {
        text = text.replace("##[", "\\u0023#[");
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ci_command_in_a_string_is_escaped_and_reads_back_the_same() {
        let text = render(&serde_json::json!({"name": "##[add-mask]x"}));
        assert!(!text.contains("##["), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["name"], "##[add-mask]x");
    }
}
