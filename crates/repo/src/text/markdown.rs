//! Markdown that is safe to paste into a pull request, escaped for where each string goes.
//!
//! Text from a repository nobody vetted (file, tool and property names, sidecar values, schema
//! values quoted in a description) must show exactly as itself on GitHub, and must not open a
//! link, an image, emphasis, a table cell, a heading or HTML, nor mention a user or a team. Each
//! context has its own rules, and an escape that is right in one is visible garbage in another
//! (a `\_` shows as itself inside a code span and inside raw HTML), so there is one function per
//! context:
//!
//! - [`text`]: running markdown text (a paragraph, a list item, a table cell);
//! - [`code`] and [`code_in_table`]: an inline code span, for names and paths;
//! - [`html`]: text inside raw HTML (`<summary>`, `<code>` in a `<details>` line);
//! - [`fenced`]: a fenced block, for diffs and bytes.
//!
//! GitHub links `@user`, `@org/team` and `#123` in rendered text outside code, whatever escaping
//! the markdown had, so in text and HTML a zero-width space follows each `@` and `#` that would
//! start one: the reader sees the same characters, and nobody is notified. The same space breaks
//! GitHub Actions' `##[command]` wherever the comment's source is printed to a CI log.

use toolgate_gate::internals::{escape_hidden, escape_invisible};

/// Breaks a GitHub mention or reference after its `@` or `#`.
const ZERO_WIDTH_SPACE: char = '\u{200b}';

/// Running markdown text: every character that could begin markup backslash-escaped (so no link,
/// image, emphasis, code span, HTML, entity, autolink, math, heading, list or table cell can
/// start), mentions and references broken, line breaks as spaces, hidden characters shown as
/// `\u{..}`.
pub fn text(text: &str) -> String {
    let shown = single_line(text);
    let mut out = String::with_capacity(shown.len() * 2);
    let mut previous = ' ';
    for (index, ch) in shown.char_indices() {
        if escapes(&shown, index, ch) {
            out.push('\\');
        }
        out.push(ch);
        if starts_mention(previous, ch) {
            out.push(ZERO_WIDTH_SPACE);
        }
        previous = ch;
    }
    out
}

/// An inline code span that shows `text` exactly: a run of backticks longer than any inside it,
/// padded with a space where the text begins or ends with a backtick or a space (CommonMark strips
/// one such space on each side). Line breaks become spaces, as a span shows them.
pub fn code(text: &str) -> String {
    span(single_line(text))
}

/// [`code`] for a table cell: `|` escaped too, so the cell cannot end inside the span (GFM removes
/// that backslash before the span is read; anywhere else it would show).
pub fn code_in_table(text: &str) -> String {
    span(single_line(text).replace('|', "\\|"))
}

fn span(shown: String) -> String {
    // A code span keeps its text as written, so the markdown a CI log prints would hold GitHub's
    // legacy `##[command]`: a zero-width space breaks it without changing what a reader sees.
    let shown = shown.replace("##[", "#\u{200b}#[");
    let longest = shown.split(|ch| ch != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if shown.starts_with(['`', ' ']) || shown.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{shown}{pad}{fence}")
}

/// Text inside raw HTML: `&`, `<`, `>`, `"` and `'` as entities (markdown is not read there, so
/// there is nothing else to escape), mentions and references broken, line breaks as spaces.
pub fn html(text: &str) -> String {
    let shown = single_line(text);
    let mut out = String::with_capacity(shown.len() + 16);
    let mut previous = ' ';
    for ch in shown.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
        if starts_mention(previous, ch) {
            out.push(ZERO_WIDTH_SPACE);
        }
        previous = ch;
    }
    out
}

/// Text inside a fenced block: a fence longer than any run of backticks in it.
pub fn fenced(language: &str, text: &str) -> String {
    // Escaped line by line so the block keeps its line breaks while any
    // other control or invisible character stays visible.
    let body: Vec<_> = text.trim_end().split('\n').map(escape_hidden).collect();
    let body = body.join("\n");
    // A fence longer than any backtick run inside cannot be closed early.
    let longest = body.split(|ch| ch != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{language}\n{body}\n{fence}\n")
}

/// Whether `ch` at `index` of `text` must be backslash-escaped in running text. CommonMark lets
/// any ASCII punctuation be; escaping only what could begin markup keeps the source readable.
fn escapes(text: &str, index: usize, ch: char) -> bool {
    match ch {
        // Emphasis, code, links and images, HTML and entities, autolinks (`https:`, `a@b`),
        // GitHub's math, strikethrough, table cells, headings and references.
        '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '<' | '>' | '!' | '&' | ':' | '@'
        | '$' | '~' | '|' | '#' => true,
        // `www.` starts an autolink.
        '.' => text[..index].to_ascii_lowercase().ends_with("www"),
        // At the start, a list item, a thematic break or a setext underline.
        '-' | '+' | '=' => index == 0,
        _ => false,
    }
}

/// `text` on one line with nothing hidden: line breaks as spaces, the rest as `\u{..}`.
fn single_line(text: &str) -> String {
    escape_invisible(&text.replace("\r\n", " ").replace(['\n', '\r'], " ")).into_owned()
}

/// Whether `ch`, after `previous`, is an `@` or `#` GitHub could read as the start of a mention
/// or an issue reference (it follows no letter or digit, as an e-mail address's `@` does).
fn starts_mention(previous: char, ch: char) -> bool {
    matches!(ch, '@' | '#') && !previous.is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_context_escapes_by_its_own_rules() {
        assert_eq!(text("a_b [x](y)"), "a\\_b \\[x\\]\\(y\\)");
        assert_eq!(text("\\[t\\](u)"), "\\\\\\[t\\\\\\]\\(u\\)");
        assert_eq!(code("a_b"), "`a_b`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a|b"), "`a|b`");
        assert_eq!(code_in_table("a|b"), "`a\\|b`");
        assert_eq!(code("##[x]"), "`#\u{200b}#[x]`");
        assert_eq!(html("<b>&'\"_"), "&lt;b&gt;&amp;&#39;&quot;_");
        assert_eq!(text("line\nbreak"), "line break");
        assert_eq!(
            text("- see https://x.io or www.x.io, 1.5 $x$"),
            "\\- see https\\://x.io or www\\.x.io, 1.5 \\$x\\$"
        );
    }

    #[test]
    fn mentions_and_references_are_broken_but_addresses_are_not() {
        assert_eq!(text("@user"), "\\@\u{200b}user");
        assert_eq!(html("cc @org/team #12"), "cc @\u{200b}org/team #\u{200b}12");
        assert_eq!(html("ops@example.com"), "ops@example.com");
    }
}
