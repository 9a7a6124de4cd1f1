//! The HTTP listener as an OAuth 2.1 resource server (`--auth FILE`), as the MCP
//! specification's authorization part makes an HTTP MCP server: every request to `/mcp` carries
//! a bearer token, a JWT the proxy verifies against the authorization server's JWKS (a file or
//! a URL, cached, refreshed, re-fetched when a token names a key it does not hold: key
//! rotation), its issuer, its audience (this resource: RFC 8707's audience binding, so a token
//! minted for another server is refused), its lifetime (clock skew bounded) and its algorithm
//! (an allowlist of asymmetric ones: never `none`, never HMAC, never a key the token itself
//! names). The protected resource metadata (RFC 9728) is served at its well-known path; a
//! request without a valid token gets `401` with a `WWW-Authenticate` naming it, one without a
//! scope it needs gets `403` naming the scope. Which scopes (and claims) may call which tool is
//! the file's `tools`; `tools/list` shows a caller only those. The caller's token is never sent
//! upstream (the upstream's credential is the operator's, `--upstream-header`), and the
//! caller's identity goes into every audit line.
//!
//! Verifying a signature costs tens of microseconds; a verified token is cached (by its
//! SHA-256, until it expires, dropped when the key set changes), so the calls an agent makes
//! with one token pay for one verification (BENCHMARKS.md, "Authorization").

mod keys;
mod load;
mod rate;
mod verify;

use keys::{parse_algorithm, parse_jwks};
use load::{ToolRule, read_capped_file};
pub(crate) use rate::{CallerRate, OverLimit};
pub use rate::{RateLimit, Unavailable, parse_caller_rate};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use toolgate_gate::internals::{parse_duration, read_strict_yaml};
use toolgate_repo::UsageError;

use super::lines::log;
use super::lock;

/// The largest `--auth` file, and the largest JWKS document, read.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// The longest bearer token read; a JWT with a few dozen claims is a kilobyte or two.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The most verified tokens remembered at once.
const CACHED_TOKENS: usize = 4096;
/// The least time between two fetches of the JWKS for a key it did not hold: a token naming
/// keys at random cannot make the proxy hammer the authorization server.
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(30);
/// How long a JWKS fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The widest clock skew the operator may allow.
const MAX_LEEWAY: Duration = Duration::from_secs(300);

/// The algorithms accepted when the file names none: every asymmetric one jsonwebtoken
/// verifies.
const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Where the signing keys come from.
#[derive(Debug, Clone)]
enum KeySource {
    File(PathBuf),
    Url(String),
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::File(path) => write!(f, "{}", path.display()),
            KeySource::Url(url) => f.write_str(url),
        }
    }
}

/// One verification key from the JWKS.
struct VerifyKey {
    kid: Option<String>,
    /// The algorithm the key is for, when the JWKS says (`alg`): then no other.
    algorithm: Option<Algorithm>,
    family: AlgorithmFamily,
    key: DecodingKey,
}

/// The JWKS as last read, and what it was read from (a file's modification time).
struct KeySet {
    keys: Vec<VerifyKey>,
    /// A digest of the document, to tell a change from a re-read.
    digest: [u8; 32],
    modified: Option<SystemTime>,
}

/// An authenticated caller.
#[derive(Debug)]
pub(crate) struct Caller {
    /// The token's identity claim (`sub` unless the file says otherwise).
    pub subject: Arc<str>,
    scopes: BTreeSet<String>,
    claims: Map<String, Value>,
}

/// A verified token, remembered until it expires.
struct Cached {
    caller: Arc<Caller>,
    expires: u64,
    not_before: Option<u64>,
}

/// Why a request is refused before it reaches the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    /// No bearer token: `401`, the challenge alone.
    Missing,
    /// A token that does not verify: `401` with `error="invalid_token"`.
    Invalid(String),
    /// A valid token without what the request needs: `403` with `error="insufficient_scope"`
    /// and the scopes it needs.
    Insufficient { scopes: Vec<String>, why: String },
}

/// The listener's resource server: the verified configuration and the keys.
pub(crate) struct Authorizer {
    resource: String,
    metadata: Value,
    metadata_url: String,
    /// The path the metadata is served at (RFC 9728 §3.1: the well-known prefix, then the
    /// resource's path), and the bare well-known path beside it.
    metadata_paths: [String; 2],
    issuer: String,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    identity_claim: String,
    scopes: Vec<String>,
    /// Every scope the file names: what a 401's challenge asks a client to request, since
    /// which tools it sees depends on them (MCP's scope selection takes the challenge's first).
    scopes_supported: Vec<String>,
    tools: BTreeMap<String, ToolRule>,
    other_tools: Option<ToolRule>,
    source: KeySource,
    refresh: Duration,
    keys: RwLock<Arc<KeySet>>,
    /// When the JWKS was last fetched again (not counting the read at start).
    last_fetch: Mutex<Option<Instant>>,
    fetching: tokio::sync::Mutex<()>,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
    client: Option<reqwest::Client>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// The protected resource metadata, and the paths it is served at.
    pub(crate) fn metadata(&self, path: &str) -> Option<&Value> {
        self.metadata_paths
            .iter()
            .any(|served| served == path)
            .then_some(&self.metadata)
    }

