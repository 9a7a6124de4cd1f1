//! The user guide (`doc/guide/`) and the README cannot rot: every `console` example is run and
//! its output compared, every other `toolgate` command shown must parse, every internal link and
//! anchor resolves, every page is in the table of contents, and the generated command-line
//! reference matches the command line.
//!
//! A `console` block is a shell session: `$ ` starts a command (a trailing `\` continues it), the
//! lines up to the next command are what it prints: its stdout, then its stderr.
//! In the expected output, a line `...` (or `…`) stands for any number of lines and `[..]` for
//! any text within a line. A page's blocks run in order in one folder: a private copy of the bundled
//! repository (contracts, fixtures, snapshots), or an empty folder where the page says
//! `<!-- guide-test: empty folder -->`. A block right after `<!-- guide-test: not run: WHY -->`
//! is only parsed (it needs something a test does not have: a production store, a server). A
//! block right after `<!-- guide-test: given NAME = PATH -->` runs with the repository's file
//! PATH copied into its folder as NAME first (a user's own file, such as a published API
//! description, that the page does not write out).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};

use crate::common::{repo_root, run, tree};

const EMPTY_FOLDER: &str = "<!-- guide-test: empty folder -->";
const NOT_RUN: &str = "<!-- guide-test: not run";
const GIVEN: &str = "<!-- guide-test: given ";

/// Every page of the guide, and the README, as (path relative to the repository, text).
fn pages() -> Vec<(PathBuf, String)> {
    let root = repo_root();
    let mut out = vec![(
        PathBuf::from("README.md"),
        fs::read_to_string(root.join("README.md")).unwrap(),
    )];
    let mut pending = vec![root.join("doc/guide/src")];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "md") {
                let text = fs::read_to_string(&path).unwrap();
                out.push((path.strip_prefix(&root).unwrap().to_path_buf(), text));
            }
        }
    }
    out.sort();
    out
}

/// A fenced code block: its info string, its text, whether the page marks it not run, the
/// files it is given (name in its folder, path in the repository), and the line it starts on.
struct Block {
    info: String,
    text: String,
    not_run: bool,
    given: Vec<(String, String)>,
    line: usize,
}

