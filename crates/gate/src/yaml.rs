//! The repository's one YAML dialect: strict. Unknown keys (with `deny_unknown_fields`) and
//! duplicate keys are errors, only `true`/`false` are booleans, and every error says where.

/// Why a YAML document could not be read: what is wrong, and where, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// 1-based line and column.
    pub line: Option<(u64, u64)>,
    /// What is wrong, in one line.
    pub message: String,
}

impl std::fmt::Display for YamlError {
    /// `line:column: message`, ready to follow a file name and a colon.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some((line, column)) => write!(f, "{line}:{column}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Reads YAML as strictly as contracts are read: unknown keys (with `deny_unknown_fields`) and
/// duplicate keys are errors, only `true`/`false` are booleans. Harnesses use it for their own
/// files (fixture sidecars) so that every YAML file of a repository follows one dialect.
pub fn read_strict_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|error| {
        // serde-saphyr appends the location in prose (kept here as numbers) and, for duplicate
        // keys, advice meant for the Rust programmer rather than the author.
        let message = error.to_string();
        let line = message.lines().next().unwrap_or_default();
        let line = line.rfind(" at line ").map_or(line, |cut| &line[..cut]);
        let message = match line.split_once(", set DuplicateKeyPolicy") {
            Some((before, _)) => format!("{before} (each key may appear once)"),
            None => line.to_owned(),
        };
        YamlError {
            line: error
                .location()
                .map(|location| (location.line(), location.column())),
            message,
        }
    })
}