    /// The `WWW-Authenticate` value for a refusal.
    pub(crate) fn challenge(&self, denied: &Denied) -> String {
        let mut challenge = format!(
            "Bearer resource_metadata=\"{}\"",
            quoted(&self.metadata_url)
        );
        let scope = |scopes: &[String]| format!(", scope=\"{}\"", quoted(&scopes.join(" ")));
        match denied {
            Denied::Missing => {
                if !self.scopes_supported.is_empty() {
                    challenge.push_str(&scope(&self.scopes_supported));
                }
            }
            Denied::Invalid(why) => {
                if !self.scopes_supported.is_empty() {
                    challenge.push_str(&scope(&self.scopes_supported));
                }
                challenge.push_str(&format!(
                    ", error=\"invalid_token\", error_description=\"{}\"",
                    quoted(why)
                ));
            }
            Denied::Insufficient { scopes, why } => {
                challenge.push_str(&format!(
                    ", error=\"insufficient_scope\"{}, error_description=\"{}\"",
                    scope(scopes),
                    quoted(why)
                ));
            }
        }
        challenge
    }

    /// The bearer token a request's `Authorization` header carries, read (nothing verified).
    pub(crate) fn bearer_token<'h>(
        &self,
        headers: &'h hyper::HeaderMap,
    ) -> Result<&'h str, Denied> {
        let mut values = headers.get_all(hyper::header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(if headers.contains_key(hyper::header::AUTHORIZATION) {
                Denied::Invalid("more than one Authorization header".to_owned())
            } else {
                Denied::Missing
            });
        };
        let value = value.to_str().map_err(|_| Denied::Missing)?;
        let Some((scheme, token)) = value.split_once(' ') else {
            return Err(Denied::Missing);
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(Denied::Missing);
        }
        let token = token.trim();
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return Err(Denied::Invalid(format!(
                "a bearer token of 1 to {MAX_TOKEN_BYTES} bytes"
            )));
        }
        Ok(token)
    }

    /// Whether `caller` may use the endpoint at all (the file's top-level `scopes`).
    pub(crate) fn admits(&self, caller: &Caller) -> Result<(), Denied> {
        let missing: Vec<String> = self
            .scopes
            .iter()
            .filter(|scope| !caller.scopes.contains(*scope))
            .cloned()
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Denied::Insufficient {
                why: format!(
                    "not permitted: this endpoint needs the scope {}",
                    missing.join(" ")
                ),
                scopes: self.scopes.clone(),
            })
        }
    }

    /// Whether `caller` may call `tool` (`None`: a tool with no contract). Every refusal is
    /// the same: "not permitted", with every scope the resource knows as the ones to ask for.
    /// Naming the scope or claim value one tool needs, or answering a tool the caller cannot see
    /// otherwise than one that does not exist, would tell a caller what it may not see.
    pub(crate) fn may_call(&self, caller: &Caller, tool: Option<&str>) -> Result<(), Denied> {
        let permitted =
            tool.and_then(|tool| self.tools.get(tool).or(self.other_tools.as_ref()))
                .is_some_and(|rule| {
                    rule.scopes
                        .iter()
                        .all(|scope| caller.scopes.contains(scope))
                        && rule.claims.iter().all(|(claim, wanted)| {
                            match caller.claims.get(claim) {
                                Some(Value::String(value)) => value == wanted,
                                Some(Value::Array(values)) => {
                                    values.iter().any(|value| value == wanted)
                                }
                                _ => false,
                            }
                        })
                });
        if permitted {
            Ok(())
        } else {
            Err(self.not_permitted())
        }
    }

    /// The one refusal of a tool call a caller may not make.
    pub(crate) fn not_permitted(&self) -> Denied {
        Denied::Insufficient {
            scopes: self.scopes_supported.clone(),
            why: "not permitted".to_owned(),
        }
    }

    /// Re-reads the JWKS every `jwks_refresh` (a file only when it changed), until the
    /// process ends. A failed read keeps the keys held.
    pub(crate) async fn refresh_periodically(self: Arc<Self>) {
        loop {
            tokio::time::sleep(self.refresh).await;
            self.refetch().await;
        }
    }

    async fn refetch_for_unknown_key(&self) {
        if lock(&self.last_fetch).is_some_and(|last| last.elapsed() < REFETCH_AT_MOST_EVERY) {
            return;
        }
        self.refetch().await;
    }

    /// Reads the JWKS again (one reader at a time) and, when it changed, holds the new keys
    /// and forgets every cached token (a key withdrawn must stop admitting its tokens).
    async fn refetch(&self) {
        let _one_at_a_time = self.fetching.lock().await;
        *lock(&self.last_fetch) = Some(Instant::now());
        let held = Arc::clone(&self.keys.read().unwrap_or_else(|p| p.into_inner()));
        if let KeySource::File(path) = &self.source
            && held.modified.is_some()
            && std::fs::metadata(path)
                .and_then(|meta| meta.modified())
                .ok()
                == held.modified
        {
            return;
        }
        match self.read_keys().await {
            Ok(keys) if keys.digest != held.digest => {
                log(&format!(
                    "--auth: the JWKS at {} changed: {} key(s) now",
                    self.source,
                    keys.keys.len()
                ));
                *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
                lock(&self.cache).clear();
            }
            Ok(_) => {}
            Err(why) => log(&format!(
                "--auth: cannot refresh the JWKS ({why}); the keys held stay"
            )),
        }
    }

    async fn read_keys(&self) -> Result<KeySet, String> {
        let (bytes, modified) = match &self.source {
            KeySource::File(path) => {
                let modified = std::fs::metadata(path)
                    .and_then(|meta| meta.modified())
                    .ok();
                let bytes =
                    read_capped_file(path, "read the JWKS").map_err(|error| error.to_string())?;
                (bytes, modified)
            }
            KeySource::Url(url) => {
                let client = self.client.as_ref().ok_or("no HTTP client")?;
                let mut response = client
                    .get(url)
                    .header("accept", "application/json")
                    .send()
                    .await
                    .map_err(|error| format!("cannot fetch {url}: {error}"))?;
                if !response.status().is_success() {
                    return Err(format!("{url} answered {}", response.status()));
                }
                let mut bytes = Vec::new();
                while let Some(chunk) = response
                    .chunk()
                    .await
                    .map_err(|error| format!("cannot read {url}: {error}"))?
                {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() > MAX_DOCUMENT_BYTES {
                        return Err(format!("{url}: longer than {MAX_DOCUMENT_BYTES} bytes"));
                    }
                }
                (bytes, None)
            }
        };
        parse_jwks(&bytes).map(|keys| KeySet {
            keys,
            digest: Sha256::digest(&bytes).into(),
            modified,
        })
    }
}

