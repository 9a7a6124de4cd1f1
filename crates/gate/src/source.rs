//! Where a contract's text comes from: memory (a service embedding its contracts) or a folder.
//!
//! This is the gate crate's only file I/O, kept at the edge: [`ContractSource::read_dir`] reads a
//! version folder once, and everything after works on the in-memory source.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{CONTRACT_FILE, CompileError, CompileErrors};
use crate::facts::Sha256Digest;

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
    /// The largest contract or schema file [`read_dir`](Self::read_dir) reads.
    pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

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
    /// Only regular files are read (a FIFO or a device is an error, never a wait), each at most
    /// [`ContractSource::MAX_FILE_BYTES`]. Errors name the file that could not be read.
    pub fn read_dir(folder: impl AsRef<Path>) -> Result<ContractSource, CompileErrors> {
        let folder = folder.as_ref();
        let unreadable = |file: &Path, error: std::io::Error| {
            CompileError::in_file(file.display().to_string(), format!("cannot read: {error}"))
        };
        let contract_path = folder.join(CONTRACT_FILE);
        let contract = read_file(&contract_path).map_err(|error| {
            let error = unreadable(&contract_path, error);
            if folder.is_dir() {
                error.hint(format!(
                    "every contract version folder needs a {CONTRACT_FILE}"
                ))
            } else {
                error.hint("the contract folder does not exist")
            }
        })?;
        let mut source = ContractSource::new(contract).in_folder(folder);
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
            if !is_schema || path.is_dir() {
                continue;
            }
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            match read_file(&path) {
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

    /// Names the folder this source's files came from, so compile errors name real paths (as
    /// for [`read_dir`](Self::read_dir)). For sources read by other means, such as a harness
    /// that reads the files itself.
    pub fn in_folder(mut self, folder: impl Into<PathBuf>) -> ContractSource {
        self.folder = Some(folder.into());
        self
    }

    /// The folder this source was read from, if any.
    pub fn folder(&self) -> Option<&Path> {
        self.folder.as_deref()
    }

    /// The digest of the contract's own bytes, as its audit events and operator records name
    /// it: SHA-256 over `contract.yaml` and each schema file, in name order, each as its name, a
    /// NUL byte, its length (8 bytes, little-endian) and its bytes (a schema given as a value, as
    /// serde_json writes it). For a version folder that holds nothing else, it is the digest the
    /// contract lock records.
    pub fn digest(&self) -> Sha256Digest {
        let mut files: Vec<(&str, Cow<'_, [u8]>)> =
            vec![(CONTRACT_FILE, Cow::Borrowed(self.contract.as_bytes()))];
        for (name, text) in &self.schemas {
            let bytes = match text {
                SchemaText::Text(text) => Cow::Borrowed(text.as_bytes()),
                SchemaText::Value(value) => {
                    Cow::Owned(serde_json::to_vec(value).unwrap_or_default())
                }
            };
            files.push((name, bytes));
        }
        files.sort_by(|a, b| a.0.cmp(b.0));
        let mut material = Vec::new();
        for (name, bytes) in files {
            material.extend_from_slice(name.as_bytes());
            material.push(0);
            material.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            material.extend_from_slice(&bytes);
        }
        Sha256Digest::of(&material)
    }

    /// The schema file names, sorted.
    pub fn schema_files(&self) -> impl Iterator<Item = &str> {
        self.schemas.keys().map(String::as_str)
    }
}

/// One contract file as text: a regular file of at most `MAX_FILE_BYTES`.
fn read_file(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    // Before opening: opening a FIFO waits for a writer that may never come.
    if !fs::metadata(path)?.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let file = fs::File::open(path)?;
    let mut text = String::new();
    file.take(ContractSource::MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > ContractSource::MAX_FILE_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!(
                "larger than {} bytes; a contract file is never this large",
                ContractSource::MAX_FILE_BYTES
            ),
        ));
    }
    Ok(text)
}
