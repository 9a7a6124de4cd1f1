//! The HTTP listener as an OAuth resource server (`--auth`), over real HTTP: every kind of bad
//! token refused with the right status and challenge and no upstream call, the right one
//! served, the metadata document held to RFC 9728, per-tool scopes in `tools/call` and in
//! `tools/list`, the caller in the audit, keys fetched from a URL and rotated, the caller's
//! token never sent upstream, and per-caller rate limits.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::http::{fake_http, http_exchange, listening_proxy, listening_proxy_to};
use super::{LOG_VARIABLE, SCENARIO_VARIABLE};

/// The resource the tests' proxy is: what a token's `aud` must name.
const RESOURCE: &str = "https://toolgate.test/mcp";
const ISSUER: &str = "https://auth.test";

/// An Ed25519 key made for the test from a fixed seed.
struct Key {
    kid: &'static str,
    seed: [u8; 32],
}

impl Key {
    const fn new(kid: &'static str, fill: u8) -> Key {
        Key {
            kid,
            seed: [fill; 32],
        }
    }

    /// Its public half, as a JWK.
    fn jwk(&self) -> Value {
        let public = ed25519_dalek::SigningKey::from_bytes(&self.seed)
            .verifying_key()
            .to_bytes();
        json!({
            "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": self.kid,
            "x": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public),
        })
    }

    /// A token signed by this key, its header naming `kid` (if any) and carrying `extra`.
    fn sign(&self, claims: &Value, kid: Option<&str>, extra: Option<(&str, Value)>) -> String {
        // PKCS#8 for an Ed25519 seed: a fixed prefix, then the 32 bytes.
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&self.seed);
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = kid.map(str::to_owned);
        if let Some(("jwk", jwk)) = &extra {
            header.jwk = Some(serde_json::from_value(jwk.clone()).unwrap());
        }
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der)).unwrap()
    }
}

const GOOD: Key = Key::new("k1", 7);
const STRANGER: Key = Key::new("k1", 9);
const ROTATED: Key = Key::new("k2", 11);

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The claims of a token for this resource, with `scope`, changed by `edit`.
fn claims(subject: &str, scope: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut claims = json!({
        "iss": ISSUER, "aud": RESOURCE, "sub": subject, "scope": scope,
        "iat": now(), "exp": now() + 600,
    });
    edit(&mut claims);
    claims
}

fn jwks(keys: &[&Key]) -> String {
    json!({"keys": keys.iter().map(|key| key.jwk()).collect::<Vec<_>>()}).to_string()
}

/// `auth.yaml` in `dir`, its keys from `jwks`.
fn auth_file(dir: &Path, jwks: &str) -> String {
    let path = dir.join("auth.yaml");
    std::fs::write(
        &path,
        format!(
            "resource: {RESOURCE}\nauthorization_servers: [{ISSUER}]\njwks: {jwks}\nalgorithms: [EdDSA, ES256]\nleeway: 5s\nscopes: [mcp]\ntools:\n  weather:\n    scopes: [weather:read]\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// A handshake-era server with the weather tool answering every call.
fn scenario(dir: &Path) -> std::path::PathBuf {
    let call = json!({"result": {"content": [], "structuredContent": {"city": "Oslo", "temperature_c": 3.5, "conditions": "snow"}}});
    let scenario = json!({
        "server": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
            "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]
        },
        "calls": {"weather": vec![call; 8]}
    });
    let path = dir.join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    path
}

fn bearer(token: &str) -> Vec<(String, String)> {
    vec![("Authorization".to_owned(), format!("Bearer {token}"))]
}

fn call(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Oslo"}}}).to_string()
}

fn list(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}).to_string()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(found, _)| found == name)
        .map(|(_, value)| value.as_str())
}

/// How many `tools/call`s the upstream has received.
fn upstream_calls(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("\"tools/call\""))
        .count()
}

