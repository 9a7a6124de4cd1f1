//! Unified diffs for drift, coloured when the terminal wants colour.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use similar::{ChangeTag, TextDiff};

/// A unified diff from `old` to `new`. One-line JSON documents are compared pretty-printed, so the
/// changed member stands out; if they differ only in bytes pretty-printing hides (order,
/// whitespace), the raw lines are compared instead.
pub fn unified(old: &str, new: &str, color: bool) -> String {
    let (old_text, new_text) = match (pretty(old), pretty(new)) {
        (Some(old_pretty), Some(new_pretty)) if old_pretty != new_pretty => {
            (old_pretty, new_pretty)
        }
        _ => (format!("{old}\n"), format!("{new}\n")),
    };
    let diff = TextDiff::from_lines(&old_text, &new_text);
    let (removed, added, header) = if color {
        (
            Style::new().fg_color(Some(AnsiColor::Red.into())),
            Style::new().fg_color(Some(AnsiColor::Green.into())),
            Style::new().bold(),
        )
    } else {
        (Style::new(), Style::new(), Style::new())
    };
    let mut out = String::new();
    let _ = writeln!(out, "{header}--- snapshot{header:#}");
    let _ = writeln!(out, "{header}+++ now{header:#}");
    for group in diff.grouped_ops(3) {
        for op in group {
            for change in diff.iter_changes(&op) {
                let (sign, style) = match change.tag() {
                    ChangeTag::Delete => ('-', removed),
                    ChangeTag::Insert => ('+', added),
                    ChangeTag::Equal => (' ', Style::new()),
                };
                let line = change.value().trim_end_matches('\n');
                let _ = writeln!(out, "{style}{sign}{line}{style:#}");
            }
        }
    }
    out
}

fn pretty(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    serde_json::to_string_pretty(&value)
        .ok()
        .map(|pretty| pretty + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_compared_member_by_member() {
        let diff = unified(r#"{"a":1,"b":"x"}"#, r#"{"a":1,"b":"y"}"#, false);
        assert!(
            diff.contains("-  \"b\": \"x\"") && diff.contains("+  \"b\": \"y\""),
            "{diff}"
        );
        assert!(diff.contains("   \"a\": 1"), "{diff}");
    }

    #[test]
    fn byte_differences_pretty_printing_hides_show_as_raw_lines() {
        let diff = unified(r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#, false);
        assert!(
            diff.contains(r#"-{"a":1,"b":2}"#) && diff.contains(r#"+{"b":2,"a":1}"#),
            "{diff}"
        );
    }

    #[test]
    fn colour_is_only_added_when_asked() {
        assert!(!unified("a", "b", false).contains('\u{1b}'));
        assert!(unified("a", "b", true).contains('\u{1b}'));
    }
}
