//! G3 schema: JSON Schema Draft 2020-12 with format assertions on, compiled once per contract.
//!
//! Every schema is compiled the same way (see [`compile_options`]): the 2020-12 dialect forced,
//! `format` asserted (a `date-time` that is not RFC 3339 fails), unknown formats refused at compile
//! time, `pattern` run by the linear-time `regex` engine (no backtracking an attacker could feed),
//! and `$ref` resolved only against the contract's own files. A `$ref` to anything else, a remote
//! URL included, is a compile error naming it; the gate never fetches a schema.
//!
//! At admission time `is_valid` decides, over the gate's own [`Document`]; errors are collected
//! only for a document that already failed, so the rejection path pays for detail and the
//! admission path does not. The explanation runs the same schema, compiled a second time (on
//! first use) over serde_json's `Value`: its messages and their order are jsonschema's for that
//! representation, whatever order the document wrote its members in.

mod branches;
mod pattern;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::json::{Json, SerdeJson};
use jsonschema::{
    Draft, PatternOptions, Retrieve, Uri, ValidationError, ValidationOptions, Validator,
};
use serde_json::Value;

use crate::document::{Document, DocumentJson, Node};
use crate::error::CompileError;
use crate::fault::{Fault, Finding};
use crate::outcome::Layer;
use crate::sanitize::FINDINGS_CAP;

/// Where JSON Schema puts subschemas, by the form of the keyword's value: one table for every walk
/// over a schema's subschemas (here, the draft rewrite `toolgate diff --upstream` makes, and the
/// structural copy the proxy shows a host), so a keyword added to one is added to all.
/// 2020-12 and the drafts before it; `items` is a list of subschemas before 2020-12.
pub mod subschemas {
    /// Keywords whose value is one subschema.
    pub const ONE: [&str; 11] = [
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
        "items",
    ];
    /// Keywords whose value is a list of subschemas.
    pub const LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
    /// Keywords whose value maps names to subschemas.
    pub const MAPS: [&str; 5] = [
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "dependentSchemas",
    ];
}

/// The dialect every contract schema is read in.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The options every contract schema (and the conformance suite) is compiled with, for
/// validating serde_json `Value`s: how the gate explains a rejection, and how the harness checks
/// its own files.
///
/// Exposed so the schema conformance tests compile exactly as the gate does.
#[doc(hidden)]
pub fn compile_options(retriever: impl Retrieve + 'static) -> ValidationOptions<'static> {
    options_for::<SerdeJson>(retriever)
}

/// The same options, for validating the gate's [`Document`]: how admission decides. Identifier
/// patterns are matched by position (`schema/pattern.rs`); everything else is jsonschema's.
#[doc(hidden)]
pub fn document_compile_options(
    retriever: impl Retrieve + 'static,
) -> ValidationOptions<'static, Arc<dyn Retrieve>, DocumentJson> {
    builtin_document_options(retriever).with_keyword("pattern", pattern::keyword)
}

/// The options over the document with every keyword jsonschema's own.
fn builtin_document_options(
    retriever: impl Retrieve + 'static,
) -> ValidationOptions<'static, Arc<dyn Retrieve>, DocumentJson> {
    options_for::<DocumentJson>(retriever)
}

fn options_for<F: Json>(
    retriever: impl Retrieve + 'static,
) -> ValidationOptions<'static, Arc<dyn Retrieve>, F> {
    jsonschema::options_for::<F>()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .with_pattern_options(PatternOptions::regex())
        .with_retriever(retriever)
}

