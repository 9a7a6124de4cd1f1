//! The one error type of the command line: a usage, I/O or configuration problem (exit code 2).

use std::fmt;
use std::path::Path;

/// Something the user must fix before toolgate can decide anything. Displayed as one line per
/// problem, each naming the file (and line or pointer) it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    message: String,
}

impl UsageError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> UsageError {
        UsageError {
            message: message.into(),
        }
    }

    /// An I/O error about a path.
    pub fn io(path: &Path, action: &str, error: &std::io::Error) -> UsageError {
        UsageError::new(format!("{}: cannot {action}: {error}", path.display()))
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}

/// A file of the repository that cannot be used: its path refused or unreadable, or its content
/// wrong at a place (`file:line:column: message`). Displayed as one line naming the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileError {
    /// The path cannot be read: it escapes the root, is missing, is not a regular file, is too
    /// large, or the operating system refused.
    Unreadable(crate::RepoError),
    /// The file was read, and what it says is wrong.
    Invalid {
        /// The file, as the user knows it.
        file: std::path::PathBuf,
        /// The line and column, when the reader knows them.
        at: Option<(u64, u64)>,
        /// What is wrong, and what to do.
        message: String,
    },
}

impl FileError {
    /// The file, as the user knows it.
    pub fn file(&self) -> &Path {
        match self {
            FileError::Unreadable(error) => error.path(),
            FileError::Invalid { file, .. } => file,
        }
    }

    /// The line the problem is at, when known.
    pub fn line(&self) -> Option<u64> {
        match self {
            FileError::Invalid {
                at: Some((line, _)),
                ..
            } => Some(*line),
            _ => None,
        }
    }

    /// `message` about `file`, at `at` when known.
    pub fn invalid(file: &Path, at: Option<(u64, u64)>, message: impl Into<String>) -> FileError {
        FileError::Invalid {
            file: file.to_path_buf(),
            at,
            message: message.into(),
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Unreadable(error) => error.fmt(f),
            FileError::Invalid {
                file,
                at: Some((line, column)),
                message,
            } => write!(f, "{}:{line}:{column}: {message}", file.display()),
            FileError::Invalid {
                file,
                at: None,
                message,
            } => write!(f, "{}: {message}", file.display()),
        }
    }
}

impl std::error::Error for FileError {}

impl From<crate::RepoError> for FileError {
    fn from(error: crate::RepoError) -> FileError {
        FileError::Unreadable(error)
    }
}

impl From<FileError> for UsageError {
    fn from(error: FileError) -> UsageError {
        UsageError::new(error.to_string())
    }
}

/// Writes a command's output. A reader that stopped reading (`| head`) is not an error of ours.
pub fn write_output(out: &mut impl std::io::Write, bytes: &[u8]) -> Result<(), UsageError> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(UsageError::new(format!("cannot write the output: {error}")))
        }
        _ => Ok(()),
    }
}

impl From<crate::RepoError> for UsageError {
    fn from(error: crate::RepoError) -> UsageError {
        UsageError::new(error.to_string())
    }
}