/// A refusal: `status`, a `WWW-Authenticate` naming the metadata and holding `needle`, and
/// no new upstream call.
fn refused(
    address: &str,
    log: &Path,
    what: &str,
    headers: &[(String, String)],
    status: u16,
    needle: &str,
) -> Result<(), Failed> {
    let before = upstream_calls(log);
    let (got, answer_headers, body) = http_exchange(address, "POST", "/mcp", &call(9), headers)?;
    let challenge = header(&answer_headers, "www-authenticate").unwrap_or_default();
    if got != status
        || !challenge.starts_with("Bearer resource_metadata=\"https://toolgate.test/.well-known/oauth-protected-resource/mcp\"")
        || !challenge.contains(needle)
    {
        return Err(format!(
            "{what}: wanted {status} with a challenge holding {needle:?}; got {got}, {challenge:?}, {body}"
        )
        .into());
    }
    // The body is the JSON-RPC error shape, never the tool's.
    let body: Value = serde_json::from_str(&body).map_err(|error| format!("{what}: {error}"))?;
    if body["error"]["message"].as_str().is_none() {
        return Err(format!("{what}: no JSON-RPC error: {body}").into());
    }
    if upstream_calls(log) != before {
        return Err(format!("{what}: the upstream was called").into());
    }
    Ok(())
}