/// Where a schema uses OpenAPI 3.0's `nullable` as a keyword (not as a member name under
/// `properties`, nor inside a value such as an `enum`).
fn openapi_nullable(schema: &Value) -> Option<String> {
    /// Keywords whose value is data, never a schema.
    const VALUES: [&str; 5] = ["enum", "const", "examples", "default", "example"];
    let mut pending = vec![(String::new(), schema)];
    while let Some((pointer, schema)) = pending.pop() {
        let Value::Object(members) = schema else {
            if let Value::Array(items) = schema {
                pending.extend(
                    items
                        .iter()
                        .enumerate()
                        .map(|(index, item)| (format!("{pointer}/{index}"), item)),
                );
            }
            continue;
        };
        if members.contains_key("nullable") {
            return Some(format!("{pointer}/nullable"));
        }
        for (keyword, value) in members {
            let here = format!(
                "{pointer}/{}",
                keyword.replace('~', "~0").replace('/', "~1")
            );
            if VALUES.contains(&keyword.as_str()) {
                continue;
            }
            match (subschemas::MAPS.contains(&keyword.as_str()), value) {
                (true, Value::Object(named)) => {
                    pending.extend(named.iter().map(|(name, schema)| {
                        (
                            format!("{here}/{}", name.replace('~', "~0").replace('/', "~1")),
                            schema,
                        )
                    }))
                }
                _ => pending.push((here, value)),
            }
        }
    }
    None
}

/// The schema files of one contract, each known by a URI under the contract's own base.
pub(crate) struct SchemaFiles {
    base: String,
    documents: HashMap<String, Arc<Value>>,
}

type Documents = Arc<HashMap<String, Arc<Value>>>;

impl SchemaFiles {
    /// `base` names the contract folder as a URI, e.g. `toolgate://contract/job_status/v1/`.
    pub(crate) fn new(base: String) -> SchemaFiles {
        SchemaFiles {
            base,
            documents: HashMap::new(),
        }
    }

    pub(crate) fn uri_of(&self, file: &str) -> String {
        format!("{}{file}", self.base)
    }

    /// The document of one file of the contract.
    pub(crate) fn document(&self, file: &str) -> Option<&Value> {
        self.documents
            .get(&self.uri_of(file))
            .map(|document| &**document)
    }

    /// Adds one file. Refuses a `$schema` other than 2020-12: the dialect is forced, and a schema
    /// written for another draft would silently mean something else.
    pub(crate) fn add(&mut self, file: &str, document: Value) -> Result<(), CompileError> {
        if let Some(dialect) = document.get("$schema") {
            let declared = dialect.as_str().unwrap_or_default();
            if declared.trim_end_matches('#') != DIALECT {
                return Err(CompileError::in_file(
                    file,
                    format!("`$schema` is {dialect}; toolgate reads every schema as Draft 2020-12 (`{DIALECT}`)"),
                )
                .pointer("/$schema")
                .hint("rewrite the schema for 2020-12, or drop `$schema`"));
            }
        }
        if let Some(pointer) = openapi_nullable(&document) {
            return Err(CompileError::in_file(
                file,
                "`nullable` is OpenAPI 3.0's keyword, not JSON Schema 2020-12's: it would be ignored, and null refused here",
            )
            .pointer(&pointer)
            .hint("write \"type\": [\"object\", \"null\"] (or a `oneOf` with {\"type\": \"null\"}); `toolgate new --from-openapi` converts it for you"));
        }
        let document = Arc::new(document);
        if let Some(id) = document.get("$id").and_then(Value::as_str)
            && id.contains("://")
        {
            self.documents
                .insert(id.trim_end_matches('#').to_owned(), Arc::clone(&document));
        }
        self.documents.insert(self.uri_of(file), document);
        Ok(())
    }

    pub(crate) fn compile(&self, file: &str) -> Result<CompiledSchema, CompileError> {
        let uri = self.uri_of(file);
        let Some(document) = self.documents.get(&uri) else {
            return Err(
                CompileError::in_file(file, "no such schema file in the contract folder")
                    .hint("add the file next to contract.yaml, or fix the name"),
            );
        };
        let files = ContractFiles {
            base: self.base.clone(),
            documents: Arc::new(self.documents.clone()),
        };
        let validator = document_compile_options(files.clone())
            .with_base_uri(uri.clone())
            .build(document)
            .map_err(|error| compile_error(file, &error))?;
        Ok(CompiledSchema {
            validator,
            narrowing: Narrowing::NotAsked,
            explainer: OnceLock::new(),
            uri,
            files,
        })
    }
}

/// Whether a root `oneOf` is decided by its discriminator (`schema/branches.rs`), decided once
/// at compile time.
enum Narrowing {
    /// The contract names no outcome member for this schema.
    NotAsked,
    Narrowed(Branches),
    /// Something in the contract could tell the difference, or the root is no such envelope.
    Declined(String),
}

