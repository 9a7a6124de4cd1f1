//! The tools the proxy offers: each a tool with a result contract in the repository, its newest
//! version compiled once. A tool's result is gated like any response: the raw response is the
//! result's `structuredContent` (or, without one, its single text block; for a text contract,
//! always the text block), decided under a request formed from the call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value, json};
use toolgate_gate::internals::{DERIVED_AGENT_SCHEMA, Node, parse_strict_json, write_json};
use toolgate_gate::{Contract, Decision, Direction, Request, Response};
use toolgate_telemetry::UpstreamFailure;

use super::schemas;
use toolgate_front::ShadowPlan;
use toolgate_repo::UsageError;
use toolgate_repo::{ARGUMENTS_SUFFIX, Repository};

/// One tool with a result contract.
#[derive(Debug)]
pub(crate) struct Tool {
    /// The compiled contract (the newest version).
    pub contract: Arc<Contract>,
    /// A candidate version decided beside it on every call (`--shadow`), never enforced.
    pub shadow: Option<Arc<Contract>>,
    /// Its `outputSchema`: what projection emits, or the fixed failure.
    pub output_schema: Value,
    /// How the audit names the upstream of its calls (`mcp tools/call NAME`), shared by every
    /// call's request rather than formatted for each.
    pub upstream: Arc<str>,
    /// The contract its calls' arguments are decided by before they are forwarded (the tool
    /// folder `NAME.arguments`), if it has one.
    pub arguments: Option<ArgumentContract>,
}

/// A tool's argument contract: an action contract over the call's `arguments` object, whose
/// projection is what the upstream receives.
#[derive(Debug)]
pub(crate) struct ArgumentContract {
    pub contract: Arc<Contract>,
    /// Its folder's name (`NAME.arguments`): the key of its trusted context.
    pub folder: String,
    /// How the audit names what its decisions guard (`mcp tools/call NAME arguments`).
    pub upstream: Arc<str>,
}

/// Every tool the proxy offers, by name.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    tools: BTreeMap<String, Tool>,
    /// The longest result a tool's contract admits, for the line cap.
    pub largest_max_bytes: usize,
}

impl Registry {
    /// Compiles the newest version of every tool with a result contract. A tool whose newest
    /// contract is an action contract is not offered (its contract gates proposals, not results).
    #[cfg(any(test, feature = "_internals"))]
    pub(crate) fn load(repository: &Repository) -> Result<Registry, UsageError> {
        Registry::load_with_shadows(repository, &ShadowPlan::default())
    }

    /// As [`Registry::load`], and each call of the tools `shadows` name decided with a candidate
    /// version too, never enforced ([`ShadowPlan`] says which).
    pub(crate) fn load_with_shadows(
        repository: &Repository,
        plan: &ShadowPlan,
    ) -> Result<Registry, UsageError> {
        Registry::load_only(repository, plan, None)
    }

    /// As [`Registry::load_with_shadows`], of one tool alone where `only` names it (its result
    /// and argument contracts; none if it has none): a door that lives for one call compiles
    /// only what that call needs, however many contracts the repository holds.
    pub(crate) fn load_only(
        repository: &Repository,
        plan: &ShadowPlan,
        only: Option<&str>,
    ) -> Result<Registry, UsageError> {
        let wanted = |folder: &str| {
            only.is_none_or(|tool| {
                folder == tool || folder.strip_suffix(ARGUMENTS_SUFFIX) == Some(tool)
            })
        };
        let mut registry = Registry::default();
        for tool in repository.tools()?.into_iter().filter(|tool| wanted(tool)) {
            let pair = plan.of(&tool);
            let enforced = match plan.enforced(&tool) {
                Some(version) => version.clone(),
                None => repository.version(&tool, None)?,
            };
            let Some(mut entry) = Registry::tool(repository, &tool, &enforced)? else {
                continue;
            };
            if let Some(pair) = pair {
                let candidate = repository.compile(&tool, &pair.candidate)?;
                // An action contract gates proposals; beside a result contract it has nothing
                // to decide.
                if candidate.direction() == Direction::Result {
                    entry.shadow = Some(Arc::new(candidate));
                }
            }
            registry.largest_max_bytes = registry.largest_max_bytes.max(entry.contract.max_bytes());
            registry.tools.insert(tool.clone(), entry);
        }
        for folder in repository
            .tools()?
            .into_iter()
            .filter(|folder| wanted(folder))
        {
            let Some(gated) = folder.strip_suffix(ARGUMENTS_SUFFIX) else {
                continue;
            };
            let version = match plan.enforced(&folder) {
                Some(version) => version.clone(),
                None => repository.version(&folder, None)?,
            };
            let contract = repository.compile(&folder, &version)?;
            let place = std::path::Path::new("contracts").join(&folder);
            if contract.direction() != Direction::Action {
                return Err(UsageError::new(format!(
                    "{}: a tool's argument contract is an action contract (direction: action), over the call's arguments object",
                    place.display()
                )));
            }
            let Some(tool) = registry.tools.get_mut(gated) else {
                return Err(UsageError::new(format!(
                    "{}: gates the arguments of {gated:?}, which has no result contract here: a call's result must be gated too, so the tool would not be offered (write contracts/{gated}/, or rename the folder)",
                    place.display()
                )));
            };
            tool.arguments = Some(ArgumentContract {
                contract: Arc::new(contract),
                folder: folder.clone(),
                upstream: Arc::from(format!("mcp tools/call {gated} arguments")),
            });
        }
        Ok(registry)
    }

