//! Markdown that is safe to paste into a pull request: text from a repository nobody vetted is
//! escaped so it cannot open a link, a table cell, emphasis or HTML, and code blocks are fenced so
//! nothing inside them can close the fence.

use toolgate_gate::internals::escape_hidden;

/// Text for a markdown table cell or line: no markup, no HTML, no line breaks, nothing hidden.
pub fn md(text: &str) -> String {
    escape_hidden(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
        .replace('`', "&#96;")
        .replace('*', "\\*")
        .replace('_', "\\_")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace(['\n', '\r'], " ")
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