/// A root `oneOf` decided by its discriminator (see `schema/branches.rs`).
struct Branches {
    member: Box<str>,
    /// One validator per outcome value: the root with `oneOf` narrowed to that value's branch.
    by_value: Vec<(String, Validator<DocumentJson>)>,
}

fn compile_error(file: &str, error: &ValidationError<'_>) -> CompileError {
    let message = match error.kind() {
        ValidationErrorKind::Referencing(referencing) => referencing_message(referencing),
        _ => error.to_string(),
    };
    let pointer = error.instance_path().to_string();
    let compiled = CompileError::in_file(file, message);
    if pointer.is_empty() {
        compiled
    } else {
        compiled.pointer(&pointer)
    }
}

fn referencing_message(error: &jsonschema::ReferencingError) -> String {
    match error {
        jsonschema::ReferencingError::Unretrievable { uri, source }
            if source
                .to_string()
                .contains("once the registry is populated") =>
        {
            format!(
                "cannot resolve a reference to {uri}: the compiler loads a file of the contract when a `$ref` names it, and only a `$dynamicRef` does; add a `$ref` to that file (under `$defs` will do)"
            )
        }
        jsonschema::ReferencingError::Unretrievable { uri, source } => {
            format!("cannot resolve `$ref` to {uri}: {source}")
        }
        other => format!("cannot resolve a `$ref`: {other}"),
    }
}

/// Refuses every `$ref` outside the schema itself (for schemas embedded in the gate).
pub(crate) struct NoRetrieval;

impl Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri}: the gate never fetches schemas").into())
    }
}

/// Serves a contract's own files to the schema compiler, and refuses everything else.
#[derive(Clone)]
struct ContractFiles {
    base: String,
    documents: Documents,
}

impl Retrieve for ContractFiles {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let key = uri.as_str().split('#').next().unwrap_or_default();
        if let Some(document) = self.documents.get(key) {
            return Ok(Value::clone(document));
        }
        let reason = if let Some(file) = key.strip_prefix(&self.base) {
            format!("the contract folder has no file `{file}`")
        } else if key.starts_with("toolgate://") {
            "it points outside the contract folder; a contract version must be self-contained, so copy the schema into its folder".to_owned()
        } else {
            "toolgate never fetches schemas over the network; copy the schema into the contract folder and refer to it by file name".to_owned()
        };
        Err(reason.into())
    }
}

/// One compiled schema.
pub(crate) struct CompiledSchema {
    /// Decides: over the gate's document, on every admission.
    validator: Validator<DocumentJson>,
    /// Decides instead, for a document whose outcome member names one of them.
    narrowing: Narrowing,
    /// Explains: the same schema over `Value`, compiled when a rejection is first explained.
    /// `None` only if it failed to compile, which the first compilation rules out.
    explainer: OnceLock<Option<Validator>>,
    uri: String,
    /// The contract's schema documents by URI: for the explainer's compilation, and to read back
    /// the keywords a validation applied.
    files: ContractFiles,
}

/// Whether the positional matcher reads `pattern`.
pub(crate) fn is_positional_pattern(pattern: &str) -> bool {
    pattern::Positional::compile(pattern).is_some()
}