/// `text` for a quoted-string in a header (RFC 9110): no quotes, backslashes or controls.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '\''
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::load::secure_url;
    use super::*;

    #[test]
    fn rates_read_as_buckets() {
        assert_eq!(
            parse_caller_rate("20/s"),
            Ok(RateLimit {
                period: Duration::from_millis(50),
                burst: std::num::NonZeroU32::new(20).unwrap()
            })
        );
        assert_eq!(
            parse_caller_rate("60/m").unwrap().period,
            Duration::from_secs(1)
        );
        assert!(parse_caller_rate("0/s").is_err());
        assert!(parse_caller_rate("5").is_err());
        assert!(parse_caller_rate("5/d").is_err());
    }

    #[test]
    fn symmetric_and_unsigned_algorithms_are_refused() {
        assert!(parse_algorithm("none").unwrap_err().contains("never"));
        assert!(parse_algorithm("HS256").unwrap_err().contains("symmetric"));
        assert!(parse_algorithm("XX1").is_err());
        assert_eq!(parse_algorithm("ES256"), Ok(Algorithm::ES256));
    }

    #[test]
    fn only_https_or_loopback_http() {
        assert!(secure_url("https://auth.example.com").is_ok());
        assert!(secure_url("http://127.0.0.1:9000/").is_ok());
        assert!(secure_url("http://localhost/").is_ok());
        assert!(secure_url("http://auth.example.com").is_err());
        assert!(secure_url("https://x/#frag").is_err());
    }

    #[test]
    fn challenges_carry_nothing_that_breaks_the_header() {
        assert_eq!(quoted("a\"b\\c\nd"), "a'b'c'd");
    }

    #[test]
    fn a_jwks_without_a_signing_key_is_refused() {
        let secret = br#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#;
        assert!(parse_jwks(secret).is_err());
        assert!(parse_jwks(b"{}").is_err());
        assert!(parse_jwks(b"not json").is_err());
    }
}
