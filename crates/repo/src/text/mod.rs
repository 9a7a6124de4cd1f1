//! Text for people: coloured unified diffs, and markdown that text from the repository cannot
//! break out of.

pub mod diff;
pub mod markdown;

use std::borrow::Cow;

use anstyle::{AnsiColor, Style};

/// What a word in a terminal report is: the reports of every verb colour the same things alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A heading or a name to find.
    Strong,
    /// Something that fails the run.
    Bad,
    /// Something that passed, or was accepted with a reason.
    Good,
    /// Something to look at that does not fail the run.
    Warn,
}

/// `text` in `tone`'s colour when `color`, as it is otherwise. Callers decide `color` once, from
/// the terminal and `NO_COLOR` (the binary does), and never colour what goes to a file.
pub fn paint(color: bool, tone: Tone, text: &str) -> String {
    if !color {
        return text.to_owned();
    }
    let style = match tone {
        Tone::Strong => Style::new().bold(),
        Tone::Bad => Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
        Tone::Good => Style::new().fg_color(Some(AnsiColor::Green.into())).bold(),
        Tone::Warn => Style::new().fg_color(Some(AnsiColor::Yellow.into())).bold(),
    };
    format!("{style}{text}{style:#}")
}

/// `pointer` with every array index as `*` (`/accounts/2/balance` → `/accounts/*/balance`): the
/// place of a list member whichever item, as `tolerate:` and `survivors.yaml` name it.
pub fn every_item(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|token| {
            if !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit()) {
                "*"
            } else {
                token
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A JSON pointer as reports, messages and acceptance files print it: the empty pointer (the
/// whole document) as `""` with those words, so nobody copies a `/` (which points at a member
/// named "") into an acceptance file.
pub fn pointer(pointer: &str) -> Cow<'_, str> {
    if pointer.is_empty() {
        Cow::Borrowed("\"\" (the whole document)")
    } else {
        Cow::Borrowed(pointer)
    }
}