/// Collects `pattern` keywords: a string under `pattern` in a schema object, not a property
/// (or definition) that happens to be called `pattern`.
pub(crate) fn collect_patterns(value: &Value, names_map: bool, found: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, member) in object {
                if names_map {
                    collect_patterns(member, false, found);
                    continue;
                }
                match (key.as_str(), member) {
                    ("pattern", Value::String(pattern)) => found.push(pattern.clone()),
                    (keyword, _) if subschemas::MAPS.contains(&keyword) => {
                        collect_patterns(member, true, found)
                    }
                    ("const" | "enum" | "examples" | "default", _) => {}
                    _ => collect_patterns(member, false, found),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_patterns(item, false, found)),
        _ => {}
    }
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Whether a root `oneOf` is decided by the outcome member (`branches.rs`).
    pub(crate) fn is_narrowed(&self) -> bool {
        matches!(self.narrowing, Narrowing::Narrowed(_))
    }

    /// Whether the root schema has a `oneOf` at all.
    pub(crate) fn has_root_one_of(&self) -> bool {
        self.files
            .documents
            .get(&self.uri)
            .is_some_and(|root| root.get("oneOf").is_some())
    }

    /// Every `pattern` keyword's value in the contract's schema files, and whether the
    /// positional matcher (`pattern.rs`) reads it.
    pub(crate) fn patterns(&self) -> Vec<(String, bool)> {
        let mut found = Vec::new();
        for document in self.files.documents.values() {
            collect_patterns(document, false, &mut found);
        }
        found
            .into_iter()
            .map(|pattern| {
                let positional = is_positional_pattern(&pattern);
                (pattern, positional)
            })
            .collect()
    }

    pub(crate) fn is_valid(&self, document: Node<'_>) -> bool {
        if let Narrowing::Narrowed(branches) = &self.narrowing
            && let Some(outcome) = document
                .get(&branches.member)
                .and_then(|node| node.as_str())
            && let Some((_, narrowed)) =
                branches.by_value.iter().find(|(value, _)| value == outcome)
        {
            return narrowed.is_valid(document);
        }
        self.validator.is_valid(document)
    }

    /// Decides a root `oneOf` by the outcome member `member`, where nothing in the contract can
    /// tell the difference (`branches.rs`); otherwise the schema is left as it is, and why is
    /// kept ([`CompiledSchema::narrowing_declined`]).
    pub(crate) fn discriminated_by(mut self, member: &str) -> CompiledSchema {
        let files = branches::Files {
            base: &self.files.base,
            documents: &self.files.documents,
        };
        let narrowed = match branches::narrowing(&files, &self.uri, member) {
            Ok(narrowed) => narrowed,
            Err(reason) => {
                self.narrowing = Narrowing::Declined(reason);
                return self;
            }
        };
        // Each narrowed root is compiled as a file of its own, beside the root (so a relative `$ref`
        // in it finds what the root's finds), and never in the root's place: a `$ref` from another
        // file back to the root must still mean the whole `oneOf`, not one branch of it.
        let base = self
            .files
            .documents
            .get(&self.uri)
            .and_then(|root| root.get("$id"))
            .and_then(Value::as_str)
            .filter(|id| id.contains("://"))
            .map_or_else(
                || self.uri.clone(),
                |id| id.trim_end_matches('#').to_owned(),
            );
        let mut by_value = Vec::with_capacity(narrowed.len());
        for (index, (value, schema)) in narrowed.into_iter().enumerate() {
            match document_compile_options(self.files.clone())
                .with_base_uri(format!("{base}{}{index}", branches::NARROWED_SUFFIX))
                .build(&schema)
            {
                Ok(validator) => by_value.push((value, validator)),
                Err(error) => {
                    self.narrowing = Narrowing::Declined(format!(
                        "the branch for {value:?}, narrowed, does not compile: {}",
                        crate::sanitize::sanitize(&error.to_string(), crate::sanitize::MESSAGE_CAP)
                    ));
                    return self;
                }
            }
        }
        self.narrowing = Narrowing::Narrowed(Branches {
            member: member.into(),
            by_value,
        });
        self
    }

    /// Why a root `oneOf` is not decided by the outcome member, when the contract names one
    /// and the narrowing was declined.
    pub(crate) fn narrowing_declined(&self) -> Option<&str> {
        match &self.narrowing {
            Narrowing::Declined(reason) => Some(reason),
            _ => None,
        }
    }

    /// Whether the schema accepts a `Value` (decided as admission decides: over its document).
    pub(crate) fn accepts_value(&self, value: &Value) -> bool {
        self.is_valid(Document::from_value(value).root())
    }

    /// Whether the plain validator (serde_json's `Value`, no `oneOf` narrowing, jsonschema's own
    /// `pattern`) accepts `value`: the reference the admission path must agree with, for the
    /// fuzz targets. `None` when it could not be compiled.
    pub(crate) fn reference_accepts(&self, value: &Value) -> Option<bool> {
        self.explainer().map(|explainer| explainer.is_valid(value))
    }

    /// `document` compiled as a file named `name` beside this schema's (its `$ref`s resolve
    /// against the contract's files), for a schema the harness derives; `None` if it does not
    /// compile.
    pub(crate) fn sibling_validator(&self, name: &str, document: &Value) -> Option<Validator> {
        compile_options(self.files.clone())
            .with_base_uri(format!("{}{name}", self.files.base))
            .build(document)
            .ok()
    }

    /// The explaining validator (see [`CompiledSchema::explainer`]'s field): decides as the
    /// deciding one does, and says where and why a document fails.
    pub(crate) fn explaining_validator(&self) -> Option<&Validator> {
        self.explainer()
    }

    fn explainer(&self) -> Option<&Validator> {
        self.explainer
            .get_or_init(|| {
                compile_options(self.files.clone())
                    .with_base_uri(self.uri.clone())
                    .build(self.files.documents.get(&self.uri)?)
                    .ok()
            })
            .as_ref()
    }

    /// Every assertion keyword the schema applied to a document it accepts, where, and with what
    /// value: the bounds the contract states for each value, as the validator itself evaluated
    /// them (through `$ref`, in the `oneOf` branch that matched). Harness-side only (mutants,
    /// the contract lint); the admission path never calls it.
    pub(crate) fn applied_keywords(&self, document: &Value) -> Vec<AppliedKeyword> {
        let Some(explainer) = self.explainer() else {
            return Vec::new();
        };
        let evaluation = explainer.evaluate(document);
        let mut applied = Vec::new();
        let mut units = vec![evaluation.root()];
        while let Some(unit) = units.pop() {
            if !unit.valid() {
                continue;
            }
            units.extend(unit.children());
            let location = unit.schema_location();
            let (uri, fragment) = location.split_once('#').unwrap_or((location, ""));
            let pointer = fragment.replace("%24", "$").replace("%25", "%");
            let mut tokens = pointer.rsplit('/');
            let (Some(keyword), Some(parent)) = (tokens.next(), tokens.next()) else {
                continue;
            };
            // `…/properties/maxLength` names a member called maxLength, not the keyword.
            let names_a_member = matches!(
                parent,
                "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            );
            if names_a_member || !ASSERTIONS.contains(&keyword) {
                continue;
            }
            let value = self
                .files
                .documents
                .get(uri)
                .and_then(|schema| schema.pointer(&pointer));
            if let Some(value) = value {
                applied.push(AppliedKeyword {
                    instance: unit.instance_location().as_str().to_owned(),
                    keyword: keyword.to_owned(),
                    value: value.clone(),
                });
            }
        }
        applied.sort_by(|a, b| (&a.instance, &a.keyword).cmp(&(&b.instance, &b.keyword)));
        applied
    }

    /// Explains why `document` failed. Call only after `is_valid` said no.
    pub(crate) fn fault(&self, document: &Value) -> Fault {
        let mut leaves = Vec::new();
        let errors = self
            .explainer()
            .into_iter()
            .flat_map(|explainer| explainer.iter_errors(document));
        for error in errors {
            collect_leaves(&error, &mut leaves);
            if leaves.len() > FINDINGS_CAP {
                break;
            }
        }
        let mut leaves = causes_first(leaves).into_iter();
        let Some(primary) = leaves.next() else {
            return Fault::new(
                Layer::Schema,
                "schema",
                "the document does not match the schema",
                SCHEMA_HINT,
            );
        };
        let hint = hint_for(&primary.keyword);
        Fault::new(Layer::Schema, primary.keyword, primary.message, hint)
            .at(&primary.instance_path)
            .keyword(&primary.keyword_location)
            .with_findings(leaves.map(|leaf| {
                Finding::new(&leaf.instance_path, &leaf.keyword_location, &leaf.message)
            }))
    }
}