    /// Every contract the proxy decides with, by the name its trusted context is kept under:
    /// each tool's result contract, and its argument contract.
    pub(crate) fn contracts(&self) -> impl Iterator<Item = (&str, &Contract)> {
        self.tools.iter().flat_map(|(name, tool)| {
            std::iter::once((name.as_str(), &*tool.contract)).chain(
                tool.arguments
                    .as_ref()
                    .map(|arguments| (arguments.folder.as_str(), &*arguments.contract)),
            )
        })
    }

    /// The entry for `tool` at `version`: its contract and the output schema of what
    /// projection emits; `None` for an action contract.
    fn tool(
        repository: &Repository,
        tool: &str,
        version: &toolgate_repo::VersionDir,
    ) -> Result<Option<Tool>, UsageError> {
        let contract = repository.compile(tool, version)?;
        if contract.direction() != Direction::Result {
            return Ok(None);
        }
        let files = repository.read_files(version)?;
        let mut documents = BTreeMap::new();
        for (name, text) in &files.schemas {
            let value = parse_strict_json(text.as_bytes(), 100).map_err(|message| {
                UsageError::new(format!("{}: {message}", files.folder.join(name).display()))
            })?;
            documents.insert(name.clone(), value);
        }
        let document = toolgate_gate::internals::contract_document(&files.contract)
            .map_err(UsageError::new)?;
        // A derived agent schema is held beside the files it refers into.
        if let Some(derived) = contract.derived_agent_schema() {
            documents.insert(DERIVED_AGENT_SCHEMA.to_owned(), derived.clone());
        }
        let agent = document["agent_schema"]
            .as_str()
            .unwrap_or(DERIVED_AGENT_SCHEMA)
            .to_owned();
        let output_schema = schemas::output_schema(tool, &agent, &documents)
            .map_err(|message| UsageError::new(format!("{}: {message}", files.folder.display())))?;
        Ok(Some(Tool {
            contract: Arc::new(contract),
            shadow: None,
            output_schema,
            upstream: Arc::from(format!("mcp tools/call {tool}")),
            arguments: None,
        }))
    }

    /// The tool called `name`, if it has a result contract.
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// Every tool, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Tool)> {
        self.tools.iter().map(|(name, tool)| (name.as_str(), tool))
    }

    /// `tools/list`'s entries: the upstream's tools that have a contract, each described by its
    /// contract, with the upstream's input schema stripped to its structure and the output schema
    /// of what projection emits. Nothing else the upstream wrote is kept.
    /// Only the tools `offers` (given each name and the upstream's descriptor) are listed.
    pub(crate) fn list(
        &self,
        upstream_tools: &[Value],
        offers: impl Fn(&str, &Value) -> bool,
    ) -> Value {
        // A tool the upstream lists twice is listed once: the first listing's input schema is
        // shown; every call to the name is gated by its one contract either way.
        let mut seen = std::collections::BTreeSet::new();
        let tools: Vec<Value> = upstream_tools
            .iter()
            .filter_map(|tool| {
                let name = tool.get("name")?.as_str()?;
                let offered = self.tools.get(name)?;
                if !offers(name, tool) || !seen.insert(name) {
                    return None;
                }
                let mut entry = json!({
                    "name": name,
                    "inputSchema": schemas::structural(
                        tool.get("inputSchema").unwrap_or(&json!({"type": "object"}))
                    ),
                    "outputSchema": offered.output_schema,
                });
                if let Some(description) = offered.contract.description() {
                    entry["description"] = Value::from(description.trim());
                }
                Some(entry)
            })
            .collect();
        json!({ "tools": tools })
    }
}

