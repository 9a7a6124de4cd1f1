//! `toolgate diff TOOL --upstream -- SERVER`: a server checked against its consumers' contract
//! before it ships. The server's declared `outputSchema` for the tool (what its results'
//! `structuredContent` may be, which is what the gate reads) is put in place of the contract's
//! own schema, and the two are compared like two versions: FROM is the contract, TO the contract
//! as the server declares it. `upstream_loosened` then means "the server may send what this
//! contract refuses", shown by a response the gate decides both ways. With `--call`, the tool is
//! called live with the arguments of its argument contract's accepted fixtures (and any
//! `--arguments`), and each result is decided as `toolgate mcp-proxy` would decide it.
//!
//! This crate does not talk to servers: the binary asks the server (through `toolgate_mcp`)
//! between [`plan`] and [`UpstreamPlan::check`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use toolgate_gate::internals::subschemas;
use toolgate_gate::{Contract, Decision};
use toolgate_model::{Version, load};
use toolgate_repo::{
    ARGUMENTS_SUFFIX, FIXTURES_DIR, FixtureClass, Repository, UsageError, discover_tool,
    parse_request_file,
};

use crate::answer::{Answer, LiveCall, Report, ServerFacts};
use crate::change::BumpVerdict;
use crate::compare::compare_loaded;
use crate::witness::Seen;

/// The name the report gives the contract as the server declares it.
pub const SERVER: &str = "server";

/// The file the server's `outputSchema` is held as, beside the contract's own files.
const SERVER_SCHEMA_FILE: &str = "server.output.schema.json";

/// The most calls one check makes: each starts a live request on the server.
const MAX_CALLS: usize = 64;

/// What is checked, before the server is asked.
pub struct UpstreamPlan {
    repository: Repository,
    tool: String,
    version: Version,
    folder: PathBuf,
    /// Each call to make: where its arguments came from, and the arguments.
    calls: Vec<(String, Value)>,
    /// The trusted context of the tool's request file, for the calls' decisions.
    context: Map<String, Value>,
}

/// Reads the contract to check (`version`, default the newest) and, when `call` is set, the
/// arguments of each live call: the tool's argument contract's accepted fixtures
/// (`fixtures/TOOL.arguments/accepted/*.json`), then each of `arguments` (JSON objects).
pub fn plan(
    root: &Path,
    tool: &str,
    version: Option<&str>,
    call: bool,
    arguments: &[String],
) -> Result<UpstreamPlan, UsageError> {
    let repository = Repository::open(root)?.naming_relative();
    plan_in(repository, tool, version, call, arguments)
}

/// A plan for every tool the proxy would offer from this repository (each tool with a result
/// contract, its newest version; argument contracts and action contracts gate proposals, which
/// a server's `outputSchema` does not describe), for a server whose every tool is checked at
/// once. With `call`, each tool is called with its argument contract's accepted fixtures; a tool
/// without any is compared only, and it is an error only when no tool has one.
pub fn plan_every_tool(root: &Path, call: bool) -> Result<Vec<UpstreamPlan>, UsageError> {
    let repository = Repository::open(root)?.naming_relative();
    let mut plans = Vec::new();
    for tool in repository.tools()? {
        if tool.ends_with(ARGUMENTS_SUFFIX) {
            continue;
        }
        let callable = call && !argument_fixtures(&repository, &tool)?.is_empty();
        let plan = plan_in(repository.clone(), &tool, None, callable, &[])?;
        if plan.version.contract.direction() == toolgate_gate::Direction::Result {
            plans.push(plan);
        }
    }
    if plans.is_empty() {
        return Err(UsageError::new(format!(
            "{}: no tool has a result contract to check the server against (write one with `toolgate new`)",
            repository.contracts_dir().display()
        )));
    }
    if call && plans.iter().all(|plan| plan.calls.is_empty()) {
        return Err(UsageError::new(
            "--call: no tool has an argument contract with accepted fixtures to call it with (fixtures/TOOL.arguments/accepted/*.json); name one tool to call it with --arguments JSON",
        ));
    }
    Ok(plans)
}