/// The assertion keywords [`CompiledSchema::applied_keywords`] reports.
const ASSERTIONS: [&str; 21] = [
    "type",
    "enum",
    "const",
    "pattern",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
];

/// One assertion keyword a schema applied to a value of an accepted document.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedKeyword {
    /// JSON pointer to the value in the document.
    pub instance: String,
    /// The keyword, e.g. `maxLength`.
    pub keyword: String,
    /// The keyword's value in the schema, e.g. `35`.
    pub value: Value,
}

/// One concrete problem, detached from the validator's error type.
struct Leaf {
    keyword: String,
    instance_path: String,
    keyword_location: String,
    message: String,
    /// For `unevaluatedProperties`: the members it names; for `unevaluatedItems`, nothing.
    unevaluated: Option<Vec<String>>,
}

/// The leaves with every cause before its consequences. A member declared in a subschema that
/// failed (an `allOf` branch, a `$ref`'s target) loses that subschema's annotations, so
/// `unevaluatedProperties` names it as unexpected too, and jsonschema runs `unevaluated*` before
/// `$ref`: the operator would read "unexpected member, drop it" for what is a pattern failure
/// inside it. An `unevaluated*` error all of whose members have an error of their own (at or
/// under them) is that consequence, and is left out; one that names anything else is kept, after
/// every other error.
fn causes_first(leaves: Vec<Leaf>) -> Vec<Leaf> {
    let explained = |leaf: &Leaf, name: &str| {
        let member = format!(
            "{}/{}",
            leaf.instance_path,
            name.replace('~', "~0").replace('/', "~1")
        );
        leaves.iter().any(|other| {
            other.unevaluated.is_none()
                && (other.instance_path == member
                    || other
                        .instance_path
                        .strip_prefix(&member)
                        .is_some_and(|rest| rest.starts_with('/')))
        })
    };
    let consequence: Vec<bool> = leaves
        .iter()
        .map(|leaf| {
            leaf.unevaluated.as_ref().is_some_and(|names| {
                !names.is_empty() && names.iter().all(|name| explained(leaf, name))
            })
        })
        .collect();
    let (mut causes, mut unexplained): (Vec<Leaf>, Vec<Leaf>) = leaves
        .into_iter()
        .zip(consequence)
        .filter(|(_, consequence)| !consequence)
        .map(|(leaf, _)| leaf)
        .partition(|leaf| leaf.unevaluated.is_none());
    causes.append(&mut unexplained);
    causes
}

