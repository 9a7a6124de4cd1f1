//! Markdown as a pull request shows it: a report rendered with a CommonMark/GFM parser
//! (pulldown-cmark, with GitHub's tables), so tests assert what a reviewer reads, not the source.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A name a pull request could write: a link, a mention, emphasis, an escaped link, HTML, a CI
/// command and a code span.
pub(crate) const HOSTILE: &str =
    r"[t](https://e.x) @octocat _i_ \[y\](z) <b>b</b> ##[add-mask]s `q`";

/// What a rendered markdown document shows.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// Every text a reader sees, code spans included, as one string (with spaces between blocks);
    /// the raw HTML lines' text too, tags removed and entities decoded.
    pub(crate) text: String,
    /// The same, without code spans and code blocks: where markdown escapes apply.
    pub(crate) prose: String,
    /// The text of every fenced code block.
    pub(crate) blocks: Vec<String>,
    /// The content of every inline code span (and `<code>` element).
    pub(crate) code: Vec<String>,
    /// Links, images and autolinks: a report made of repository text must have none.
    pub(crate) links: Vec<String>,
    /// Raw HTML tags, as written (`<details>`, `</summary>`, …).
    pub(crate) tags: Vec<String>,
}

/// Renders `markdown` as GitHub would read it.
pub(crate) fn render(markdown: &str) -> Rendered {
    let mut rendered = Rendered::default();
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_GFM;
    let mut in_block = false;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                in_block = true;
                rendered.blocks.push(String::new());
            }
            Event::End(TagEnd::CodeBlock) => in_block = false,
            Event::Text(text) if in_block => {
                rendered.text.push_str(&text);
                if let Some(block) = rendered.blocks.last_mut() {
                    block.push_str(&text);
                }
            }
            Event::Text(text) => {
                rendered.text.push_str(&text);
                rendered.prose.push_str(&text);
            }
            Event::Code(code) => {
                rendered.text.push_str(&code);
                rendered.code.push(code.into_string());
            }
            Event::Html(html) | Event::InlineHtml(html) => rendered.read_html(&html),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                rendered.links.push(dest_url.into_string());
            }
            Event::SoftBreak
            | Event::HardBreak
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::TableCell
                | TagEnd::HtmlBlock,
            ) => {
                rendered.text.push(' ');
                rendered.prose.push(' ');
            }
            _ => {}
        }
    }
    rendered
}

impl Rendered {
    /// Raw HTML: tags are kept apart, their text decoded (the entities our escaper writes) and
    /// `<code>` contents recorded as code.
    fn read_html(&mut self, html: &str) {
        let mut rest = html;
        let mut in_code = false;
        while !rest.is_empty() {
            if let Some(tag_end) = rest.strip_prefix('<').and_then(|_| rest.find('>')) {
                let tag = &rest[..=tag_end];
                in_code = match tag {
                    "<code>" => true,
                    "</code>" => false,
                    _ => in_code,
                };
                self.tags.push(tag.to_owned());
                rest = &rest[tag_end + 1..];
                continue;
            }
            let end = rest.find('<').unwrap_or(rest.len());
            let text = decode(&rest[..end]);
            if in_code {
                self.code.push(text.clone());
            } else {
                self.prose.push_str(&text);
            }
            self.text.push_str(&text);
            rest = &rest[end..];
        }
    }

    /// Whether every `<details>` and `<summary>` is closed, in order.
    pub(crate) fn balanced(&self) -> bool {
        let mut open = Vec::new();
        for tag in &self.tags {
            match tag.as_str() {
                "<details>" | "<summary>" | "<code>" => open.push(tag.trim_start_matches('<')),
                "</details>" | "</summary>" | "</code>"
                    if open.pop() != Some(tag.trim_start_matches("</")) =>
                {
                    return false;
                }
                _ => {}
            }
        }
        open.is_empty()
    }
}

fn decode(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// `text` as a reader sees it once the zero-width spaces that break mentions are ignored.
pub(crate) fn visible(text: &str) -> String {
    text.replace('\u{200b}', "")
}

/// Whether `text` would notify someone on GitHub: an `@name` not broken by a zero-width space.
pub(crate) fn mentions(text: &str) -> bool {
    text.char_indices().any(|(at, ch)| {
        ch == '@'
            && !text[..at].ends_with(char::is_alphanumeric)
            && text[at + 1..].starts_with(|next: char| next.is_ascii_alphanumeric())
    })
}
