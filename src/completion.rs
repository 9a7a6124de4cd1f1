//! Shell completion that asks the binary: `toolgate completions SHELL` prints a few lines of
//! shell code that call `toolgate` back (with `TOOLGATE_COMPLETE=SHELL`) at each Tab, so verbs,
//! options and values complete as clap knows them, and a tool's name completes from the
//! `contracts/` folder of the repository the shell is in.

use std::ffi::OsStr;
use std::fs;

use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use clap_complete::env::Shells;
use toolgate_repo::UsageError;

/// The variable the shell code sets when it asks for completions.
pub(crate) const VARIABLE: &str = "TOOLGATE_COMPLETE";

/// The most tool folders read for one completion: a Tab must stay instant in any repository.
const MOST_FOLDERS: usize = 10_000;

/// Completes a tool's name from `contracts/` in the current folder.
pub(crate) fn tool_names() -> ArgValueCompleter {
    ArgValueCompleter::new(complete_tool)
}

fn complete_tool(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir("contracts") else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .take(MOST_FOLDERS)
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        // Only names a tool can have: a hostile folder name is never offered to the shell.
        .filter(|name| toolgate_gate::internals::is_tool_name(name) && name.starts_with(prefix))
        .collect();
    names.sort();
    names.into_iter().map(CompletionCandidate::new).collect()
}

/// The shell code `toolgate completions SHELL` prints: source it at shell start (the user
/// guide's "Shell"), so it always matches the installed binary.
pub(crate) fn registration(shell: clap_complete::Shell) -> Result<Vec<u8>, UsageError> {
    let name = shell.to_string();
    let shells = Shells::builtins();
    let completer = shells.completer(&name).ok_or_else(|| {
        UsageError::new(format!(
            "toolgate completions {name}: this shell's completions are not available; bash, elvish, fish, powershell and zsh are"
        ))
    })?;
    let mut script = Vec::new();
    completer
        .write_registration(VARIABLE, "toolgate", "toolgate", "toolgate", &mut script)
        .map_err(|error| UsageError::new(format!("toolgate completions {name}: {error}")))?;
    Ok(script)
}
