//! Unified diffs for drift, coloured when the terminal wants colour.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use similar::{ChangeTag, TextDiff};
use toolgate_gate::internals::escape_hidden;

/// A unified diff from `old` to `new`. One-line JSON documents are compared re-indented (members
/// kept in their order), so the changed member stands out; if they differ only in bytes
/// re-indenting hides (whitespace), the raw lines are compared instead.
pub fn unified(old: &str, new: &str, color: bool) -> String {
    labelled(old, new, ("snapshot", "now"), color)
}

/// [`unified`] with other names for the two sides, e.g. two contract versions.
pub fn labelled(old: &str, new: &str, (old_label, new_label): (&str, &str), color: bool) -> String {
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
    let _ = writeln!(out, "{header}--- {old_label}{header:#}");
    let _ = writeln!(out, "{header}+++ {new_label}{header:#}");
    for group in diff.grouped_ops(3) {
        for op in group {
            for change in diff.iter_changes(&op) {
                let (sign, style) = match change.tag() {
                    ChangeTag::Delete => ('-', removed),
                    ChangeTag::Insert => ('+', added),
                    ChangeTag::Equal => (' ', Style::new()),
                };
                // The bytes come from a fixture tree nobody vetted: nothing in them may reach the
                // terminal as a control sequence.
                let line = escape_hidden(change.value().trim_end_matches('\n'));
                let _ = writeln!(out, "{style}{sign}{line}{style:#}");
            }
        }
    }
    out
}

/// Re-indents a JSON document two spaces per level, keeping members in their order.
fn pretty(text: &str) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(ch) = chars.next() {
        if in_string {
            out.push(ch);
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => {
                in_string = true;
                out.push(ch);
            }
            '{' | '[' => {
                out.push(ch);
                while chars.peek().is_some_and(|next| next.is_whitespace()) {
                    chars.next();
                }
                if chars.peek().is_some_and(|next| matches!(next, '}' | ']')) {
                    out.extend(chars.next());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(ch);
            }
            ',' => {
                out.push(ch);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            _ if ch.is_whitespace() => {}
            _ => out.push(ch),
        }
    }
    out.push('\n');
    Some(out)
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
    fn member_order_is_kept_when_re_indenting() {
        let expected = "{\n  \"z\": {\n    \"b\": [\n      1,\n      {}\n    ],\n    \"a\": \"x,{y}\"\n  },\n  \"e\": []\n}\n";
        assert_eq!(
            pretty(r#"{"z":{"b":[1,{}],"a":"x,{y}"},"e":[]}"#).unwrap(),
            expected
        );
        let diff = unified(r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#, false);
        assert!(
            diff.contains("-  \"a\": 1,") && diff.contains("+  \"a\": 1"),
            "{diff}"
        );
    }

    #[test]
    fn byte_differences_re_indenting_hides_show_as_raw_lines() {
        let diff = unified(r#"{"a":1}"#, r#"{"a": 1}"#, false);
        assert!(
            diff.contains(r#"-{"a":1}"#) && diff.contains(r#"+{"a": 1}"#),
            "{diff}"
        );
    }

    #[test]
    fn control_sequences_in_the_compared_text_are_escaped() {
        let diff = unified("a", "b\u{1b}[2Jc\u{202e}d", true);
        assert!(diff.contains("b\\u{001b}[2Jc\\u{202e}d"), "{diff}");
        assert!(
            !diff.contains("\u{1b}[2J") && !diff.contains('\u{202e}'),
            "{diff}"
        );
    }

    #[test]
    fn colour_is_only_added_when_asked() {
        assert!(!unified("a", "b", false).contains('\u{1b}'));
        assert!(unified("a", "b", true).contains('\u{1b}'));
    }
}