/// Why the repository, its tools or a contract version could not be loaded, one variant per
/// thing that can be wrong: kept apart so that a report can place each compile error at its file
/// and line (`--format github` annotates it there) instead of flattening them to text, and a
/// caller can tell a missing tool from a broken contract. The words are the ones a verb prints
/// (it reports a `LoadError` as a [`UsageError`], exit code 2).
#[derive(Debug)]
pub enum LoadError {
    /// A path the repository's confinement refused, or could not read.
    Repo(crate::RepoError),
    /// Several files of one version folder could not be read (each refused or unreadable).
    Unreadable(Vec<crate::RepoError>),
    /// No folder for the tool under `contracts/`.
    NoTool {
        /// The folder looked for, as shown.
        dir: std::path::PathBuf,
        /// The tool asked for.
        tool: String,
        /// The tools there are.
        known: Vec<String>,
    },
    /// Something in a tool's folder that is not a version folder (nor `lint.yaml`,
    /// `upstream.pin.json`).
    NotAVersionFolder(std::path::PathBuf),
    /// A tool's folder with no version folder at all.
    NoVersion(std::path::PathBuf),
    /// A version asked for by a name that is not one (`--contract-version 2`).
    BadVersionName(String),
    /// A version asked for that the tool has not published.
    NoSuchVersion {
        /// The tool's folder, as shown.
        dir: std::path::PathBuf,
        /// The tool.
        tool: String,
        /// The version asked for.
        name: String,
        /// The versions there are.
        published: Vec<String>,
    },
    /// No `contracts/` folder where the repository was opened.
    NoContracts(std::path::PathBuf),
    /// Two tool folders whose names differ only in case (a case-insensitive file system holds
    /// one of them).
    CaseTwins {
        /// `contracts/`, as shown.
        dir: std::path::PathBuf,
        /// The folder found first.
        first: String,
        /// The folder that differs from it only in case.
        second: String,
    },
    /// A tool named on the command line that has no contract.
    UnknownTool {
        /// The tool asked for.
        tool: String,
        /// The tools there are.
        known: Vec<String>,
    },
    /// The contract does not compile: every error, each with its file and line or pointer.
    Compile(toolgate_gate::CompileErrors),
    /// A contracts bundle that cannot be read, or does not hold what it claims.
    Bundle(String),
    /// The contract compiles but names another tool or version than the folder it lives in.
    Mismatch {
        /// The contract file, as shown.
        file: std::path::PathBuf,
        /// What it says, and where it lives.
        what: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Repo(error) => error.fmt(f),
            LoadError::Unreadable(errors) => {
                let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
                f.write_str(&lines.join("\n"))
            }
            LoadError::NoTool { dir, tool, known } => write!(
                f,
                "{}: no contract for tool `{tool}` ({})",
                dir.display(),
                nearest_tools(tool, known)
            ),
            LoadError::NotAVersionFolder(path) => write!(
                f,
                "{}: not a contract version folder; a tool's folder holds only v1, v2, ... (a breaking change is a new version folder), lint.yaml and upstream.pin.json",
                path.display()
            ),
            LoadError::NoVersion(dir) => write!(
                f,
                "{}: the tool has no version folder (v1, v2, ...)",
                dir.display()
            ),
            LoadError::BadVersionName(name) => write!(
                f,
                "--contract-version {name:?}: write a version folder name such as v1"
            ),
            LoadError::NoSuchVersion {
                dir,
                tool,
                name,
                published,
            } => write!(
                f,
                "{}: tool `{tool}` has no contract version {name} (published: {})",
                dir.display(),
                published.join(", ")
            ),
            LoadError::NoContracts(shown) => write!(
                f,
                "{}: no contracts folder here (expected contracts/<tool>/v<N>/contract.yaml); pass --root with the repository's folder",
                shown.display()
            ),
            LoadError::CaseTwins { dir, first, second } => write!(
                f,
                "{}: tool folders `{first}` and `{second}` differ only in case, which a case-insensitive file system cannot hold apart; rename one",
                dir.display()
            ),
            LoadError::UnknownTool { tool, known } => write!(
                f,
                "no contract for tool `{tool}` ({})",
                nearest_tools(tool, known)
            ),
            LoadError::Compile(errors) => errors.fmt(f),
            LoadError::Bundle(why) => f.write_str(why),
            LoadError::Mismatch { file, what } => write!(f, "{}: {what}", file.display()),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<crate::RepoError> for LoadError {
    fn from(error: crate::RepoError) -> LoadError {
        LoadError::Repo(error)
    }
}

impl From<toolgate_gate::CompileErrors> for LoadError {
    fn from(errors: toolgate_gate::CompileErrors) -> LoadError {
        LoadError::Compile(errors)
    }
}

impl From<LoadError> for UsageError {
    fn from(error: LoadError) -> UsageError {
        UsageError::new(error.to_string())
    }
}

impl From<toolgate_gate::CompileErrors> for UsageError {
    fn from(errors: toolgate_gate::CompileErrors) -> UsageError {
        UsageError::new(errors.to_string())
    }
}

/// `1 tool`, `2 tools`: a count and its noun, for report headlines.
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// How many known tools an unknown name's message lists: a repository may hold thousands.
const TOOLS_LISTED: usize = 8;

/// `did you mean `droplets_get`? known tools: droplets_get, droplets_list, …`: the known tools
/// nearest to a mistyped `name` first (by Jaro-Winkler similarity, as clap suggests
/// subcommands), the best one offered when it is close, at most [`TOOLS_LISTED`] of them.
pub(crate) fn nearest_tools(name: &str, known: &[String]) -> String {
    if known.is_empty() {
        return "known tools: none".to_owned();
    }
    let mut ranked: Vec<(f64, &String)> = known
        .iter()
        .map(|tool| (strsim::jaro_winkler(name, tool), tool))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let listed: Vec<&str> = ranked
        .iter()
        .take(TOOLS_LISTED)
        .map(|(_, tool)| tool.as_str())
        .collect();
    let more = match known.len().saturating_sub(TOOLS_LISTED) {
        0 => String::new(),
        rest => format!(" and {rest} more"),
    };
    let suggestion = match ranked.first() {
        Some((score, tool)) if *score >= 0.8 => format!("did you mean `{tool}`? "),
        _ => String::new(),
    };
    format!("{suggestion}known tools: {}{more}", listed.join(", "))
}

#[cfg(test)]
mod nearest_tests {
    use super::nearest_tools;

    fn tools(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_typo_gets_the_nearest_name_first() {
        let known = tools(&[
            "account_get",
            "actions_list",
            "apps_list",
            "billing_get",
            "cdn_purge",
            "databases_list",
            "domains_list",
            "droplets_get",
            "droplets_list",
            "firewalls_list",
            "images_list",
        ]);
        let said = nearest_tools("droplet_get", &known);
        assert!(
            said.starts_with(
                "did you mean `droplets_get`? known tools: droplets_get, droplets_list, "
            ),
            "{said}"
        );
        assert!(said.ends_with(" and 3 more"), "{said}");
        // Nothing close: no suggestion, the nearest listed all the same.
        let said = nearest_tools("zzz", &tools(&["job_status", "review_status"]));
        assert!(said.starts_with("known tools: "), "{said}");
        assert_eq!(nearest_tools("x", &[]), "known tools: none");
    }
}