/// Replaces a "matched none of the oneOf/anyOf branches" error by the errors of the branch that
/// came closest, so the operator reads "additional property `message`" rather than "not valid
/// under any of the schemas listed".
fn collect_leaves(error: &ValidationError<'_>, leaves: &mut Vec<Leaf>) {
    if let ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } =
        error.kind()
        && let Some(branch) = context.iter().min_by_key(|branch| branch_distance(branch))
        && !branch.is_empty()
    {
        for inner in branch {
            collect_leaves(inner, leaves);
        }
        return;
    }
    let unevaluated = match error.kind() {
        ValidationErrorKind::UnevaluatedProperties { unexpected } => Some(unexpected.clone()),
        // It names the items' values, not their places: ordered after the causes, never left
        // out.
        ValidationErrorKind::UnevaluatedItems { .. } => Some(Vec::new()),
        _ => None,
    };
    leaves.push(Leaf {
        keyword: error.kind().keyword().to_owned(),
        instance_path: error.instance_path().to_string(),
        keyword_location: error.schema_path().to_string(),
        message: error.to_string(),
        unevaluated,
    });
}

/// How far a branch is from matching: a failed `const`/`enum` usually means "wrong branch"
/// (a discriminator like `outcome`), so it weighs more than an extra or missing member.
fn branch_distance(errors: &[ValidationError<'static>]) -> usize {
    errors
        .iter()
        .map(|error| match error.kind() {
            ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. } => 10,
            _ => 1,
        })
        .sum()
}

const SCHEMA_HINT: &str = "the response does not have the shape the contract promises; fix the connector, or publish a new contract version if the upstream changed on purpose";

