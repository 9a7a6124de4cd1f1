//! MCP's two eras, and what the proxy translates between them.
//!
//! The **legacy** revisions (2024-11-05 to 2025-11-25) open a session with `initialize`; the
//! **modern** one (2026-07-28) is stateless: every request carries its protocol version and the
//! client's capabilities in `_meta`, `server/discover` replaces the handshake, every result
//! carries `resultType`, and a server that needs input answers `input_required` instead of
//! sending the client a request. The proxy speaks both, to the host and to the upstream, and
//! translates where they differ (the revision's "Versioning and Compatibility" page).

use serde_json::{Map, Value, json};
use toolgate_gate::GATE_VERSION;

use super::route::Route;

/// The modern revisions the proxy speaks, preferred first.
pub(crate) const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The handshake revisions the proxy speaks, newest first.
pub(crate) const LEGACY_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The `_meta` keys that carry a modern request's protocol fields.
pub(crate) mod meta {
    /// The request's protocol version (required).
    pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities for this request (required).
    pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's self-reported name and version.
    pub(crate) const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The least log level the server should emit for this request.
    pub(crate) const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's self-reported name and version, on results.
    pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The prefix every protocol-level key shares.
    pub(crate) const PREFIX: &str = "io.modelcontextprotocol/";
}

/// The modern revision's error codes.
pub(crate) mod modern_codes {
    /// The HTTP headers disagree with the body.
    pub(crate) const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the client did not declare.
    pub(crate) const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not one the server speaks.
    pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// Every revision the proxy speaks, as `server/discover` and a version error list them.
pub(crate) fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(LEGACY_VERSIONS.iter())
        .copied()
        .collect()
}

/// Whether a text has the shape of a protocol revision (a date): the only upstream-written
/// strings a version error may relay.
pub(crate) fn looks_like_version(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(at, byte)| match at {
            4 | 7 => *byte == b'-',
            _ => byte.is_ascii_digit(),
        })
}

/// Which era a host request speaks, read from its own `_meta`: a request that names a protocol
/// version there is modern, one that does not is legacy (it relies on an `initialize`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RequestEra {
    /// A legacy request (after an `initialize`, or a host that skipped it).
    Legacy,
    /// A modern request, valid: its version and its capabilities.
    Modern {
        /// The revision it names (one the proxy speaks).
        version: String,
        /// The client's capabilities for this request, as it declared them.
        capabilities: Value,
    },
}

/// Why a request that claims the modern era cannot be served.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The proxy's own words.
    pub message: String,
    /// The error's `data`, if the code defines one.
    pub data: Option<Value>,
}

/// A refusal in the proxy's own words, without data.
pub(crate) fn plain(code: i64, message: &str) -> Refusal {
    Refusal {
        code,
        message: message.to_owned(),
        data: None,
    }
}

/// An error response line for a refusal.
pub(crate) fn refusal_line(id: &Value, refusal: &Refusal) -> Vec<u8> {
    let mut error = json!({"code": refusal.code, "message": refusal.message});
    if let Some(data) = &refusal.data {
        error["data"] = data.clone();
    }
    crate::message::error_object_line(id, &error)
}

/// The upstream's error on a request that is not a call, as the host sees it: its code, the
/// proxy's words, and for the modern revision's errors the data they define, kept to what
/// the revision defines (versions, capability names).
pub(crate) fn relayed_error(error: &Value) -> Refusal {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(crate::message::codes::INTERNAL_ERROR);
    match code {
        modern_codes::UNSUPPORTED_PROTOCOL_VERSION => Refusal {
            code,
            message: "Unsupported protocol version".to_owned(),
            data: Some(version_error_data(error.get("data"))),
        },
        modern_codes::MISSING_CLIENT_CAPABILITY => Refusal {
            code,
            message: "Missing required client capability".to_owned(),
            data: Some(missing_capability_data(error.get("data"))),
        },
        _ => plain(code, "the upstream failed this request"),
    }
}