/// Every bad token refused, the good one served, per-tool scopes, the metadata, the audit.
pub(crate) fn bad_tokens_are_refused_and_the_right_one_served() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("jwks.json"), jwks(&[&GOOD]))?;
    let auth = auth_file(dir.path(), "jwks.json");
    let log = dir.path().join("upstream.log");
    let audit = dir.path().join("audit.jsonl");
    let scenario = scenario(dir.path());
    let scrape_token = "scrape-token-0123456789";
    let token_file = dir.path().join("metrics.token");
    std::fs::write(&token_file, format!("{scrape_token}\n"))?;
    let collector = super::telemetry::Collector::start();
    let (_proxy, address, _stderr) = listening_proxy(
        &[
            "--auth",
            &auth,
            "--audit",
            audit.to_str().unwrap(),
            "--metrics-token-file",
            token_file.to_str().unwrap(),
            "--otlp-endpoint",
            &collector.endpoint(),
            "--otlp-protocol",
            "http/json",
        ],
        &[std::env::current_exe().unwrap().display().to_string()],
        &[
            (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
            (LOG_VARIABLE, log.to_str().unwrap()),
        ],
    )?;

    // RFC 9728 §2 and §3: the metadata, at the path the resource's path is inserted into, and
    // at the bare well-known path; no token needed.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, headers, body) = http_exchange(&address, "GET", path, "", &[])?;
        let metadata: Value = serde_json::from_str(&body)?;
        let urls = |field: &str| {
            metadata[field].as_array().is_some_and(|values| {
                !values.is_empty()
                    && values.iter().all(|value| {
                        value
                            .as_str()
                            .is_some_and(|url| url.starts_with("https://"))
                    })
            })
        };
        let strings = |field: &str| {
            metadata[field]
                .as_array()
                .is_some_and(|values| values.iter().all(Value::is_string))
        };
        let ok = status == 200
            && header(&headers, "content-type") == Some("application/json")
            && metadata["resource"] == RESOURCE
            && urls("authorization_servers")
            && strings("scopes_supported")
            && metadata["scopes_supported"] == json!(["mcp", "weather:read"])
            && metadata["bearer_methods_supported"]
                .as_array()
                .is_some_and(|methods| {
                    methods.iter().all(|method| {
                        ["header", "body", "query"].contains(&method.as_str().unwrap_or(""))
                    })
                })
            && metadata["bearer_methods_supported"] == json!(["header"])
            && strings("resource_signing_alg_values_supported")
            && metadata["resource_name"].is_string();
        if !ok {
            return Err(format!("the metadata at {path}: {status} {headers:?} {metadata}").into());
        }
    }

    let good = claims("agent-1", "mcp weather:read", |_| {});
    let signed = |edit: fn(&mut Value)| {
        let mut claims = good.clone();
        edit(&mut claims);
        bearer(&GOOD.sign(&claims, Some("k1"), None))
    };
    let unsigned = {
        let encode = |value: Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
        };
        format!(
            "{}.{}.",
            encode(json!({"alg": "none", "typ": "JWT"})),
            encode(good.clone())
        )
    };
    let no_scope = claims("agent-2", "mcp", |_| {});
    // What is sent, its headers, the status wanted and what the challenge must say.
    type Case<'a> = (&'a str, Vec<(String, String)>, u16, &'a str);
    let cases: Vec<Case> = vec![
        ("no token", Vec::new(), 401, "resource_metadata"),
        (
            "another scheme",
            vec![("Authorization".to_owned(), "Basic YTpi".to_owned())],
            401,
            "resource_metadata",
        ),
        ("not a JWT", bearer("abc.def"), 401, "invalid_token"),
        (
            "an expired token",
            signed(|claims| claims["exp"] = json!(now() - 120)),
            401,
            "expired",
        ),
        (
            "a token for another audience",
            signed(|claims| claims["aud"] = json!("https://another.test/mcp")),
            401,
            "another audience",
        ),
        (
            "a token from another issuer",
            signed(|claims| claims["iss"] = json!("https://evil.test")),
            401,
            "another issuer",
        ),
        (
            "a token signed by an unknown key under a known kid",
            bearer(&STRANGER.sign(&good, Some("k1"), None)),
            401,
            "signature",
        ),
        (
            "a token signed by an unknown key",
            bearer(&ROTATED.sign(&good, Some("k2"), None)),
            401,
            "does not hold",
        ),
        // The token names its own key: it is never used.
        (
            "a token carrying its own key",
            bearer(&STRANGER.sign(&good, None, Some(("jwk", STRANGER.jwk())))),
            401,
            "invalid_token",
        ),
        ("alg: none", bearer(&unsigned), 401, "invalid_token"),
        (
            "a token without the tool's scope",
            bearer(&GOOD.sign(&no_scope, Some("k1"), None)),
            403,
            "error=\"insufficient_scope\", scope=\"mcp weather:read\"",
        ),
        (
            "a token without the endpoint's scope",
            bearer(&GOOD.sign(&claims("agent-3", "weather:read", |_| {}), Some("k1"), None)),
            403,
            "scope=\"mcp\"",
        ),
    ];
    for (what, headers, status, needle) in &cases {
        refused(&address, &log, what, headers, *status, needle)?;
    }
    // Under --auth, the metrics are the scrape token's holder's alone.
    for headers in [
        Vec::new(),
        bearer("not-the-scrape-token"),
        bearer(&GOOD.sign(&good, Some("k1"), None)),
    ] {
        let (status, _, _) = http_exchange(&address, "GET", "/metrics", "", &headers)?;
        if status != 401 {
            return Err(format!("/metrics without the scrape token: {status}").into());
        }
    }
    // Each refusal counted by its status, and nothing else.
    let (status, _, exposition) =
        http_exchange(&address, "GET", "/metrics", "", &bearer(scrape_token))?;
    let samples = toolgate_telemetry::parse_exposition(&exposition);
    let refused_with = |wanted: &str| -> f64 {
        samples
            .iter()
            .filter(|sample| {
                sample.name == "toolgate_caller_refusals_total"
                    && sample
                        .labels
                        .iter()
                        .any(|(label, value)| label == "status" && value == wanted)
            })
            .map(|sample| sample.value)
            .sum()
    };
    for wanted in [401, 403] {
        let cases = cases.iter().filter(|case| case.2 == wanted).count() as f64;
        if status != 200 || refused_with(&wanted.to_string()) != cases {
            return Err(format!("{wanted} refusals are not {cases} in:\n{exposition}").into());
        }
    }
    if !exposition.contains("reason=\"missing_token\"")
        || !exposition.contains("reason=\"invalid_token\"")
        || !exposition.contains("reason=\"insufficient_scope\"")
    {
        return Err(format!("a refusal's reason is not counted:\n{exposition}").into());
    }

    // The right token: served, twice (the second from the cache), and listed.
    let token = GOOD.sign(&good, Some("k1"), None);
    for id in [1, 2] {
        let (status, _, body) =
            http_exchange(&address, "POST", "/mcp", &call(id), &bearer(&token))?;
        let body: Value = serde_json::from_str(&body)?;
        if status != 200 || body["result"]["structuredContent"]["data"]["city"] != "Oslo" {
            return Err(format!("the right token was not served: {status} {body}").into());
        }
    }
    if upstream_calls(&log) != 2 {
        return Err("the right token's calls did not reach the upstream".into());
    }
    let listed = |token: &str| -> Result<Vec<String>, Failed> {
        let (_, _, body) = http_exchange(&address, "POST", "/mcp", &list(5), &bearer(token))?;
        let body: Value = serde_json::from_str(&body)?;
        Ok(body["result"]["tools"]
            .as_array()
            .ok_or_else(|| format!("no tools: {body}"))?
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect())
    };
    if listed(&token)? != ["weather"] {
        return Err("a caller with the scope does not see the tool".into());
    }
    if !listed(&GOOD.sign(&no_scope, Some("k1"), None))?.is_empty() {
        return Err("a caller without the scope sees the tool".into());
    }

    // The caller is in every audit line; its token is in none, nor upstream.
    let audited = std::fs::read_to_string(&audit)?;
    let lines: Vec<Value> = audited
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    if lines.len() != 2 || lines.iter().any(|line| line["caller"] != "agent-1") {
        return Err(format!("the audit does not name the caller: {audited}").into());
    }
    // And every call's server span names the caller as OpenTelemetry does (`enduser.id`).
    let (spans, _) =
        super::telemetry::wait_for(&collector, super::telemetry::read_json, |spans, _| {
            spans.iter().filter(|span| span.kind == 2).count() >= 2
        });
    let servers: Vec<_> = spans.iter().filter(|span| span.kind == 2).collect();
    if servers.len() != 2
        || servers
            .iter()
            .any(|span| super::telemetry::attribute(span, "enduser.id") != Some("agent-1"))
    {
        return Err(format!("the server spans do not name the caller: {servers:#?}").into());
    }
    let upstream_saw = std::fs::read_to_string(&log)?;
    let signature = token.rsplit('.').next().unwrap();
    if audited.contains(signature) || upstream_saw.contains(signature) {
        return Err("the caller's token left the proxy".into());
    }
    Ok(())
}