/// `NAME = PATH` of a `given` directive.
fn given(html: &str) -> Option<(String, String)> {
    let rest = html.trim().strip_prefix(GIVEN)?.strip_suffix("-->")?;
    let (name, path) = rest.split_once(" = ")?;
    Some((name.trim().to_owned(), path.trim().to_owned()))
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    let mut not_run = false;
    let mut files = Vec::new();
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Html(html) | Event::InlineHtml(html) if html.trim().starts_with(NOT_RUN) => {
                not_run = true;
            }
            Event::Html(html) | Event::InlineHtml(html) if html.trim().starts_with(GIVEN) => {
                files.push(given(&html).unwrap_or_else(|| {
                    panic!("`{}`: write it `{GIVEN}NAME = PATH -->`", html.trim())
                }));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                current = Some(Block {
                    info,
                    text: String::new(),
                    not_run,
                    given: std::mem::take(&mut files),
                    line: text[..range.start].lines().count() + 1,
                });
                not_run = false;
            }
            Event::Text(content) => {
                if let Some(block) = &mut current {
                    block.text.push_str(&content);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

/// A console block's commands, each with the lines it is shown printing.
fn session(block: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut continued = false;
    for line in block.lines() {
        if continued {
            let (command, _) = out.last_mut().unwrap();
            command.push('\n');
            command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            out.push((command.to_owned(), Vec::new()));
            continued = command.ends_with('\\');
        } else if let Some((_, output)) = out.last_mut() {
            output.push(line.to_owned());
        }
    }
    out
}

/// Whether `actual` is what `expected` shows (`...` lines, `[..]` within a line).
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if matches!(first.trim(), "..." | "…") => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, others)| line_matches(first, line) && matches(rest, others)),
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let mut parts = expected.split("[..]");
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (index, part) in parts.iter().enumerate() {
        if index + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Runs a page's console blocks in order, in one folder, through one shell per block; the
/// built `toolgate` is first on PATH.
#[test]
fn every_console_example_runs_as_shown() {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_toolgate"));
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for (page, text) in pages() {
        let runnable: Vec<Block> = blocks(&text)
            .into_iter()
            .filter(|block| block.info == "console" && !block.not_run)
            .collect();
        if runnable.is_empty() {
            continue;
        }
        let folder = if text.contains(EMPTY_FOLDER) {
            tempfile::tempdir().unwrap()
        } else {
            tree()
        };
        // The page's blocks share the folder (and the folder a `cd` moved to).
        let mut cwd = folder.path().to_path_buf();
        let scratch = tempfile::tempdir().unwrap();
        let stderr_file = scratch.path().join("stderr");
        for block in runnable {
            for (name, path) in &block.given {
                fs::copy(repo_root().join(path), cwd.join(name))
                    .unwrap_or_else(|error| panic!("{}: given {path}: {error}", page.display()));
            }
            let commands = session(&block.text);
            const MARK: &str = "@@guide-test@@";
            let mut script = String::from("set +e\n");
            for (command, _) in &commands {
                // What the command writes to stdout, then what it writes to stderr, as a
                // terminal shows a tool that writes its answer before its explanation (a pipe
                // merging both would show stderr first: stdout is flushed at exit).
                script.push_str(&format!(
                    "{{ {command}\n}} 2>'{stderr}'\n__status=$?\ncat '{stderr}'\nprintf '\\n{MARK}\\n'\n(exit $__status)\n",
                    stderr = stderr_file.display()
                ));
            }
            script.push_str(&format!("pwd > '{}/cwd'\n", scratch.path().display()));
            let mut shell = Command::new("sh");
            shell
                .arg("-c")
                .arg(&script)
                .current_dir(&cwd)
                .env("PATH", &path)
                .env_remove("CI")
                .env("NO_COLOR", "1");
            let outcome = run(shell, b"");
            let outputs: Vec<&str> = outcome.stdout.split(&format!("\n{MARK}\n")).collect();
            for (index, (command, expected)) in commands.iter().enumerate() {
                // Trailing blank lines are not part of what a page shows.
                let mut actual: Vec<&str> = outputs
                    .get(index)
                    .map(|output| output.lines().collect())
                    .unwrap_or_default();
                while actual.last().is_some_and(|line| line.is_empty()) {
                    actual.pop();
                }
                let mut expected = expected.clone();
                while expected.last().is_some_and(|line| line.is_empty()) {
                    expected.pop();
                }
                assert!(
                    matches(&expected, &actual),
                    "{}:{}: `{command}` printed\n{}\nbut the guide shows\n{}\n(stderr of the session: {})",
                    page.display(),
                    block.line,
                    actual.join("\n"),
                    expected.join("\n"),
                    outcome.stderr
                );
                ran += 1;
            }
            cwd = PathBuf::from(
                fs::read_to_string(scratch.path().join("cwd"))
                    .unwrap()
                    .trim_end(),
            );
        }
    }
    assert!(ran >= 10, "only {ran} commands ran: is the guide there?");
}

/// Each `toolgate …` command in a shell or console block (a pipeline's parts, `&&` lists), as
/// its arguments; placeholders in angle brackets left as they are.
fn toolgate_commands(block: &str, console: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut logical = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let line = if console {
            match line.strip_prefix("$ ") {
                Some(command) => command,
                None if !pending.is_empty() => line,
                None => continue,
            }
        } else {
            line
        };
        let line = line.split(" #").next().unwrap_or_default();
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        logical.push(std::mem::take(&mut pending));
    }
    for line in logical {
        for part in line.split(['|', ';']).flat_map(|part| part.split("&&")) {
            let mut words = shlex::split(part.trim()).unwrap_or_default();
            // A redirection ends the command's own arguments.
            if let Some(at) = words.iter().position(|word| {
                [">", ">>", "<", "2>&1"].contains(&word.as_str()) || word.starts_with("2>")
            }) {
                words.truncate(at);
            }
            let start = words
                .iter()
                .position(|word| !word.contains('=') || word.starts_with('-'));
            if let Some(start) = start
                && words[start] == "toolgate"
            {
                out.push(words[start + 1..].to_vec());
            }
        }
    }
    out
}

/// Every `toolgate` command the guide shows parses: clap reads it up to `--help` (so an unknown
/// flag or a value outside a flag's choices fails), without running it.
#[test]
fn every_toolgate_command_shown_parses() {
    let mut checked = 0;
    for (page, text) in pages() {
        for block in blocks(&text) {
            let console = block.info == "console";
            if !(console || block.info == "sh" || block.info == "bash") {
                continue;
            }
            for mut args in toolgate_commands(&block.text, console) {
                if args.is_empty() || args[0].starts_with('<') {
                    continue;
                }
                // Arguments after `--` are the upstream's command, not toolgate's.
                let at = args
                    .iter()
                    .position(|arg| arg == "--")
                    .unwrap_or(args.len());
                args.insert(at, "--help".to_owned());
                let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
                command.args(&args).env("NO_COLOR", "1");
                let outcome = run(command, b"");
                assert_eq!(
                    outcome.code,
                    0,
                    "{}:{}: `toolgate {}` does not parse:\n{}",
                    page.display(),
                    block.line,
                    args.join(" "),
                    outcome.stderr
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "only {checked} commands checked");
}

/// mdBook's id for a heading: lower case, spaces to `-`, only letters, digits, `-` and `_` kept;
/// a repeated id gets `-1`, `-2`, ….
fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut heading: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(content) | Event::Code(content) => {
                if let Some(heading) = &mut heading {
                    heading.push_str(&content);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let title = heading.take().unwrap_or_default();
                let base: String = title
                    .trim()
                    .chars()
                    .filter_map(|character| {
                        if character.is_alphanumeric() || character == '_' || character == '-' {
                            Some(character.to_ascii_lowercase())
                        } else if character.is_whitespace() {
                            Some('-')
                        } else {
                            None
                        }
                    })
                    .collect();
                let count = counts.entry(base.clone()).or_default();
                let id = match *count {
                    0 => base.clone(),
                    n => format!("{base}-{n}"),
                };
                *count += 1;
                ids.insert(id);
            }
            _ => {}
        }
    }
    ids
}

/// Every link that is not to another site resolves: to a file of the repository (from the
/// README) or a page of the guide (from the guide), and to a heading of it when it names one.
#[test]
fn every_internal_link_and_anchor_resolves() {
    let root = repo_root();
    let pages = pages();
    let ids: BTreeMap<PathBuf, BTreeSet<String>> = pages
        .iter()
        .map(|(page, text)| (page.clone(), heading_ids(text)))
        .collect();
    let mut checked = 0;
    for (page, text) in &pages {
        for event in Parser::new(text) {
            let Event::Start(Tag::Link { dest_url, .. }) = event else {
                continue;
            };
            let url = dest_url.to_string();
            if url.contains("://") || url.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match url.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (url.as_str(), None),
            };
            let target = if file.is_empty() {
                page.clone()
            } else {
                normalize(&page.parent().unwrap().join(file))
            };
            let in_guide = page.starts_with("doc/guide/src");
            assert!(
                !in_guide || target.starts_with("doc/guide/src"),
                "{}: `{url}` leaves the guide (the built book would not have it): link to the repository on GitHub instead",
                page.display()
            );
            assert!(
                root.join(&target).exists(),
                "{}: `{url}` names {}, which does not exist",
                page.display(),
                target.display()
            );
            if let Some(anchor) = anchor {
                let known = ids.get(&target);
                assert!(
                    known.is_some_and(|known| known.contains(anchor)),
                    "{}: `{url}`: {} has no heading `#{anchor}` (it has: {:?})",
                    page.display(),
                    target.display(),
                    known
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} links checked");
}

/// `a/b/../c` as `a/c`, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every page is in SUMMARY.md (mdBook leaves an unlisted page out of the book), and the book
/// has the chapters a newcomer needs.
#[test]
fn every_page_is_in_the_table_of_contents() {
    let summary = fs::read_to_string(repo_root().join("doc/guide/src/SUMMARY.md")).unwrap();
    let mut listed = BTreeSet::new();
    for event in Parser::new(&summary) {
        if let Event::Start(Tag::Link { dest_url, .. }) = event {
            listed.insert(PathBuf::from("doc/guide/src").join(dest_url.as_ref()));
        }
    }
    for (page, _) in pages() {
        if page == Path::new("README.md") || page.ends_with("SUMMARY.md") {
            continue;
        }
        assert!(
            listed.contains(&page),
            "{} is not in doc/guide/src/SUMMARY.md",
            page.display()
        );
    }
    let headings: Vec<HeadingLevel> = Parser::new(&summary)
        .filter_map(|event| match event {
            Event::Start(Tag::Heading { level, .. }) => Some(level),
            _ => None,
        })
        .collect();
    assert!(headings.len() >= 3, "{summary}");
}

#[test]
fn the_committed_command_line_reference_is_current() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cli.md");
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.arg("generate-cli-reference").arg(&file);
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let committed = fs::read_to_string(repo_root().join("doc/guide/src/reference/cli.md")).unwrap();
    assert!(
        fs::read_to_string(&file).unwrap() == committed,
        "doc/guide/src/reference/cli.md is out of date: regenerate with `cargo run -- generate-cli-reference doc/guide/src/reference/cli.md`"
    );
    for verb in ["check", "test", "diff", "mcp-proxy", "new", "reproduce"] {
        assert!(
            committed.contains(&format!("## `toolgate {verb}`")),
            "{verb}"
        );
    }
}

#[test]
fn the_readme_stays_a_doorway() {
    let readme = fs::read_to_string(repo_root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines < 300,
        "README.md has {lines} lines: move reference into doc/guide/"
    );
    assert!(readme.contains("cargo run --release -- test"));
    assert!(readme.contains("cargo test"));
}

#[test]
fn the_expected_output_syntax_matches_as_documented() {
    let lines = |text: &str| -> Vec<String> { text.lines().map(str::to_owned).collect() };
    assert!(matches(&lines("a\n...\nd"), &["a", "b", "c", "d"]));
    assert!(matches(&lines("a\n..."), &["a"]));
    assert!(matches(&lines("a\n  …\nd"), &["a", "  b", "d"]));
    assert!(!matches(&lines("a\nd"), &["a", "b", "d"]));
    assert!(line_matches("sha256 [..] (x)", "sha256 12ab (x)"));
    assert!(!line_matches("sha256 [..] (x)", "sha256 12ab (y)"));
    assert!(!line_matches("abc", "abcd"));
}
