//! The operator's trusted context (`--context FILE`): the values the contracts' rules read that
//! must not come from the model (a membership list, a lookup table, and every key a contract
//! does not let a caller's arguments supply). A call's context is the arguments the contract
//! lets the caller supply plus, for every other key, the operator's value.
//!
//! The file is a JSON object of tools, each an object of context values:
//! `{"service_state": {"allowed_units": ["nginx", "postgres"]}}`. It is read at start, where a
//! key some contract needs from the operator and the file lacks is a configuration error, and
//! again whenever it changes (so a list is refreshed without a restart); a change that does not
//! read, or drops a needed key, is refused with a line on stderr and the last good file stays.

use crate::lock;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{Map, Value};
use toolgate_gate::internals::{escape_hidden, parse_strict_json};
use toolgate_repo::UsageError;

use crate::tools::Registry;

/// The largest context file read: a deployment's lists and tables, not a database.
const MAX_CONTEXT_BYTES: usize = 16 * 1024 * 1024;

/// The operator's context, refreshed when its file changes.
pub(crate) struct OperatorContext {
    path: Option<PathBuf>,
    /// Each tool and the keys it needs from the operator.
    needed: Vec<(String, Vec<String>)>,
    loaded: Mutex<Loaded>,
}

struct Loaded {
    modified: Option<SystemTime>,
    tools: Map<String, Value>,
}

impl OperatorContext {
    /// Reads `path` (if given) and checks that it holds every key a contract needs from the
    /// operator; a key it lacks (or no file where one is needed) is a configuration error.
    pub(crate) fn load(path: Option<&Path>, registry: &Registry) -> Result<Self, UsageError> {
        let needed: Vec<(String, Vec<String>)> = registry
            .contracts()
            .map(|(name, contract)| {
                let keys = contract
                    .context_from_operator()
                    .into_iter()
                    .map(str::to_owned)
                    .collect::<Vec<_>>();
                (name.to_owned(), keys)
            })
            .filter(|(_, keys)| !keys.is_empty())
            .collect();
        let (modified, tools) = match path {
            Some(path) => read(path)?,
            None => (None, Map::new()),
        };
        let missing = missing(&needed, &tools);
        if !missing.is_empty() {
            let source = path.map_or_else(
                || "no --context FILE was given".to_owned(),
                |path| format!("{} lacks them", path.display()),
            );
            return Err(UsageError::new(format!(
                "trusted context only the operator may supply is missing ({source}): {}. Write it in a JSON file, {{\"<tool>\": {{\"<key>\": <value>}}}}, and pass --context FILE; a caller's arguments never supply these keys (the contract's `context: from_arguments` says which they may)",
                missing.join(", ")
            )));
        }
        Ok(OperatorContext {
            path: path.map(Path::to_path_buf),
            needed,
            loaded: Mutex::new(Loaded { modified, tools }),
        })
    }

    /// The operator's values for `tool`, from the file as it is now (re-read if it changed).
    pub(crate) fn for_tool(&self, tool: &str) -> Map<String, Value> {
        let mut loaded = lock(&self.loaded);
        if let Some(path) = &self.path {
            let modified = std::fs::metadata(path)
                .and_then(|meta| meta.modified())
                .ok();
            if modified != loaded.modified {
                match read(path) {
                    Ok((modified, tools)) if missing(&self.needed, &tools).is_empty() => {
                        *loaded = Loaded { modified, tools };
                    }
                    Ok((modified, tools)) => {
                        loaded.modified = modified;
                        super::lines::stderr_line(&format!(
                            "toolgate mcp-proxy: {}: the changed context lacks {}; the last good one stays",
                            path.display(),
                            missing(&self.needed, &tools).join(", ")
                        ));
                    }
                    Err(error) => {
                        loaded.modified = modified;
                        super::lines::stderr_line(&format!(
                            "toolgate mcp-proxy: {}; the last good context stays",
                            escape_hidden(&error.to_string())
                        ));
                    }
                }
            }
        }
        loaded
            .tools
            .get(tool)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}

/// Reads the context file: at most [`MAX_CONTEXT_BYTES`], parsed strictly (a duplicate key is an
/// error), an object of objects.
fn read(path: &Path) -> Result<(Option<SystemTime>, Map<String, Value>), UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|error| UsageError::io(path, "read the --context file", &error))?;
    let modified = file.metadata().and_then(|meta| meta.modified()).ok();
    let bytes = toolgate_gate::read_capped(file, MAX_CONTEXT_BYTES)
        .map_err(|error| UsageError::io(path, "read the --context file", &error))?;
    if bytes.len() > MAX_CONTEXT_BYTES {
        return Err(UsageError::new(format!(
            "{}: larger than {MAX_CONTEXT_BYTES} bytes",
            path.display()
        )));
    }
    let value = parse_strict_json(&bytes, 64)
        .map_err(|message| UsageError::new(format!("{}: {message}", path.display())))?;
    let Value::Object(tools) = value else {
        return Err(UsageError::new(format!(
            "{}: must be a JSON object of tools, each an object of context values",
            path.display()
        )));
    };
    if let Some((tool, _)) = tools.iter().find(|(_, values)| !values.is_object()) {
        return Err(UsageError::new(format!(
            "{}: at /{tool}: must be an object of context values",
            path.display()
        )));
    }
    Ok((modified, tools))
}

/// `tool`'s `key` for every key a tool needs and `tools` lacks.
fn missing(needed: &[(String, Vec<String>)], tools: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (tool, keys) in needed {
        for key in keys {
            if tools.get(tool).and_then(|values| values.get(key)).is_none() {
                out.push(format!("`{tool}`'s `{key}`"));
            }
        }
    }
    out
}