/// A JWKS served over HTTP by the test, which can change what it serves.
fn jwks_server(document: Arc<Mutex<String>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|read| read > 2) {
                line.clear();
            }
            let body = document.lock().unwrap().clone();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{address}/jwks")
}

/// Keys from a URL; a rotation (a token under a new `kid`) picked up at once; a withdrawn key's
/// tokens refused after the set changes.
pub(crate) fn keys_from_a_url_rotate() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let document = Arc::new(Mutex::new(jwks(&[&GOOD])));
    let url = jwks_server(Arc::clone(&document));
    let auth = auth_file(dir.path(), &url);
    let log = dir.path().join("upstream.log");
    let scenario = scenario(dir.path());
    let (_proxy, address, _stderr) = listening_proxy(
        &["--auth", &auth],
        &[std::env::current_exe().unwrap().display().to_string()],
        &[
            (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
            (LOG_VARIABLE, log.to_str().unwrap()),
        ],
    )?;
    let good = claims("agent-1", "mcp weather:read", |_| {});
    let old = GOOD.sign(&good, Some("k1"), None);
    let served = |token: &str| -> Result<u16, Failed> {
        Ok(http_exchange(&address, "POST", "/mcp", &call(1), &bearer(token))?.0)
    };
    if served(&old)? != 200 {
        return Err("a token under the URL's key was refused".into());
    }
    // The authorization server rotates: k2 in, k1 out.
    *document.lock().unwrap() = jwks(&[&ROTATED]);
    let new = ROTATED.sign(&good, Some("k2"), None);
    if served(&new)? != 200 {
        return Err("a token under the rotated key was refused".into());
    }
    if served(&old)? != 401 {
        return Err("a token under the withdrawn key is still served (from the cache)".into());
    }
    Ok(())
}

