//! A contract version read for analysis: `contract.yaml` as the JSON value it denotes, its schema
//! files, and the compiled contract that decides every witness, replay and mutant.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use toolgate_gate::Contract;
use toolgate_gate::internals::{DERIVED_AGENT_SCHEMA, contract_document, parse_strict_json};

use toolgate_repo::UsageError;
use toolgate_repo::{Repository, VersionDir};

use crate::schema::Schemas;

/// One version of a contract, read for analysis: its `contract.yaml` as data, its schema files
/// normalized on demand, and the compiled contract that decides every response.
#[derive(Debug)]
pub struct Version {
    /// `v1`, `v2`, …
    pub name: String,
    /// `contract.yaml` as the JSON value it denotes.
    pub document: Value,
    /// Its schema files.
    pub schemas: Schemas,
    /// The compiled contract, which decides every witness and replay.
    pub contract: Arc<Contract>,
}

/// One shape, as `contract.yaml` writes it.
#[derive(Debug, Clone)]
pub struct ShapeDoc {
    /// `current`, or the legacy shape's name.
    pub name: String,
    /// Its schema file.
    pub schema: String,
    /// Promised fields: name → (pointer, optional).
    pub fields: BTreeMap<String, (String, bool)>,
    /// Where a failure keeps its code, for shapes with an outcome.
    pub error_code: Option<String>,
    /// Where the outcome is, and the value that marks a success, for shapes with an outcome.
    pub outcome: Option<(String, Value)>,
    /// The value that marks a failure, for shapes with an outcome.
    pub failure: Option<Value>,
    /// Where the shape carries the request id, if it does.
    pub request_id: Option<String>,
    /// Where the shape carries the tool's name, if it does.
    pub tool: Option<String>,
}

/// One rule, as `contract.yaml` writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleDoc {
    /// Its name.
    pub name: String,
    /// `binding`, `freshness`, `membership` or `lookup`.
    pub kind: String,
    /// Its settings (`field`, `context`, …).
    pub settings: Value,
    /// Whether a violation is retryable.
    pub retryable: bool,
}

impl RuleDoc {
    /// The agent-visible field it checks.
    pub fn field(&self) -> &str {
        self.settings["field"].as_str().unwrap_or_default()
    }
}

impl Version {
    /// The current shape, then the legacy ones.
    pub fn shapes(&self) -> Vec<ShapeDoc> {
        let shape = |value: &Value, name: &str| ShapeDoc {
            name: name.to_owned(),
            schema: value["schema"].as_str().unwrap_or_default().to_owned(),
            fields: value["fields"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|field| {
                    (
                        field["name"].as_str().unwrap_or_default().to_owned(),
                        (
                            field["from"].as_str().unwrap_or_default().to_owned(),
                            field["optional"].as_bool().unwrap_or(false),
                        ),
                    )
                })
                .collect(),
            error_code: value["error_code"].as_str().map(str::to_owned),
            outcome: value["outcome"]["pointer"]
                .as_str()
                .map(|pointer| (pointer.to_owned(), value["outcome"]["success"].clone())),
            failure: Some(value["outcome"]["failure"].clone()).filter(Value::is_string),
            request_id: value["correlation"]["request_id"]
                .as_str()
                .map(str::to_owned),
            tool: value["correlation"]["tool"].as_str().map(str::to_owned),
        };
        let mut shapes = vec![shape(&self.document["shape"], toolgate_gate::CURRENT_SHAPE)];
        for legacy in self.document["legacy_shapes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            shapes.push(shape(legacy, legacy["name"].as_str().unwrap_or_default()));
        }
        shapes
    }

    /// The agent schema's file: the one `agent_schema:` names, or the derived one.
    pub fn agent_schema_file(&self) -> &str {
        self.document["agent_schema"]
            .as_str()
            .unwrap_or(DERIVED_AGENT_SCHEMA)
    }

    /// The promised field names, in output order.
    pub fn field_order(&self) -> Vec<String> {
        toolgate_gate::internals::fields(&self.contract).to_vec()
    }

    /// The rules, in order.
    pub fn rules(&self) -> Vec<RuleDoc> {
        self.document["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|rule| {
                let kind = ["binding", "freshness", "membership", "lookup"]
                    .into_iter()
                    .find(|kind| rule.get(*kind).is_some())
                    .unwrap_or_default();
                RuleDoc {
                    name: rule["name"].as_str().unwrap_or_default().to_owned(),
                    kind: kind.to_owned(),
                    settings: rule[kind].clone(),
                    retryable: rule["retryable"].as_bool().unwrap_or(false),
                }
            })
            .collect()
    }

    /// The response pointer a field is read from in a shape.
    pub fn pointer(&self, shape: &str, field: &str) -> Option<String> {
        self.shapes()
            .into_iter()
            .find(|candidate| candidate.name == shape)?
            .fields
            .get(field)
            .map(|(pointer, _)| pointer.clone())
    }
}

impl Version {
    /// This version with its current shape read from `schema`, held as the file `file`, in
    /// place of its own: the contract as it would be if an upstream's own declaration (a
    /// server's `outputSchema`, for `toolgate diff --upstream`) were its schema, everything else
    /// (limits, correlation, rules, fields, the agent schema) kept. Named `name`. An error says
    /// why the gate cannot compile it (a promised field the declaration does not have, a
    /// keyword the gate refuses).
    pub fn with_shape_schema(
        &self,
        name: &str,
        file: &str,
        schema: Value,
        folder: &std::path::Path,
    ) -> Result<Version, String> {
        let mut document = self.document.clone();
        document["shape"]["schema"] = Value::from(file);
        let mut files = self.schemas.files().clone();
        files.remove(DERIVED_AGENT_SCHEMA);
        files.insert(file.to_owned(), schema);
        // JSON is YAML: the document is written back as the gate's strict reader reads it.
        let mut source = toolgate_gate::ContractSource::new(document.to_string()).in_folder(folder);
        for (name, value) in &files {
            source = source.with_schema_value(name.clone(), value.clone());
        }
        let contract = Contract::compile(&source).map_err(|errors| errors.to_string())?;
        if let Some(derived) = contract.derived_agent_schema() {
            files.insert(DERIVED_AGENT_SCHEMA.to_owned(), derived.clone());
        }
        Ok(Version {
            name: name.to_owned(),
            document,
            schemas: Schemas::new(files),
            contract: Arc::new(contract),
        })
    }
}

/// Reads and compiles one version folder of `tool`.
pub fn load(
    repository: &Repository,
    tool: &str,
    version: &VersionDir,
) -> Result<Version, UsageError> {
    let files = repository.read_files(version)?;
    let contract = Arc::new(repository.compile(tool, version)?);
    let document = contract_document(&files.contract).map_err(UsageError::new)?;
    let mut schemas = BTreeMap::new();
    for (name, text) in &files.schemas {
        let value = parse_strict_json(text.as_bytes(), 100).map_err(|message| {
            UsageError::new(format!("{}: {message}", files.folder.join(name).display()))
        })?;
        schemas.insert(name.clone(), value);
    }
    // A contract without `agent_schema:` has one derived from its fields, referring into its
    // files: the model holds it beside them under the name the gate compiled it as.
    if let Some(derived) = contract.derived_agent_schema() {
        schemas.insert(DERIVED_AGENT_SCHEMA.to_owned(), derived.clone());
    }
    Ok(Version {
        name: version.name(),
        document,
        schemas: Schemas::new(schemas),
        contract,
    })
}