/// Reads a host request's era from its params, validating a modern request's required fields.
pub(crate) fn request_era(params: &Value) -> Result<RequestEra, Refusal> {
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
        return Ok(RequestEra::Legacy);
    };
    let Some(version) = meta.get(meta::PROTOCOL_VERSION) else {
        return Ok(RequestEra::Legacy);
    };
    let Some(version) = version.as_str() else {
        return Err(Refusal {
            code: super::message::codes::INVALID_PARAMS,
            message: format!("`_meta.{}` must be a string", meta::PROTOCOL_VERSION),
            data: None,
        });
    };
    if !MODERN_VERSIONS.contains(&version) {
        return Err(unsupported_version(version));
    }
    let Some(capabilities) = meta
        .get(meta::CLIENT_CAPABILITIES)
        .filter(|c| c.is_object())
    else {
        return Err(Refusal {
            code: super::message::codes::INVALID_PARAMS,
            message: format!(
                "a {version} request must carry `_meta.{}` (an object)",
                meta::CLIENT_CAPABILITIES
            ),
            data: None,
        });
    };
    Ok(RequestEra::Modern {
        version: version.to_owned(),
        capabilities: capabilities.clone(),
    })
}

/// The refusal of a version the proxy does not speak, listing those it does.
pub(crate) fn unsupported_version(requested: &str) -> Refusal {
    let requested = if looks_like_version(requested) {
        Value::from(requested)
    } else {
        Value::from("(not a protocol version)")
    };
    Refusal {
        code: modern_codes::UNSUPPORTED_PROTOCOL_VERSION,
        message: "Unsupported protocol version".to_owned(),
        data: Some(json!({"supported": supported_versions(), "requested": requested})),
    }
}

/// The client capabilities the upstream is told about: only those of client-side routes the
/// operator opened (sampling, elicitation, roots; tasks as the legacy capability or the modern
/// extension). Everything else a host declares would invite the upstream to ask the host for
/// data the proxy does not pass on. The same rule for `initialize` and every modern `_meta`.
pub(crate) fn strip_client_capabilities(capabilities: &Value, allowed: &[Route]) -> Value {
    let Some(members) = capabilities.as_object() else {
        return json!({});
    };
    let mut kept = Map::new();
    for (name, value) in members {
        let opened = [
            Route::Sampling,
            Route::Elicitation,
            Route::Roots,
            Route::Tasks,
        ]
        .iter()
        .any(|route| allowed.contains(route) && route.capability() == name);
        if opened {
            kept.insert(name.clone(), value.clone());
        }
    }
    if allowed.contains(&Route::Tasks)
        && let Some(tasks) = members
            .get("extensions")
            .and_then(|extensions| extensions.get("io.modelcontextprotocol/tasks"))
    {
        kept.insert(
            "extensions".to_owned(),
            json!({"io.modelcontextprotocol/tasks": tasks}),
        );
    }
    Value::Object(kept)
}

/// The capabilities offered a host for the upstream's: tools (with the upstream's
/// `listChanged`), and the capabilities of the server-side routes the operator opened, as the
/// upstream declared them.
pub(crate) fn offered_capabilities(upstream: &Value, allowed: &[Route]) -> Value {
    let list_changed = upstream["tools"]["listChanged"] == Value::Bool(true);
    let mut capabilities = json!({"tools": {"listChanged": list_changed}});
    for route in [
        Route::Resources,
        Route::Prompts,
        Route::Completions,
        Route::Logging,
        Route::Tasks,
    ] {
        if allowed.contains(&route)
            && !route.is_client_side()
            && let Some(capability) = upstream.get(route.capability())
        {
            capabilities[route.capability()] = capability.clone();
        }
    }
    capabilities
}