/// An HTTP upstream hears the operator's credential, never the caller's token; a caller over
/// its rate gets 429 with Retry-After.
pub(crate) fn the_upstream_never_sees_the_callers_token() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("jwks.json"), jwks(&[&GOOD]))?;
    let auth = auth_file(dir.path(), "jwks.json");
    let log = dir.path().join("upstream.log");
    let scenario = scenario(dir.path());
    let (_upstream, upstream) = fake_http(&scenario, &log);
    let (_proxy, address, _stderr) = listening_proxy_to(
        &[
            "--auth",
            &auth,
            "--caller-rate",
            "3/m",
            "--upstream-header",
            "Authorization=OPERATOR_TOKEN",
        ],
        &[format!("http://{upstream}/mcp")],
        &[("OPERATOR_TOKEN", "Bearer operator-credential")],
        std::process::Stdio::null(),
    )?;
    let token = GOOD.sign(
        &claims("agent-1", "mcp weather:read", |_| {}),
        Some("k1"),
        None,
    );
    for id in 1..=3 {
        let (status, _, body) =
            http_exchange(&address, "POST", "/mcp", &call(id), &bearer(&token))?;
        if status != 200 {
            return Err(format!("call {id} was not served: {status} {body}").into());
        }
    }
    let (status, headers, _) = http_exchange(&address, "POST", "/mcp", &call(4), &bearer(&token))?;
    let retry = header(&headers, "retry-after").and_then(|value| value.parse::<u64>().ok());
    if status != 429 || !retry.is_some_and(|seconds| (1..=20).contains(&seconds)) {
        return Err(format!("the fourth call in a minute: {status} {headers:?}").into());
    }
    // Another caller has a bucket of its own.
    let other = GOOD.sign(
        &claims("agent-2", "mcp weather:read", |_| {}),
        Some("k1"),
        None,
    );
    if http_exchange(&address, "POST", "/mcp", &call(5), &bearer(&other))?.0 != 200 {
        return Err("another caller shares the first one's bucket".into());
    }
    // A token not verified before costs a signature check: its address is held to the rate
    // before the check, so a stream of forged tokens is answered 429 without one. The address
    // has spent two of its three (agent-1's and agent-2's first calls).
    let forged = STRANGER.sign(
        &claims("agent-9", "mcp weather:read", |_| {}),
        Some("k1"),
        None,
    );
    let statuses: Vec<u16> = (0..4)
        .map(|id| {
            http_exchange(&address, "POST", "/mcp", &call(10 + id), &bearer(&forged))
                .map(|answer| answer.0)
        })
        .collect::<Result<_, _>>()?;
    if statuses != [401, 429, 429, 429] {
        return Err(format!("forged tokens from one address: {statuses:?}").into());
    }
    // A request without a token is held to it too; and so is a valid token never verified
    // before, which proves the rate is checked before the signature (a refused token's rate
    // checked after it would have served this one).
    let fresh = GOOD.sign(
        &claims("agent-3", "mcp weather:read", |_| {}),
        Some("k1"),
        None,
    );
    for (what, headers) in [
        ("no token", Vec::new()),
        ("a new valid token", bearer(&fresh)),
    ] {
        let status = http_exchange(&address, "POST", "/mcp", &call(20), &headers)?.0;
        if status != 429 {
            return Err(format!("{what} from an address over its rate: {status}").into());
        }
    }
    // A caller whose token is cached is not held to its address's rate.
    if http_exchange(&address, "POST", "/mcp", &call(21), &bearer(&other))?.0 != 200 {
        return Err("a verified caller was held to its address's rate".into());
    }
    let mut seen = String::new();
    std::fs::File::open(&log)?.read_to_string(&mut seen)?;
    if !seen.contains("# authorization: Bearer operator-credential") {
        return Err(format!("the upstream never heard the operator's credential: {seen}").into());
    }
    if seen.contains(token.rsplit('.').next().unwrap()) {
        return Err("the caller's token reached the upstream".into());
    }
    Ok(())
}