fn plan_in(
    repository: Repository,
    tool: &str,
    version: Option<&str>,
    call: bool,
    arguments: &[String],
) -> Result<UpstreamPlan, UsageError> {
    let published = repository.versions(tool)?;
    let names: Vec<String> = published.iter().map(|version| version.name()).collect();
    let dir = match version {
        None => published.last().cloned(),
        Some(name) => published
            .iter()
            .find(|version| version.name() == name)
            .cloned(),
    }
    .ok_or_else(|| {
        UsageError::new(format!(
            "tool `{tool}` has no contract version {:?} (published: {})",
            version.unwrap_or("(any)"),
            names.join(", ")
        ))
    })?;
    let loaded = load(&repository, tool, &dir)?;
    let folder = repository.root().shown(&dir.path);
    let context = request_context(&repository, tool)?;
    let mut calls = Vec::new();
    if call {
        calls.extend(argument_fixtures(&repository, tool)?);
        for (index, text) in arguments.iter().enumerate() {
            let value: Value = serde_json::from_str(text).map_err(|error| {
                UsageError::new(format!(
                    "--arguments #{}: not JSON ({error}); give the call's arguments as a JSON object, e.g. '{{\"city\": \"Lisbon\"}}'",
                    index + 1
                ))
            })?;
            if !value.is_object() {
                return Err(UsageError::new(format!(
                    "--arguments #{}: a tool's arguments are a JSON object, not {}",
                    index + 1,
                    kind_of(&value)
                )));
            }
            calls.push((format!("--arguments #{}", index + 1), value));
        }
        if calls.is_empty() {
            return Err(UsageError::new(format!(
                "--call: nothing to call `{tool}` with: add accepted fixtures to its argument contract (fixtures/{tool}.arguments/accepted/*.json), or give --arguments JSON"
            )));
        }
        if calls.len() > MAX_CALLS {
            return Err(UsageError::new(format!(
                "--call: {} calls asked; at most {MAX_CALLS} are made in one check",
                calls.len()
            )));
        }
    } else if !arguments.is_empty() {
        return Err(UsageError::new(
            "--arguments gives a live call's arguments: add --call",
        ));
    }
    Ok(UpstreamPlan {
        repository,
        tool: tool.to_owned(),
        version: loaded,
        folder,
        calls,
        context,
    })
}

impl UpstreamPlan {
    /// The tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The compiled contract every live result is decided by.
    pub fn contract(&self) -> &Arc<Contract> {
        &self.version.contract
    }

    /// Each call's arguments, in order.
    pub fn call_arguments(&self) -> impl Iterator<Item = &Value> {
        self.calls.iter().map(|(_, arguments)| arguments)
    }

    /// The trusted context live results are decided under (the tool's request file's).
    pub fn context(&self) -> &Map<String, Value> {
        &self.context
    }

    /// The report: the contract compared with itself as the server declares it
    /// (`output_schema`: `None` when the server does not list the tool, `Some(None)` when it
    /// lists it without one), and each live call's decision, in the order of
    /// [`call_arguments`](Self::call_arguments).
    pub fn check(
        &self,
        server: &str,
        output_schema: Option<Option<&Value>>,
        decided: Vec<Result<Decision, String>>,
        search: bool,
    ) -> Report {
        let facts = ServerFacts {
            server: server.to_owned(),
            listed: output_schema.is_some(),
            declares_output_schema: matches!(output_schema, Some(Some(_))),
            calls: self
                .calls
                .iter()
                .zip(decided)
                .map(|((from, _), decided)| LiveCall {
                    arguments_from: from.clone(),
                    decided: decided.map(|decision| Seen::of(&decision)),
                })
                .collect(),
        };
        let undecided = |why: String| self.undecided(why, facts.clone());
        match output_schema {
            None => undecided(format!(
                "the server does not list `{}`: its consumers' calls would fail",
                self.tool
            )),
            Some(None) => undecided(
                "the server declares no outputSchema for the tool, so nothing it may send can be compared; --call shows what it does send".to_owned(),
            ),
            Some(Some(_)) if self.version.contract.is_text() => undecided(
                "the contract reads the result's text block, and an outputSchema describes structuredContent".to_owned(),
            ),
            Some(Some(schema)) => match self.version.with_shape_schema(
                SERVER,
                SERVER_SCHEMA_FILE,
                as_2020_12(schema.clone()),
                &self.folder,
            ) {
                Ok(declared) => {
                    let mut report = compare_loaded(
                        &self.repository,
                        &self.tool,
                        &self.version,
                        &declared,
                        search,
                    );
                    report.server = Some(facts);
                    report
                }
                Err(why) => undecided(format!(
                    "the server's outputSchema, put in place of the contract's schema, does not compile: {why}"
                )),
            },
        }
    }

    /// A report with every verdict undecided for `why`, and no changes.
    fn undecided(&self, why: String, facts: ServerFacts) -> Report {
        Report {
            tool: self.tool.clone(),
            from: self.version.name.clone(),
            to: SERVER.to_owned(),
            answers: BumpVerdict::ALL
                .iter()
                .map(|verdict| Answer {
                    verdict: *verdict,
                    value: None,
                    reasons: vec![why.clone()],
                    witness: None,
                })
                .collect(),
            changes: Vec::new(),
            replayed: 0,
            replay: Vec::new(),
            traffic: None,
            server: Some(facts),
        }
    }
}

/// The context of the tool's request file (`fixtures/TOOL/request.json`), empty without one.
fn request_context(repository: &Repository, tool: &str) -> Result<Map<String, Value>, UsageError> {
    let file = Path::new(FIXTURES_DIR).join(tool).join("request.json");
    let root = repository.root();
    if !matches!(root.kind(&file), Ok(toolgate_repo::EntryKind::File)) {
        return Ok(Map::new());
    }
    let text = root.read_text(&file).map_err(UsageError::new)?;
    Ok(parse_request_file(text.as_bytes(), &root.shown(&file))?.context)
}