/// A host request's params as the upstream receives them, in the upstream's era: the host's
/// protocol fields replaced by the proxy's (a modern upstream gets the negotiated version and
/// the stripped capabilities; a legacy upstream gets none, as its session already holds them),
/// the log level only when logging is open, every other `_meta` key (trace context, the
/// progress token the caller rewrites) as the host sent it.
pub(crate) fn params_for_upstream(
    params: Value,
    upstream: Option<&str>,
    capabilities: &Value,
    allowed: &[Route],
) -> Value {
    let mut params = match params {
        Value::Object(members) => members,
        other if upstream.is_none() => return other,
        _ => Map::new(),
    };
    let mut meta = match params.remove("_meta") {
        Some(Value::Object(meta)) => meta,
        // Nothing to rewrite: a handshake-era request without `_meta` goes as it came.
        None if upstream.is_none() => return Value::Object(params),
        _ => Map::new(),
    };
    let log_level = meta.get(meta::LOG_LEVEL).cloned();
    meta.retain(|key, _| !key.starts_with(meta::PREFIX));
    if let Some(version) = upstream {
        meta.insert(meta::PROTOCOL_VERSION.to_owned(), Value::from(version));
        meta.insert(
            meta::CLIENT_CAPABILITIES.to_owned(),
            strip_client_capabilities(capabilities, allowed),
        );
        meta.insert(meta::CLIENT_INFO.to_owned(), implementation());
        if allowed.contains(&Route::Logging)
            && let Some(level) = log_level
        {
            meta.insert(meta::LOG_LEVEL.to_owned(), level);
        }
    }
    if !meta.is_empty() {
        params.insert("_meta".to_owned(), Value::Object(meta));
    }
    Value::Object(params)
}

/// The longest `requestState` passed back to an upstream: the upstream's own opaque token,
/// which a host only echoes.
const MAX_REQUEST_STATE: usize = 64 * 1024;

/// A host's `tools/call` params as the upstream may hear them: only what the protocol defines.
/// `name` and `arguments` (the gated ones, where an argument contract rebuilt them); of `_meta`,
/// only `progressToken` (the proxy puts its own in its place), the protocol's own keys (which
/// `params_for_upstream` writes again) and the W3C trace context in its fixed shapes
/// (`traceparent`, `tracestate`: the trace a host's call continues); and, on a retry after
/// `input_required`,
/// `inputResponses` only where a route they answer is open (they carry the host's data, as
/// those routes do) and `requestState` only as the upstream's opaque string. Every other
/// member, a host's own `_meta` keys among them, is dropped.
pub(crate) fn call_params_for_upstream(params: Value, allowed: &[Route]) -> Value {
    let Value::Object(mut members) = params else {
        return params;
    };
    let mut kept = Map::new();
    for key in ["name", "arguments"] {
        if let Some(value) = members.remove(key) {
            kept.insert(key.to_owned(), value);
        }
    }
    if let Some(Value::Object(meta)) = members.remove("_meta") {
        let meta: Map<String, Value> = meta
            .into_iter()
            .filter(|(key, value)| match key.as_str() {
                "progressToken" => true,
                "traceparent" => value.as_str().is_some_and(is_traceparent),
                // W3C Trace Context §3.3: at most 32 list members, 512 characters in all.
                "tracestate" => value
                    .as_str()
                    .is_some_and(|state| state.len() <= 512 && state.is_ascii()),
                _ => key.starts_with(meta::PREFIX),
            })
            .collect();
        if !meta.is_empty() {
            kept.insert("_meta".to_owned(), Value::Object(meta));
        }
    }
    // A 2025-11-25 task-augmented call: only its time to live, a number.
    if allowed.contains(&Route::Tasks)
        && let Some(Value::Object(task)) = members.remove("task")
    {
        let mut kept_task = Map::new();
        if let Some(ttl) = task.get("ttl").filter(|ttl| ttl.as_u64().is_some()) {
            kept_task.insert("ttl".to_owned(), ttl.clone());
        }
        kept.insert("task".to_owned(), Value::Object(kept_task));
    }
    let answers_open_route = allowed.iter().any(|route| route.is_client_side());
    if answers_open_route
        && let Some(Value::Object(responses)) = members.remove("inputResponses")
        && responses.values().all(Value::is_object)
    {
        kept.insert("inputResponses".to_owned(), Value::Object(responses));
        if let Some(Value::String(state)) = members.remove("requestState")
            && state.len() <= MAX_REQUEST_STATE
        {
            kept.insert("requestState".to_owned(), Value::String(state));
        }
    }
    Value::Object(kept)
}