/// Every mistake in an `--auth` file is a configuration error naming the file and the field.
pub(crate) fn bad_auth_files_are_configuration_errors() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("jwks.json"), jwks(&[&GOOD]))?;
    let scenario = scenario(dir.path());
    let base =
        format!("resource: {RESOURCE}\nauthorization_servers: [{ISSUER}]\njwks: jwks.json\n");
    let cases = [
        (format!("{base}algorithms: [HS256]\n"), "symmetric"),
        (format!("{base}algorithms: [none]\n"), "never"),
        (format!("{base}leeway: 1h\n"), "leeway"),
        (
            format!("{base}tools:\n  wether: {{scopes: [a]}}\n"),
            "wether",
        ),
        (format!("{base}surprise: 1\n"), "surprise"),
        (
            base.replace("https://toolgate.test/mcp", "http://toolgate.test/mcp"),
            "https",
        ),
        (base.replace("jwks.json", "missing.json"), "missing.json"),
        (
            "resource: https://x/mcp\nauthorization_servers: []\njwks: jwks.json\n".to_owned(),
            "authorization_servers",
        ),
    ];
    for (text, needle) in cases {
        let path = dir.path().join("auth.yaml");
        std::fs::write(&path, &text)?;
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["mcp-proxy", "--root"])
            .arg(super::here())
            .args(["--listen", "127.0.0.1:0", "--auth"])
            .arg(&path)
            .arg("--")
            .arg(std::env::current_exe()?)
            .env(SCENARIO_VARIABLE, &scenario)
            .stdin(std::process::Stdio::null())
            .output()?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() != Some(2)
            || !stderr.contains("auth.yaml")
            || !stderr.contains(needle)
        {
            return Err(format!(
                "{text:?}: wanted exit 2 naming the file and {needle:?}; got {:?}: {stderr}",
                output.status.code()
            )
            .into());
        }
    }
    // A public address with --auth needs no --insecure-no-auth.
    std::fs::write(dir.path().join("auth.yaml"), &base)?;
    let (_proxy, _, _) = super::http::listening_proxy_at(
        &super::here(),
        &[
            "--listen",
            "0.0.0.0:0",
            "--auth",
            dir.path().join("auth.yaml").to_str().unwrap(),
        ],
        &[std::env::current_exe()?.display().to_string()],
        &[(SCENARIO_VARIABLE, scenario.to_str().unwrap())],
        std::process::Stdio::null(),
    )?;
    Ok(())
}

/// A handshake-era session belongs to its caller: another caller that learned the session id
/// cancels nothing of it; the caller's own cancellation reaches the upstream.
pub(crate) fn a_session_cancels_only_its_own_callers_calls() -> Result<(), Failed> {
    use super::listener::{answer_of, log_holds, post_text, session_id};
    use std::time::Duration;
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("jwks.json"), jwks(&[&GOOD]))?;
    let auth = auth_file(dir.path(), "jwks.json");
    let log = dir.path().join("upstream.log");
    let scenario = dir.path().join("scenario.json");
    std::fs::write(
        &scenario,
        json!({"server": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
            "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]
        }, "calls": {"weather": [{"stall": true}]}})
        .to_string(),
    )?;
    let (_proxy, address, _stderr) = listening_proxy(
        &["--auth", &auth, "--timeout", "60s"],
        &[std::env::current_exe().unwrap().display().to_string()],
        &[
            (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
            (LOG_VARIABLE, log.to_str().unwrap()),
        ],
    )?;
    let token = |subject: &str| {
        format!(
            "Bearer {}",
            GOOD.sign(
                &claims(subject, "mcp weather:read", |_| {}),
                Some("k1"),
                None
            )
        )
    };
    let (owner, intruder) = (token("agent-1"), token("agent-2"));
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}});
    let answer = answer_of(
        &address,
        &post_text(
            &initialize.to_string(),
            &[("Authorization".to_owned(), owner.clone())],
        ),
    );
    let session = session_id(&answer)?;
    let headers = |bearer: &str| {
        vec![
            ("Authorization".to_owned(), bearer.to_owned()),
            ("Mcp-Session-Id".to_owned(), session.clone()),
        ]
    };
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Oslo"}}});
    let call = post_text(&call.to_string(), &headers(&owner));
    let address_for_call = address.clone();
    let pending = std::thread::spawn(move || answer_of(&address_for_call, &call));
    if !log_holds(&log, "\"tools/call\"", Duration::from_secs(10)) {
        return Err("the call never reached the upstream".into());
    }
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "not yours"}});
    let answer = answer_of(
        &address,
        &post_text(&cancel.to_string(), &headers(&intruder)),
    );
    if !answer.starts_with("HTTP/1.1 202") {
        return Err(format!("a notification is accepted: {answer}").into());
    }
    if log_holds(&log, "notifications/cancelled", Duration::from_millis(500)) {
        return Err("another caller's cancellation, in the session, reached the upstream".into());
    }
    answer_of(&address, &post_text(&cancel.to_string(), &headers(&owner)));
    if !log_holds(&log, "notifications/cancelled", Duration::from_secs(10)) {
        return Err("the caller's own cancellation does not reach the upstream".into());
    }
    let _ = pending.join();
    Ok(())
}

