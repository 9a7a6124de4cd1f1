//! GitHub Actions workflow commands (`toolgate test --format github`): each failure becomes an
//! `::error` annotation on its fixture file, so the pull request shows it where the fixture is;
//! a check without a fixture is an annotation on the run. The last line is the result.

use std::fmt::Write as _;
use std::path::Path;

use super::Summary;

/// The workflow commands, then one plain result line.
pub(crate) fn render(summary: &Summary, root: &Path) -> String {
    let mut out = String::new();
    for failure in &summary.failures {
        let mut properties = vec![format!("title={}", property(&failure.name))];
        if let Some(fixture) = &failure.fixture {
            // Annotations name files relative to the checkout, where `--root` is.
            let file = root.join(fixture);
            let file = file.strip_prefix(".").unwrap_or(&file);
            properties.insert(0, format!("file={}", property(&file.to_string_lossy())));
        }
        // The title names the case; the message is the whole failure, its diff included.
        let text = anstream::adapter::strip_str(&failure.failure_text()).to_string();
        let _ = writeln!(out, "::error {}::{}", properties.join(","), data(&text));
    }
    for note in &summary.notes {
        let _ = writeln!(out, "::notice title=toolgate::{}", data(note));
    }
    let _ = writeln!(
        out,
        "toolgate test: {}. {} of {} cases passed; {} of {} suite checks passed.",
        if summary.passed() { "ok" } else { "FAILED" },
        summary.cases.1,
        summary.cases.0,
        summary.checks.1,
        summary.checks.0
    );
    out
}

/// A command's message, as GitHub's runner unescapes it.
fn data(text: &str) -> String {
    text.trim_end()
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value: the message escapes, and the separators `:` and `,`.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_escape_what_the_runner_would_read_as_syntax() {
        assert_eq!(data("50% of a\nb\r"), "50%25 of a%0Ab");
        assert_eq!(
            property("job_status::near-miss::x, y"),
            "job_status%3A%3Anear-miss%3A%3Ax%2C y"
        );
        // A fixture name cannot end the command or start another.
        assert!(!data("x\n::error::forged").contains('\n'));
    }
}
