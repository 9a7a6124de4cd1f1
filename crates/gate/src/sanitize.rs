//! Escaping and capping attacker-influenced text before it is stored for an operator.
//!
//! Validator messages quote the offending value and instance paths carry member names the upstream
//! chose, so every such string is escaped (no terminal control sequences, no bidi tricks) and
//! length-capped on its way into a fault, a finding or an operator record. Operator records and
//! the harness's reports end up in CI logs, so what a CI runner would read as a command is
//! neutralized too.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;

/// Longest validator message kept, in characters.
pub(crate) const MESSAGE_CAP: usize = 400;
/// Longest instance path or keyword location kept, in characters.
pub(crate) const PATH_CAP: usize = 200;
/// Most additional findings kept per record.
pub(crate) const FINDINGS_CAP: usize = 12;

/// Escapes every character a terminal or a reader would not show as itself (see [`is_hidden`])
/// as `\u{..}` and caps the result at `cap` characters, saying how much was cut. Quotes and
/// backslashes are kept as they are: the result is for display, and JSON serialization escapes
/// it again. A CI command in it is neutralized (see [`neutralize_commands`]).
pub(crate) fn sanitize(text: &str, cap: usize) -> String {
    let mut out = capped(text, cap);
    neutralize_commands(&mut out);
    out
}

fn capped(text: &str, cap: usize) -> String {
    let mut out = String::with_capacity(text.len().min(cap + 16));
    // Printable ASCII is shown as itself: the leading run of it (most messages are nothing else)
    // is copied in one go; one byte is one character there, so it counts against the cap as such.
    let plain = text
        .bytes()
        .take(cap)
        .take_while(|byte| (b' '..=b'~').contains(byte))
        .count();
    out.push_str(&text[..plain]);
    for (written, (offset, ch)) in text[plain..].char_indices().enumerate() {
        if plain + written >= cap {
            let _ = write!(out, "… ({} more bytes)", text.len() - plain - offset);
            return out;
        }
        push_shown(&mut out, ch);
    }
    out
}

/// The operator record's escaping without its cap: for a harness printing names and values from
/// a repository it does not trust (file names, sidecar values, raw bytes in a diff) to a terminal
/// or a CI log.
pub fn escape_hidden(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) && !reads_as_command(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for ch in text.chars() {
        push_shown(&mut out, ch);
    }
    neutralize_commands(&mut out);
    Cow::Owned(out)
}

/// [`escape_hidden`] for text that is not printed line by line to a log (a markdown comment
/// breaks CI commands its own way): every hidden character as `\u{..}`, nothing else changed.
pub fn escape_invisible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for ch in text.chars() {
        push_shown(&mut out, ch);
    }
    Cow::Owned(out)
}

/// Whether a CI runner could read `text`, printed as (the start of) a line, as a command:
/// GitHub Actions' legacy `##[command]` form anywhere in the line, or a `::command::` workflow
/// command at its start (after blanks). The runner would act on it: add an annotation, mask a
/// value, end a log group, stop reading commands.
fn reads_as_command(text: &str) -> bool {
    text.contains("##[") || text.trim_start().starts_with("::")
}

/// Rewrites the character that would begin a CI command as its `\u{..}` escape: `##[` becomes
/// `\u{23}#[`, and a leading `::` becomes `\u{3a}:`. A reader still sees what was there.
fn neutralize_commands(out: &mut String) {
    if !reads_as_command(out) {
        return;
    }
    *out = out.replace("##[", "\\u{23}#[");
    let blanks = out.len() - out.trim_start().len();
    if out[blanks..].starts_with("::") {
        out.replace_range(blanks..blanks + 1, "\\u{3a}");
    }
}

fn push_shown(out: &mut String, ch: char) {
    if is_hidden(ch) {
        let _ = write!(out, "\\u{{{:04x}}}", ch as u32);
    } else {
        out.push(ch);
    }
}