/// The outstanding request a call's result is decided under: the JSON-RPC id as the request id
/// (a string id as it is, a number as its digits), and as trusted context the call's arguments
/// the contract lets a caller supply (what the agent asked about, which binding rules hold the
/// answer to) and the operator's values for every other key (`operator`: never from the model).
pub(crate) fn request_for(
    id: &Value,
    arguments: &Value,
    tool: &Tool,
    operator: Map<String, Value>,
) -> Request {
    request_under(&tool.contract, id, arguments, operator).with_upstream(Arc::clone(&tool.upstream))
}

/// [`request_for`] without the audit's name for the upstream: the request `contract` decides a
/// call's result under.
pub(crate) fn request_under(
    contract: &Contract,
    id: &Value,
    arguments: &Value,
    operator: Map<String, Value>,
) -> Request {
    let mut context = operator;
    if let Value::Object(members) = arguments {
        for key in contract.context_from_arguments() {
            if let Some(value) = members.get(key) {
                context.insert(key.to_owned(), value.clone());
            }
        }
    }
    Request::new(request_id(id)).with_context_map(context)
}

/// A JSON-RPC id as a request id: a string as it is, a number as its digits.
fn request_id(id: &Value) -> String {
    match id {
        Value::String(text) => text.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The request a call's arguments are decided under: the JSON-RPC id, and the operator's
/// context for the argument contract (a model's proposal supplies none of its own context).
pub(crate) fn arguments_request(
    id: &Value,
    arguments: &ArgumentContract,
    operator: Map<String, Value>,
) -> Request {
    Request::new(request_id(id))
        .with_context_map(operator)
        .with_upstream(Arc::clone(&arguments.upstream))
}

/// What the gate was given for a call's result: the bytes it read, or why there were none.
pub(crate) enum Evidence {
    /// `structuredContent` (or the text block), as handed to the gate.
    Body(Vec<u8>),
    /// The tool's own error (`isError`), with its `structuredContent` if it has one: what the
    /// contract's `upstream_errors` (`tool_error: true`) map.
    ToolError(Vec<u8>),
    /// No bytes to read: why.
    Unreachable(&'static str),
}

impl Evidence {
    /// What the upstream did wrong, when the gate got no bytes from its answer: reported an
    /// error (`isError`), or answered with nothing the gate can read.
    pub(crate) fn upstream_failure(&self) -> Option<UpstreamFailure> {
        match self {
            Evidence::Body(_) => None,
            Evidence::ToolError(_) => Some(UpstreamFailure::Error),
            Evidence::Unreachable(_) => Some(UpstreamFailure::Unusable),
        }
    }

    /// The response the gate decided.
    pub(crate) fn response(&self) -> Response<'_> {
        match self {
            Evidence::Body(raw) => Response::body(raw),
            Evidence::ToolError(structured) => Response::tool_error(structured),
            Evidence::Unreachable(reason) => Response::unreachable(reason),
        }
    }
}

/// What the gate is given of a `tools/call` result.
pub(crate) fn evidence(contract: &Contract, result: &Value) -> Evidence {
    evidence_of(
        contract,
        result.get("isError") == Some(&Value::Bool(true)),
        || {
            result
                .get("structuredContent")
                .map(|structured| structured.to_string().into_bytes())
        },
        || single_text(result).map(str::to_owned),
    )
}

/// The gate's decision on a `tools/call` result (no front around it: `diff --upstream --call`).
pub(crate) fn decide(
    contract: &Contract,
    request: &Request,
    result: &Value,
    now: SystemTime,
) -> Decision {
    contract.admit_response(evidence(contract, result).response(), request, now)
}

/// [`evidence`] of a result read in place from the message's document: the same bytes handed
/// to the gate (`structuredContent` written compactly with sorted members, as serde_json writes
/// a `Value`), without building a `Value` of the result.
pub(crate) fn evidence_in_place(contract: &Contract, result: Node<'_>) -> Evidence {
    evidence_of(
        contract,
        result.get("isError").and_then(|flag| flag.as_bool()) == Some(true),
        || {
            result.get("structuredContent").map(|structured| {
                // Room for a typical tool answer, so it is written without regrowing.
                let mut bytes = Vec::with_capacity(512);
                write_json(&mut bytes, structured);
                bytes
            })
        },
        || {
            let mut blocks = result.get("content")?.elements();
            let block = blocks.next().filter(|_| blocks.next().is_none())?;
            (block.get("type")?.as_str()? == "text")
                .then(|| block.get("text")?.as_str().map(str::to_owned))?
        },
    )
}

/// What the gate reads of a result's parts: an `isError` result is the tool's own error, with
/// its `structuredContent` for the contract's `upstream_errors` to read (its text never: it is
/// the tool's prose); otherwise the gate reads `structuredContent` (a text contract: the single
/// text block), and a result that has neither is unreachable.
fn evidence_of(
    contract: &Contract,
    is_error: bool,
    structured: impl FnOnce() -> Option<Vec<u8>>,
    text: impl FnOnce() -> Option<String>,
) -> Evidence {
    if is_error {
        return Evidence::ToolError(if contract.is_text() {
            Vec::new()
        } else {
            structured().unwrap_or_default()
        });
    }
    let raw = if contract.is_text() {
        text().map(String::into_bytes)
    } else {
        structured().or_else(|| text().map(String::into_bytes))
    };
    match raw {
        Some(raw) => Evidence::Body(raw),
        None => Evidence::Unreachable(
            "the result has neither structuredContent nor a single text block",
        ),
    }
}

/// The one text block of a result's `content`, if that is all it holds.
fn single_text(result: &Value) -> Option<&str> {
    match result.get("content")?.as_array()?.as_slice() {
        [block] if block.get("type")? == "text" => block.get("text")?.as_str(),
        _ => None,
    }
}

/// The `tools/call` result the host receives: the agent bytes the gate built, as
/// `structuredContent` and as the text of one content block, and `isError` unless admitted; for
/// a modern host, also `resultType` and the proxy's identity, as that revision requires.
pub(crate) fn result_json(decision: &Decision, modern_host: bool) -> Vec<u8> {
    let agent = decision.agent_bytes();
    let mut json = Vec::with_capacity(2 * agent.len() + 160);
    json.extend_from_slice(br#"{"content":[{"type":"text","text":"#);
    // Projection builds the agent bytes as JSON text, so they are UTF-8 (checked a word at a
    // time; the lossy reading, never taken, would only stand in for a bug).
    match std::str::from_utf8(agent) {
        Ok(text) => serde_json::to_writer(&mut json, text),
        Err(_) => serde_json::to_writer(&mut json, &String::from_utf8_lossy(agent)),
    }
    .unwrap_or(());
    json.extend_from_slice(br#"}],"structuredContent":"#);
    json.extend_from_slice(agent);
    json.extend_from_slice(if decision.admitted_output().is_some() {
        br#","isError":false"#
    } else {
        br#","isError":true"#
    });
    if modern_host {
        json.extend_from_slice(br#","resultType":"complete","_meta":{"#);
        let _ = serde_json::to_writer(&mut json, crate::era::meta::SERVER_INFO);
        json.push(b':');
        let _ = serde_json::to_writer(&mut json, &crate::era::implementation());
        json.push(b'}');
    }
    json.push(b'}');
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_gate::ContractSource;

    fn contract(tool: &str) -> Contract {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/mcp/contracts")
            .join(tool)
            .join("v1");
        Contract::compile(&ContractSource::read_dir(folder).unwrap()).unwrap()
    }

    /// The result the host receives is built byte by byte; it must be the JSON the proxy
    /// promises: the agent bytes as the one text block (escaped as JSON escapes a string) and as
    /// `structuredContent`, `isError` unless admitted, and the modern revision's fields.
    #[test]
    fn the_result_a_host_receives_carries_the_agent_bytes_twice_and_nothing_else() {
        let contract = contract("weather");
        let request = Request::new("7").with_context("city", "Lisbon");
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_764_417_600);
        let admitted = contract.admit_response(
            Response::body(br#"{"city":"Lisbon","conditions":"clear","temperature_c":21.5}"#),
            &request,
            now,
        );
        let refused = contract.admit_response(Response::body(b"{}"), &request, now);
        assert!(admitted.admitted_output().is_some() && refused.admitted_output().is_none());
        for (decision, is_error) in [(&admitted, false), (&refused, true)] {
            let agent = std::str::from_utf8(decision.agent_bytes()).unwrap();
            let text = Value::from(agent);
            let legacy = format!(
                r#"{{"content":[{{"type":"text","text":{text}}}],"structuredContent":{agent},"isError":{is_error}}}"#
            );
            assert_eq!(
                String::from_utf8(result_json(decision, false)).unwrap(),
                legacy
            );
            let modern = format!(
                r#"{},"resultType":"complete","_meta":{{{}:{}}}}}"#,
                &legacy[..legacy.len() - 1],
                Value::from(crate::era::meta::SERVER_INFO),
                crate::era::implementation()
            );
            assert_eq!(
                String::from_utf8(result_json(decision, true)).unwrap(),
                modern
            );
            let parsed: Value = serde_json::from_slice(&result_json(decision, true)).unwrap();
            assert_eq!(
                parsed["structuredContent"],
                serde_json::from_str::<Value>(agent).unwrap()
            );
            assert_eq!(parsed["content"][0]["text"], agent);
        }
    }

    /// Every tool with a result contract is offered, each compiled once with its output schema
    /// and the label its audit records name the upstream by.
    #[test]
    fn the_registry_offers_each_result_contract_once() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp");
        let registry = Registry::load(&Repository::open(root).unwrap()).unwrap();
        let names: Vec<&str> = registry.iter().map(|(name, _)| name).collect();
        assert_eq!(
            names,
            ["get-structured-content", "service_state", "weather"]
        );
        let weather = registry.get("weather").unwrap();
        assert_eq!(&*weather.upstream, "mcp tools/call weather");
        assert!(weather.output_schema.is_object());
        assert!(registry.get("unknown").is_none());
        assert_eq!(
            registry.largest_max_bytes,
            registry
                .iter()
                .map(|(_, tool)| tool.contract.max_bytes())
                .max()
                .unwrap()
        );
    }

    /// The result read in place (the proxy's common path) is decided exactly as the result read
    /// as a value: the same outcome, agent bytes and audit digests (so the same bytes reached
    /// the gate), for a structured and a text contract, on every shape a result can take.
    #[test]
    fn a_result_read_in_place_is_decided_as_the_value_is() {
        let results = [
            json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"temperature_c": 21.5, "city": "Lisbon", "conditions": "clear"}}),
            json!({"structuredContent": {"city": "Porto", "conditions": "rain", "temperature_c": 12, "extra": [1, {"b": 2, "a": "é\u{1b}"}]}}),
            json!({"structuredContent": {"city": "Lisbon"}, "isError": true}),
            json!({"structuredContent": {"city": "Lisbon"}, "isError": "true"}),
            json!({"content": [{"type": "text", "text": "active\n"}]}),
            json!({"content": [{"type": "text", "text": "active"}, {"type": "text", "text": "b"}]}),
            json!({"content": [{"type": ["text"], "text": "active"}]}),
            json!({"content": {"type": "text", "text": "active"}}),
            json!({"content": [{"type": "text", "text": 7}]}),
            json!({}),
            json!({"structuredContent": null}),
        ];
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_764_417_600);
        for tool in ["weather", "service_state"] {
            let contract = contract(tool);
            let request = Request::new("7").with_context("city", "Lisbon");
            for result in &results {
                let line = serde_json::to_vec(result).unwrap();
                let document = toolgate_gate::internals::parse_document(&line, 64).unwrap();
                let by_value = decide(&contract, &request, result, now);
                let in_place = contract.admit_response(
                    evidence_in_place(&contract, document.root()).response(),
                    &request,
                    now,
                );
                assert_eq!(by_value.outcome(), in_place.outcome(), "{tool}: {result}");
                assert_eq!(by_value.agent_bytes(), in_place.agent_bytes());
                assert_eq!(
                    by_value.audit_event().to_json_line(),
                    in_place.audit_event().to_json_line(),
                    "{tool}: {result}"
                );
            }
        }
    }
}