/// What a refusal tells a caller: nothing of the tools it cannot see. A tool hidden from it
/// and a tool with no contract are refused alike (403, "not permitted", every scope the
/// resource knows to ask for), no claim value a tool needs is named, and a tool name that is
/// not a string is refused before anything decides on it (it was taken for no name, skipping
/// the tool's scopes). A token whose `exp` is fractional (RFC 7519 allows it) is served on
/// every call, not only its first. Under --auth without a scrape token, /metrics is not served
/// on the listener's port at all.
pub(crate) fn a_refusal_tells_a_caller_nothing_it_cannot_see() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("jwks.json"), jwks(&[&GOOD]))?;
    let auth = dir.path().join("auth.yaml");
    std::fs::write(
        &auth,
        format!(
            "resource: {RESOURCE}\nauthorization_servers: [{ISSUER}]\njwks: jwks.json\nalgorithms: [EdDSA]\nscopes: [mcp]\ntools:\n  weather:\n    scopes: [weather:read]\n    claims: {{team: team-secret-7}}\n"
        ),
    )?;
    let log = dir.path().join("upstream.log");
    let scenario = scenario(dir.path());
    let (_proxy, address, _stderr) = listening_proxy(
        &["--auth", auth.to_str().unwrap()],
        &[std::env::current_exe().unwrap().display().to_string()],
        &[
            (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
            (LOG_VARIABLE, log.to_str().unwrap()),
        ],
    )?;
    let outsider = GOOD.sign(
        &claims("agent-1", "mcp weather:read", |claims| {
            claims["team"] = json!("another-team")
        }),
        Some("k1"),
        None,
    );
    let ask = |tool: Value, token: &str| -> Result<(u16, String, String), Failed> {
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": {"city": "Oslo"}}});
        let (status, headers, text) =
            http_exchange(&address, "POST", "/mcp", &body.to_string(), &bearer(token))?;
        let challenge = header(&headers, "www-authenticate")
            .unwrap_or_default()
            .to_owned();
        Ok((status, challenge, text))
    };
    let hidden = ask(json!("weather"), &outsider)?;
    let unknown = ask(json!("no_such_tool"), &outsider)?;
    if hidden.0 != 403 || hidden != unknown {
        return Err(format!("a hidden tool and an unknown one: {hidden:?} / {unknown:?}").into());
    }
    if hidden.1.contains("team") || hidden.2.contains("team") || !hidden.2.contains("not permitted")
    {
        return Err(format!("the refusal names what the tool needs: {hidden:?}").into());
    }
    for name in [
        json!(["weather"]),
        json!({"name": "weather"}),
        json!(7),
        Value::Null,
    ] {
        let (status, _, body) = ask(name.clone(), &outsider)?;
        if status != 400 || !body.contains("a string") {
            return Err(format!("a tool name {name}: {status} {body}").into());
        }
    }
    if upstream_calls(&log) != 0 {
        return Err("a refused call reached the upstream".into());
    }
    // The team's member, with a fractional expiry: served, and served again from the cache.
    let member = GOOD.sign(
        &claims("agent-2", "mcp weather:read", |claims| {
            claims["team"] = json!("team-secret-7");
            claims["exp"] = json!(now() as f64 + 600.5);
        }),
        Some("k1"),
        None,
    );
    for id in [1, 2] {
        let (status, _, body) = ask(json!("weather"), &member)?;
        if status != 200 {
            return Err(format!("a fractional exp, call {id}: {status} {body}").into());
        }
    }
    let (status, _, _) = http_exchange(&address, "GET", "/metrics", "", &bearer(&member))?;
    if status != 404 {
        return Err(format!("/metrics under --auth without a scrape token: {status}").into());
    }
    Ok(())
}