/// The accepted fixtures of the tool's argument contract, each a call's arguments.
fn argument_fixtures(
    repository: &Repository,
    tool: &str,
) -> Result<Vec<(String, Value)>, UsageError> {
    let root = repository.root();
    let mut calls = Vec::new();
    for fixture in discover_tool(root, &format!("{tool}.arguments")).fixtures {
        if fixture.class != FixtureClass::Accepted {
            continue;
        }
        let shown = root.shown(&fixture.raw).display().to_string();
        let text = root.read_text(&fixture.raw).map_err(UsageError::new)?;
        let value: Value = serde_json::from_str(&text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                UsageError::new(format!(
                    "{shown}: an accepted argument fixture is a JSON object of a call's arguments"
                ))
            })?;
        calls.push((shown, value));
    }
    Ok(calls)
}

/// The JSON Schema dialects before 2020-12 an `outputSchema` may name in `$schema`: many
/// servers' SDKs write draft-07 (zod's converter does).
const EARLIER_DIALECTS: [&str; 5] = [
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-04/schema#",
    "https://json-schema.org/draft/2019-09/schema",
];

/// A schema that names an earlier dialect, written in the 2020-12 the gate reads, keyword for
/// keyword where they differ in form only: `items` as a list is `prefixItems` (and
/// `additionalItems` then `items`), `dependencies` is `dependentRequired` or
/// `dependentSchemas`, and `$schema` goes. `definitions` stays where it is (a `$ref` to it is a
/// JSON pointer). A schema that names no earlier dialect, or something it cannot write this way,
/// is left as it is: the gate then says what it refuses.
fn as_2020_12(schema: Value) -> Value {
    let earlier = schema
        .get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|dialect| EARLIER_DIALECTS.contains(&dialect));
    if !earlier {
        return schema;
    }
    let mut schema = schema;
    if let Value::Object(members) = &mut schema {
        members.remove("$schema");
    }
    rewrite(schema, 0)
}

/// One subschema rewritten, and every subschema in it, up to a depth no real schema reaches.
fn rewrite(schema: Value, depth: usize) -> Value {
    let Value::Object(mut members) = schema else {
        return schema;
    };
    if depth > 64 {
        return Value::Object(members);
    }
    if let Some(Value::Array(list)) = members.get("items").cloned() {
        members.insert("prefixItems".to_owned(), Value::Array(list));
        match members.remove("additionalItems") {
            Some(rest) => members.insert("items".to_owned(), rest),
            None => members.remove("items"),
        };
    }
    if let Some(Value::Object(dependencies)) = members.remove("dependencies") {
        let (required, schemas): (Map<String, Value>, Map<String, Value>) = dependencies
            .into_iter()
            .partition(|(_, value)| value.is_array());
        if !required.is_empty() {
            members.insert("dependentRequired".to_owned(), Value::Object(required));
        }
        if !schemas.is_empty() {
            members.insert("dependentSchemas".to_owned(), Value::Object(schemas));
        }
    }
    for keyword in subschemas::ONE {
        if let Some(value) = members.remove(keyword) {
            members.insert(keyword.to_owned(), rewrite(value, depth + 1));
        }
    }
    for keyword in subschemas::LISTS {
        if let Some(Value::Array(list)) = members.remove(keyword) {
            let list = list.into_iter().map(|value| rewrite(value, depth + 1));
            members.insert(keyword.to_owned(), Value::Array(list.collect()));
        }
    }
    for keyword in subschemas::MAPS {
        if let Some(Value::Object(map)) = members.remove(keyword) {
            let map = map
                .into_iter()
                .map(|(name, value)| (name, rewrite(value, depth + 1)));
            members.insert(keyword.to_owned(), Value::Object(map.collect()));
        }
    }
    Value::Object(members)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_earlier_dialect_is_written_as_2020_12_keyword_for_keyword() {
        let draft_07 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "pair": {"type": "array", "items": [{"type": "string"}, {"$ref": "#/definitions/n"}], "additionalItems": false},
                "list": {"type": "array", "items": {"type": "string"}},
                "enum_of_objects": {"enum": [{"items": [1]}]}
            },
            "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
            "definitions": {"n": {"type": "number"}}
        });
        assert_eq!(
            as_2020_12(draft_07),
            json!({
                "type": "object",
                "properties": {
                    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"$ref": "#/definitions/n"}], "items": false},
                    "list": {"type": "array", "items": {"type": "string"}},
                    "enum_of_objects": {"enum": [{"items": [1]}]}
                },
                "dependentRequired": {"a": ["b"]},
                "dependentSchemas": {"c": {"required": ["d"]}},
                "definitions": {"n": {"type": "number"}}
            })
        );
        // 2020-12, or no dialect named: as it is.
        let modern = json!({"items": [1], "dependencies": {}});
        assert_eq!(as_2020_12(modern.clone()), modern);
    }
}
