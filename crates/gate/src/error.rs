//! Errors in a contract itself: reported when it is compiled, never at admission time.

use std::fmt;
use std::path::Path;

use serde_saphyr::Spanned;

/// The file name of a contract inside its version folder, which errors in it are reported against.
pub const CONTRACT_FILE: &str = "contract.yaml";

/// One problem in a contract: which file, where in it, what is wrong, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    file: String,
    line: Option<(u64, u64)>,
    pointer: Option<String>,
    message: String,
    hint: Option<String>,
}

impl CompileError {
    pub(crate) fn in_file(file: impl Into<String>, message: impl Into<String>) -> CompileError {
        CompileError {
            file: file.into(),
            line: None,
            pointer: None,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn at_line(mut self, line: u64, column: u64) -> CompileError {
        if line > 0 {
            self.line = Some((line, column));
        }
        self
    }

    pub(crate) fn pointer(mut self, pointer: &str) -> CompileError {
        self.pointer = Some(pointer.to_owned());
        self
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> CompileError {
        self.hint = Some(hint.into());
        self
    }

    /// Puts the file under the folder it was read from, so the message names a real path.
    pub(crate) fn under(mut self, folder: &Path) -> CompileError {
        self.file = folder.join(&self.file).display().to_string();
        self
    }

    /// The file, as a path when the contract was read from a folder.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// 1-based line and column, when known.
    pub fn line(&self) -> Option<(u64, u64)> {
        self.line
    }

    /// JSON pointer into a schema file, when the problem is in one.
    pub fn json_pointer(&self) -> Option<&str> {
        self.pointer.as_deref()
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// How to fix it, when there is something specific to say.
    pub fn fix(&self) -> Option<&str> {
        self.hint.as_deref()
    }
}

impl fmt::Display for CompileError {
    /// One line: `file:line:column: message (fix: ...)`, or `file at /pointer: ...` for schemas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some((line, column)) = self.line {
            write!(f, ":{line}:{column}")?;
        }
        if let Some(pointer) = &self.pointer {
            write!(f, " at {}", if pointer.is_empty() { "/" } else { pointer })?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (fix: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileError {}

/// Every problem found in one contract (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileErrors(pub(crate) Vec<CompileError>);

impl CompileErrors {
    /// The problems, in the order found.
    pub fn errors(&self) -> &[CompileError] {
        &self.0
    }

    pub(crate) fn under(self, folder: &Path) -> CompileErrors {
        CompileErrors(
            self.0
                .into_iter()
                .map(|error| error.under(folder))
                .collect(),
        )
    }
}

impl From<CompileError> for CompileErrors {
    fn from(error: CompileError) -> CompileErrors {
        CompileErrors(vec![error])
    }
}

impl fmt::Display for CompileErrors {
    /// One line per problem.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileErrors {}

/// A line-located error about a value written in `contract.yaml`.
pub(crate) fn error_at<T>(spanned: &Spanned<T>, message: impl Into<String>) -> CompileError {
    CompileError::in_file(CONTRACT_FILE, message)
        .at_line(spanned.referenced.line(), spanned.referenced.column())
}