/// Whether `ch` would not be shown as itself: a control character (Cc: C0, C1, ESC, DEL), a
/// format character (Cf: bidi embeddings and isolates, zero-width and soft hyphen, tags), a line
/// or paragraph separator (Zl, Zp), a bidi control, anything Unicode marks default-ignorable
/// (combining grapheme joiner, Hangul fillers, variation selectors), or an unassigned code point.
/// By property, from the `regex` crate's Unicode tables, rather than a list that ages.
pub fn is_hidden(ch: char) -> bool {
    static HIDDEN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cn}\p{Bidi_Control}\p{Default_Ignorable_Code_Point}]$",
        )
        .expect("a valid character class")
    });
    // Printable ASCII is never hidden; everything else asks the Unicode tables.
    !matches!(ch, ' '..='~') && HIDDEN.is_match(ch.encode_utf8(&mut [0; 4]))
}

/// Every hidden character of serialized JSON as a `\u` escape. Outside strings JSON text is
/// ASCII, and serde_json escapes the ASCII controls inside them, so what is left hidden can only
/// be inside a string, where the escape means the same character.
pub fn escape_json_hidden(text: &str) -> String {
    if !text.chars().any(|ch| !ch.is_ascii() && is_hidden(ch)) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for ch in text.chars() {
        if !ch.is_ascii() && is_hidden(ch) {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(ch);
        }
    }
    out
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
    fn everything_invisible_is_escaped_by_unicode_property() {
        let hidden = [
            '\u{0}',
            '\u{1b}',
            '\u{7f}',
            '\u{85}',
            '\u{9b}', // C0, ESC, DEL, C1 (NEL, CSI)
            '\u{ad}',
            '\u{34f}',
            '\u{61c}',
            '\u{115f}',
            '\u{1160}',
            '\u{180e}',
            '\u{200b}',
            '\u{200e}',
            '\u{2028}',
            '\u{2029}',
            '\u{202e}',
            '\u{2060}',
            '\u{2064}',
            '\u{2065}',
            '\u{2066}',
            '\u{206f}',
            '\u{3164}',
            '\u{fe0f}',
            '\u{feff}',
            '\u{ffa0}',
            '\u{fff9}',
            '\u{fffb}',
            '\u{e0000}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{e007f}',
            '\u{e0100}',
        ];
        for ch in hidden {
            let shown = sanitize(&format!("a{ch}b"), 100);
            assert_eq!(
                shown,
                format!("a\\u{{{:04x}}}b", ch as u32),
                "U+{:04X}",
                ch as u32
            );
            assert_eq!(escape_hidden(&format!("a{ch}b")), shown);
        }
        for visible in [
            "plain",
            "Solicitação",
            "日本語",
            "emoji 🚀",
            "a\"b\\c",
            "x~y",
        ] {
            assert_eq!(sanitize(visible, 100), visible);
            assert!(matches!(escape_hidden(visible), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn long_text_is_capped_and_says_how_much_was_cut() {
        let long = "x".repeat(1000);
        let capped = sanitize(&long, 10);
        assert_eq!(capped, format!("{}… (990 more bytes)", "x".repeat(10)));
        // The cap counts characters, across the plain ASCII start and whatever follows it.
        assert_eq!(sanitize("abcé日本x", 5), "abcé日… (4 more bytes)");
        assert_eq!(sanitize("ab\u{1b}cd", 3), "ab\\u{001b}… (2 more bytes)");
        assert_eq!(sanitize("abc", 3), "abc");
        assert_eq!(sanitize("abcd", 3), "abc… (1 more bytes)");
    }

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(
            sanitize("plain \"quoted\" text", 100),
            "plain \"quoted\" text"
        );
    }

    #[test]
    fn what_a_ci_runner_reads_as_a_command_is_neutralized() {
        for (text, shown) in [
            ("##[add-mask]secret", "\\u{23}#[add-mask]secret"),
            (
                "name ##[error]forged ##[group]",
                "name \\u{23}#[error]forged \\u{23}#[group]",
            ),
            ("::error file=x::forged", "\\u{3a}:error file=x::forged"),
            ("  ::stop-commands::t", "  \\u{3a}:stop-commands::t"),
        ] {
            assert_eq!(escape_hidden(text), shown);
            assert_eq!(sanitize(text, 400), shown);
        }
        // Only at a line's start is `::` a command; `#` alone and `[` alone are text.
        for plain in ["job_status::near-miss::x", "#[derive] ## [x]", "a :: b"] {
            assert!(matches!(escape_hidden(plain), Cow::Borrowed(_)), "{plain}");
        }
    }
}