/// What to do about a schema refusal. Where a refusal has two usual causes (the response is
/// wrong, or the contract is stricter than the upstream really is) the hint names both and how
/// to tell them apart: the connector owner must not chase a serialization bug that is the
/// contract's, nor loosen a contract for a connector's bug.
fn hint_for(keyword: &str) -> &'static str {
    match keyword {
        "additionalProperties" | "unevaluatedProperties" => {
            "the response carries members the contract does not promise; the connector must drop them, or a new contract version must declare (and review) them"
        }
        "required" => {
            "a member the contract requires is missing: either the upstream renamed or dropped it (its changelog says), or the upstream leaves it out on purpose when it has no value (its documentation marks it optional) and the contract should not require it: then publish a new contract version with it optional"
        }
        "type" => {
            "a member has the wrong JSON type (no coercion: \"7\" is not 7): either the connector serializes it wrong, or the upstream sends this type on purpose (a null for \"no value\", a number as text) and the contract is too strict; if the upstream's documentation or its other responses show this type, publish a new contract version that admits it, else fix the connector's serialization"
        }
        "format" => {
            "a value is not in the declared format (e.g. RFC 3339 for date-time): either the upstream formats it wrongly, or the contract assumed a format the upstream never promised (a date alone, an epoch, another date syntax); if the upstream documents this form, publish a new contract version with it, else fix the upstream's formatting"
        }
        "pattern" | "maxLength" | "minLength" => {
            "a string is outside the contract's bounds (its pattern or length): either it is not the value it should be (a foreign identifier, text that grew), or the bound is narrower than the upstream's real values; if the upstream documents values like this one, publish a new contract version that widens the bound"
        }
        "const" | "enum" => {
            "a value is outside the closed set the contract allows: either the response is not this tool's answer (wrong tool, a stale or foreign state or code), or the upstream added a value the contract does not list yet; if the upstream's documentation or changelog lists it, publish a new contract version that admits it"
        }
        _ => SCHEMA_HINT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job_status_envelope() -> CompiledSchema {
        let mut files = SchemaFiles::new("toolgate://contract/job_status/v1/".to_owned());
        let text = include_str!("../../../contracts/job_status/v1/envelope.schema.json");
        files
            .add("envelope.schema.json", serde_json::from_str(text).unwrap())
            .unwrap();
        files.compile("envelope.schema.json").unwrap()
    }

    /// The narrowed validators decide every document exactly as the whole `oneOf` does.
    #[test]
    fn a_discriminated_envelope_decides_as_the_whole_one_of() {
        let plain = job_status_envelope();
        let discriminated = job_status_envelope().discriminated_by("outcome");
        assert!(
            discriminated.is_narrowed(),
            "the bundled envelope is narrowed: {:?}",
            discriminated.narrowing_declined()
        );
        let data = json!({"project_id": "bluebird", "run_id": "run_8f3k2m9q1w7e", "state": "failed", "observed_at": "2026-11-29T11:58:00Z"});
        let error = json!({"code": "NOT_FOUND", "retryable": false});
        let base = json!({"tool": "job_status", "request_id": "req.J7q94MkP"});
        let with = |members: &[(&str, Value)]| {
            let mut document = base.clone();
            for (name, value) in members {
                document[*name] = value.clone();
            }
            document
        };
        let cases = [
            (
                with(&[("outcome", json!("success")), ("data", data.clone())]),
                true,
            ),
            (
                with(&[("outcome", json!("failure")), ("error", error.clone())]),
                true,
            ),
            (
                with(&[("outcome", json!("success")), ("error", error.clone())]),
                false,
            ),
            (
                with(&[("outcome", json!("failure")), ("data", data.clone())]),
                false,
            ),
            (
                with(&[
                    ("outcome", json!("success")),
                    ("data", data.clone()),
                    ("error", error.clone()),
                ]),
                false,
            ),
            (
                with(&[("outcome", json!("pending")), ("data", data.clone())]),
                false,
            ),
            (
                with(&[("outcome", json!(1)), ("data", data.clone())]),
                false,
            ),
            (with(&[("data", data.clone())]), false),
            (
                with(&[("outcome", json!("success")), ("data", json!({}))]),
                false,
            ),
            (
                with(&[
                    ("outcome", json!("success")),
                    ("data", data.clone()),
                    ("tool", json!("other")),
                ]),
                false,
            ),
            (json!([1, 2]), false),
            (json!("success"), false),
        ];
        for (document, expected) in cases {
            let document = Document::from_value(&document);
            let root = document.root();
            assert_eq!(plain.is_valid(root), expected, "{root}");
            assert_eq!(discriminated.is_valid(root), expected, "{root}");
        }
    }
}