/// Whether `text` has the shape of a W3C `traceparent`: version, trace id, parent id and flags,
/// in lowercase hex, dash-separated (55 characters).
fn is_traceparent(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 55
        && bytes.iter().enumerate().all(|(at, byte)| match at {
            2 | 35 | 52 => *byte == b'-',
            _ => byte.is_ascii_digit() || (b'a'..=b'f').contains(byte),
        })
}

/// The proxy's own name and version, as `clientInfo` toward the upstream and `serverInfo`
/// toward the host.
pub(crate) fn implementation() -> Value {
    json!({"name": "toolgate-mcp-proxy", "version": GATE_VERSION})
}

/// The methods whose modern results carry caching hints.
fn is_cacheable(method: &str) -> bool {
    matches!(
        method,
        "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// A result the proxy built, completed for a modern host: `resultType`, the caching hints a
/// cacheable method requires (the upstream's when it gave valid ones, else "immediately stale"
/// and "private", which no cache can misuse), and the proxy's identity in `_meta`.
pub(crate) fn modern_result(method: &str, mut result: Value, hints: Option<&Value>) -> Value {
    let Some(members) = result.as_object_mut() else {
        return result;
    };
    members
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if is_cacheable(method) && members.get("resultType") == Some(&Value::from("complete")) {
        let ttl = hints
            .and_then(|hints| hints.get("ttlMs"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let scope = hints
            .and_then(|hints| hints.get("cacheScope"))
            .and_then(Value::as_str)
            .filter(|scope| matches!(*scope, "public" | "private"))
            .unwrap_or("private");
        members.insert("ttlMs".to_owned(), Value::from(ttl));
        members.insert("cacheScope".to_owned(), Value::from(scope));
    }
    let meta = members
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(meta::SERVER_INFO.to_owned(), implementation());
    }
    result
}

/// A result that passes a route the operator opened, for a host of the other era: a modern
/// host gets the modern fields; a legacy host gets it as the upstream wrote it (the modern
/// fields are unknown members to it, which every legacy revision lets a client ignore).
pub(crate) fn passthrough_result(method: &str, result: Value, modern_host: bool) -> Value {
    if !modern_host {
        return result;
    }
    let hints = result.clone();
    modern_result(method, result, Some(&hints))
}

/// The kind of result a modern upstream answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResultKind {
    /// A final result (`complete`, or no `resultType`, as the revision says a client treats it).
    Complete,
    /// The upstream needs input (sampling, elicitation, roots) before it can finish.
    InputRequired,
    /// A `resultType` the proxy does not know: invalid, as the revision says.
    Unknown,
}

/// The kind of an upstream result.
pub(crate) fn result_kind(result: &Value) -> ResultKind {
    match result.get("resultType") {
        None => ResultKind::Complete,
        Some(kind) if kind == "complete" => ResultKind::Complete,
        Some(kind) if kind == "input_required" => ResultKind::InputRequired,
        Some(_) => ResultKind::Unknown,
    }
}

/// An `input_required` result for a modern host, when the operator opened every route it asks
/// for: the input requests rebuilt (each method must be an opened client-side route), every
/// string in them escaped and capped like the upstream's log lines, `requestState` carried as
/// the opaque token it is. `None` when any request is for a route that is closed.
pub(crate) fn input_required_for_host(result: &Value, allowed: &[Route]) -> Option<Value> {
    let requests = result.get("inputRequests")?.as_object()?;
    let mut rebuilt = Map::new();
    for (key, request) in requests {
        let method = request.get("method")?.as_str()?;
        let route = Route::of_upstream_method(method)?;
        if !allowed.contains(&route) {
            return None;
        }
        rebuilt.insert(
            inert_text(key),
            json!({"method": method, "params": inert(request.get("params").unwrap_or(&Value::Null))}),
        );
    }
    let mut answer = json!({"resultType": "input_required", "inputRequests": rebuilt});
    if let Some(state) = result.get("requestState").and_then(Value::as_str) {
        answer["requestState"] = Value::from(state);
    }
    Some(answer)
}

/// How much of one upstream-written string reaches the host on an opened route.
const TEXT_CAP: usize = 2000;

/// Upstream text made inert: control and bidi characters shown as escapes, length capped.
fn inert_text(text: &str) -> String {
    super::lines::inert(text, TEXT_CAP)
}

/// Every string in a value made inert, keys included, for a request the proxy itself sends a
/// host on an opened route.
pub(crate) fn inert_value(value: &Value) -> Value {
    inert(value)
}

/// Every string in a value made inert, keys included.
fn inert(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::from(inert_text(text)),
        Value::Array(items) => Value::Array(items.iter().map(inert).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, value)| (inert_text(key), inert(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A version error's `data` as the host may see it: the versions only, each one a date.
pub(crate) fn version_error_data(data: Option<&Value>) -> Value {
    let versions = |key: &str| -> Vec<Value> {
        data.and_then(|data| data.get(key))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|text| looks_like_version(text))
            .map(Value::from)
            .collect()
    };
    let mut relayed = json!({"supported": versions("supported")});
    if let Some(requested) = data
        .and_then(|data| data.get("requested"))
        .and_then(Value::as_str)
        .filter(|text| looks_like_version(text))
    {
        relayed["requested"] = Value::from(requested);
    }
    relayed
}

/// A missing-capability error's `data` as the host may see it: the capability names the
/// revision defines, nothing the upstream wrote beyond them.
pub(crate) fn missing_capability_data(data: Option<&Value>) -> Value {
    const KNOWN: [&str; 5] = ["sampling", "elicitation", "roots", "tasks", "extensions"];
    let required: Map<String, Value> = data
        .and_then(|data| data.get("requiredCapabilities"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, _)| KNOWN.contains(&name.as_str()))
        .map(|(name, _)| (name.clone(), json!({})))
        .collect();
    json!({"requiredCapabilities": required})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of a host's call, the upstream hears only what the protocol defines: a host's own
    /// `_meta` keys and unknown members are dropped, `inputResponses` pass only where a route
    /// they answer is open, and `requestState` only as a string beside them.
    #[test]
    fn a_call_carries_only_what_the_protocol_defines() {
        let params = json!({
            "name": "weather", "arguments": {"city": "Oslo"},
            "_meta": {"progressToken": 7, "x-exfiltrate": "secret", "io.modelcontextprotocol/logLevel": "debug",
                      "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                      "baggage": "user=secret"},
            "surprise": {"data": "secret"},
            "inputResponses": {"login": {"action": "accept", "content": {"name": "octocat"}}},
            "requestState": "opaque",
        });
        let closed = call_params_for_upstream(params.clone(), &[]);
        assert_eq!(
            closed,
            json!({"name": "weather", "arguments": {"city": "Oslo"},
                   "_meta": {"progressToken": 7, "io.modelcontextprotocol/logLevel": "debug",
                             "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
        );
        let open = call_params_for_upstream(params.clone(), &[Route::Elicitation]);
        assert_eq!(open["inputResponses"]["login"]["action"], "accept");
        assert_eq!(open["requestState"], "opaque");
        assert!(open.get("surprise").is_none() && open["_meta"].get("x-exfiltrate").is_none());
        // A route that answers nothing (resources) opens nothing; a state that is not a string
        // is dropped; responses that are not objects are dropped whole.
        assert!(
            call_params_for_upstream(params.clone(), &[Route::Resources])
                .get("inputResponses")
                .is_none()
        );
        let mut odd = params;
        odd["requestState"] = json!({"not": "a string"});
        assert!(
            call_params_for_upstream(odd.clone(), &[Route::Elicitation])
                .get("requestState")
                .is_none()
        );
        odd["inputResponses"]["login"] = json!("plain text");
        assert!(
            call_params_for_upstream(odd, &[Route::Elicitation])
                .get("inputResponses")
                .is_none()
        );
    }

    fn modern(version: &str, capabilities: Value) -> Value {
        json!({"_meta": {meta::PROTOCOL_VERSION: version, meta::CLIENT_CAPABILITIES: capabilities}})
    }

    #[test]
    fn a_request_is_modern_only_when_its_meta_names_a_version() {
        assert_eq!(request_era(&json!({})), Ok(RequestEra::Legacy));
        assert_eq!(
            request_era(&json!({"_meta": {"progressToken": 1}})),
            Ok(RequestEra::Legacy)
        );
        assert_eq!(
            request_era(&modern("2026-07-28", json!({"roots": {}}))),
            Ok(RequestEra::Modern {
                version: "2026-07-28".to_owned(),
                capabilities: json!({"roots": {}})
            })
        );
        let unknown = request_era(&modern("2099-01-01", json!({}))).unwrap_err();
        assert_eq!(unknown.code, modern_codes::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(unknown.data.unwrap()["supported"][0], "2026-07-28");
        let hostile = request_era(&modern("\u{1b}[31m", json!({}))).unwrap_err();
        assert_eq!(
            hostile.data.unwrap()["requested"],
            "(not a protocol version)"
        );
        let missing =
            request_era(&json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}})).unwrap_err();
        assert_eq!(missing.code, -32602);
    }

    #[test]
    fn capabilities_keep_only_opened_client_routes() {
        let declared = json!({"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": true},
            "experimental": {"x": 1}, "extensions": {"io.modelcontextprotocol/tasks": {}, "com.example/ui": {}}});
        assert_eq!(strip_client_capabilities(&declared, &[]), json!({}));
        assert_eq!(
            strip_client_capabilities(&declared, &[Route::Elicitation, Route::Tasks]),
            json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
    }

    #[test]
    fn params_carry_the_upstreams_protocol_fields_only() {
        let params = json!({"name": "weather", "_meta": {meta::PROTOCOL_VERSION: "2026-07-28",
            meta::CLIENT_CAPABILITIES: {"sampling": {}}, meta::LOG_LEVEL: "debug", "traceparent": "00-1"}});
        let legacy = params_for_upstream(params, None, &json!({"sampling": {}}), &[]);
        assert_eq!(
            legacy,
            json!({"name": "weather", "_meta": {"traceparent": "00-1"}})
        );
        let modern = params_for_upstream(
            json!({"name": "w"}),
            Some("2026-07-28"),
            &json!({"sampling": {}}),
            &[],
        );
        assert_eq!(modern["_meta"][meta::CLIENT_CAPABILITIES], json!({}));
        assert_eq!(modern["_meta"][meta::PROTOCOL_VERSION], "2026-07-28");
        assert!(modern["_meta"].get(meta::LOG_LEVEL).is_none());
    }

    #[test]
    fn modern_results_carry_result_type_and_valid_caching_hints() {
        let listed = modern_result(
            "tools/list",
            json!({"tools": []}),
            Some(&json!({"ttlMs": -5, "cacheScope": "CANARY"})),
        );
        assert_eq!(listed["resultType"], "complete");
        assert_eq!(listed["ttlMs"], 0);
        assert_eq!(listed["cacheScope"], "private");
        let called = modern_result("tools/call", json!({"content": []}), None);
        assert!(called.get("ttlMs").is_none());
        assert_eq!(
            called["_meta"][meta::SERVER_INFO]["name"],
            "toolgate-mcp-proxy"
        );
    }

    #[test]
    fn input_requests_pass_only_for_opened_routes_and_inert() {
        let result = json!({"resultType": "input_required", "requestState": "opaque",
            "inputRequests": {"login": {"method": "elicitation/create", "params": {"message": "who?\u{202e}", "mode": "form"}}}});
        assert_eq!(input_required_for_host(&result, &[]), None);
        let passed = input_required_for_host(&result, &[Route::Elicitation]).unwrap();
        assert_eq!(passed["requestState"], "opaque");
        assert!(!passed.to_string().contains('\u{202e}'));
    }

    #[test]
    fn version_errors_relay_versions_only() {
        let data =
            json!({"supported": ["2026-07-28", "CANARY", "2025-11-25"], "requested": "CANARY"});
        assert_eq!(
            version_error_data(Some(&data)),
            json!({"supported": ["2026-07-28", "2025-11-25"]})
        );
        assert_eq!(
            missing_capability_data(Some(
                &json!({"requiredCapabilities": {"sampling": {"CANARY": 1}, "CANARY": {}}})
            )),
            json!({"requiredCapabilities": {"sampling": {}}})
        );
    }
}
