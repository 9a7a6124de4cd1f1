//! GitHub Actions workflow commands (`toolgate test --format github`): each failure becomes an
//! `::error` annotation on its fixture file, so the pull request shows it where the fixture is;
//! a check without a fixture is an annotation on the run. The last line is the result.

use std::fmt::Write as _;
use std::path::Path;

use toolgate_gate::internals::escape_hidden;

use super::{Summary, slowest_tools};

/// The workflow commands, then one plain result line.
pub(crate) fn render(summary: &Summary, root: &Path) -> String {
    let mut out = String::new();
    // Annotations name files relative to the checkout, where `--root` is.
    let in_checkout = |file: &Path| {
        let file = root.join(file);
        let file = file.strip_prefix(".").unwrap_or(&file).to_path_buf();
        // Escaped like every other printed name: a file named like a CI command is annotated at
        // no file rather than letting its name reach the log raw.
        format!("file={}", property(&escape_hidden(&file.to_string_lossy())))
    };
    for failure in &summary.failures {
        let title = format!("title={}", property(&failure.name));
        // A problem about a file of its own (a sidecar that does not parse, a misplaced file)
        // annotates that file, at its line.
        let located: Vec<_> = failure
            .problems
            .iter()
            .filter_map(|problem| Some((problem, problem.file.as_deref()?)))
            .collect();
        for (problem, file) in &located {
            let mut properties = vec![in_checkout(Path::new(file))];
            if let Some(line) = problem.line {
                properties.push(format!("line={line}"));
            }
            properties.push(title.clone());
            let message = escape_hidden(&problem.message);
            let text = match &problem.detail {
                Some(detail) => format!("{message}\n{detail}"),
                None => message.into_owned(),
            };
            let text = anstream::adapter::strip_str(&text).to_string();
            let _ = writeln!(out, "::error {}::{}", properties.join(","), data(&text));
        }
        if located.len() == failure.problems.len() && !located.is_empty() {
            continue;
        }
        // The rest: one annotation on the fixture (or the run), with the whole failure.
        let mut properties = vec![title];
        if let Some(fixture) = &failure.fixture {
            properties.insert(0, in_checkout(fixture));
        }
        let text = anstream::adapter::strip_str(&failure.failure_text()).to_string();
        let _ = writeln!(out, "::error {}::{}", properties.join(","), data(&text));
    }
    for unproven in &summary.unproven {
        let _ = writeln!(out, "::warning title=toolgate unproven::{}", data(unproven));
    }
    // A note to act on is an annotation; a routine one (mutants sampled) is a line of the log
    // and of the job summary's report, so it does not crowd out the annotations that matter.
    for note in &summary.notes {
        // A note names its case, and a case its fixture file: escaped like every printed name.
        let text = data(&escape_hidden(note));
        if summary.notices.contains(note) {
            let _ = writeln!(out, "::notice title=toolgate::{text}");
        } else {
            let _ = writeln!(out, "note: {text}");
        }
    }
    if let Some(slowest) = slowest_tools(summary) {
        let _ = writeln!(out, "{slowest}");
    }
    let _ = writeln!(
        out,
        "toolgate test: {}. {} of {} cases passed; {} of {} suite checks passed.",
        if summary.passed() {
            "ok"
        } else if summary.failures.is_empty() && !summary.unproven.is_empty() {
            "UNPROVEN"
        } else {
            "FAILED"
        },
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
