//! Where a contract's text comes from: memory (a service embedding its contracts) or a folder.
//!
//! This is the gate crate's only file I/O, kept at the edge: [`ContractSource::read_dir`] reads a
//! version folder once, and everything after works on the in-memory source.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{CONTRACT_FILE, CompileError, CompileErrors};

/// The files of one contract version: `contract.yaml` and its JSON Schema files.
#[derive(Debug, Clone)]
pub struct ContractSource {
    pub(crate) folder: Option<PathBuf>,
    pub(crate) contract: String,
    pub(crate) schemas: BTreeMap<String, SchemaText>,
}

#[derive(Debug, Clone)]
pub(crate) enum SchemaText {
    Text(String),
    Value(Value),
}

impl ContractSource {
    /// A contract from the text of its `contract.yaml`; add its schemas with
    /// [`with_schema`](Self::with_schema) (e.g. from `include_str!`).
    pub fn new(contract_yaml: impl Into<String>) -> ContractSource {
        ContractSource {
            folder: None,
            contract: contract_yaml.into(),
            schemas: BTreeMap::new(),
        }
    }

    /// Adds a schema file by name (as `contract.yaml` and `$ref`s refer to it) and JSON text.
    /// The text is parsed as strictly as responses are: a duplicate key in a schema is an error.
    pub fn with_schema(
        mut self,
        file_name: impl Into<String>,
        json_text: impl Into<String>,
    ) -> ContractSource {
        self.schemas
            .insert(file_name.into(), SchemaText::Text(json_text.into()));
        self
    }

    /// Adds a schema file by name from an already-built value.
    pub fn with_schema_value(
        mut self,
        file_name: impl Into<String>,
        schema: Value,
    ) -> ContractSource {
        self.schemas
            .insert(file_name.into(), SchemaText::Value(schema));
        self
    }

    /// Reads a contract version folder: `contract.yaml` and every `*.json` file directly in it.
    /// Errors name the file that could not be read.
    pub fn read_dir(folder: impl AsRef<Path>) -> Result<ContractSource, CompileErrors> {
        let folder = folder.as_ref();
        let unreadable = |file: &Path, error: std::io::Error| {
            CompileError::in_file(file.display().to_string(), format!("cannot read: {error}"))
        };
        let contract_path = folder.join(CONTRACT_FILE);
        let contract = fs::read_to_string(&contract_path).map_err(|error| {
            let error = unreadable(&contract_path, error);
            if folder.is_dir() {
                error.hint(format!(
                    "every contract version folder needs a {CONTRACT_FILE}"
                ))
            } else {
                error.hint("the contract folder does not exist")
            }
        })?;
        let mut source = ContractSource::new(contract);
        source.folder = Some(folder.to_path_buf());
        let entries = fs::read_dir(folder).map_err(|error| unreadable(folder, error))?;
        let mut errors = Vec::new();
        for entry in entries {
            let path = match entry {
                Ok(entry) => entry.path(),
                Err(error) => {
                    errors.push(unreadable(folder, error));
                    continue;
                }
            };
            let is_schema = path
                .extension()
                .is_some_and(|extension| extension == "json");
            if !is_schema || !path.is_file() {
                continue;
            }
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            match fs::read_to_string(&path) {
                Ok(text) => source = source.with_schema(name, text),
                Err(error) => errors.push(unreadable(&path, error)),
            }
        }
        if errors.is_empty() {
            Ok(source)
        } else {
            Err(CompileErrors(errors))
        }
    }

    /// The folder this source was read from, if any.
    pub fn folder(&self) -> Option<&Path> {
        self.folder.as_deref()
    }

    /// The schema file names, sorted.
    pub fn schema_files(&self) -> impl Iterator<Item = &str> {
        self.schemas.keys().map(String::as_str)
    }
}
