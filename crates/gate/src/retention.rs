//! What is kept of a decision so that it can be decided again exactly: the raw bytes as the
//! gate was given them, and what else decided (the contract's digest, the request, the time, the
//! upstream's status); what the policy keeps ([`RetentionPolicy`]: every refusal, admissions at a
//! sampled rate). No I/O: a store keeps the bytes [`Retained::to_bytes`] writes (the adapters'
//! crate `toolgate-store` has a folder and an S3-compatible one).
//!
//! A retained decision is one JSON line of facts, then the raw bytes exactly as received (so the
//! evidence on disk is the evidence, byte for byte, with no encoding to undo).

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::decision::Decision;
use crate::facts::Sha256Digest;
use crate::request::Request;
use crate::timestamp;
use crate::transport::Response;

mod redact;
pub use redact::REDACTED;

/// The format of [`Retained::to_bytes`].
pub const RETAINED_FORMAT: u32 = 1;

/// Which decisions are kept: every refusal, every call a shadow version decided otherwise
/// ([`Decision::shadow_disagrees`]), and admissions (successes and contract-valid failures) at
/// `admitted_rate`, chosen by the SHA-256 of their raw bytes' digest and their call's id
/// ([`Decision::in_call`]): no random state, and identical answers to different calls are
/// sampled like any others (by the digest alone, a thousand identical answers would be kept all
/// or none). A decision without a call id is chosen by its digest alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetentionPolicy {
    admitted_rate: f64,
}

impl RetentionPolicy {
    /// Every refusal, and a share `admitted_rate` (0 to 1) of admissions.
    pub fn new(admitted_rate: f64) -> RetentionPolicy {
        RetentionPolicy {
            admitted_rate: admitted_rate.clamp(0.0, 1.0),
        }
    }

    /// The share of admissions kept.
    pub fn admitted_rate(&self) -> f64 {
        self.admitted_rate
    }

    /// Whether `decision` is kept.
    pub fn keeps(&self, decision: &Decision) -> bool {
        if decision.rejection().is_some() || decision.shadow_disagrees() {
            return true;
        }
        if self.admitted_rate <= 0.0 {
            return false;
        }
        if self.admitted_rate >= 1.0 {
            return true;
        }
        let digest = decision.raw_sha256();
        let chosen = match decision.call_id() {
            Some(call) => {
                let mut material = digest.as_bytes().to_vec();
                material.extend_from_slice(call.as_bytes());
                Sha256Digest::of(&material)
            }
            None => digest,
        };
        // The first eight bytes, as a fraction of 2^64.
        let head = u64::from_be_bytes(chosen.as_bytes()[..8].try_into().expect("eight bytes"));
        (head as f64) < self.admitted_rate * (u64::MAX as f64)
    }

    /// The probability a decision like `decision` is kept with: 1 for a refusal or a shadow's
    /// disagreement, the admitted rate for an admission. A replay weighs each record kept by
    /// its inverse, so shares estimate traffic, not the store.
    pub fn rate_of(&self, decision: &Decision) -> f64 {
        if decision.rejection().is_some() || decision.shadow_disagrees() {
            1.0
        } else {
            self.admitted_rate
        }
    }
}

/// One decision as it is kept: the facts that decided it and what it decided, then the raw
/// bytes. Built with [`Retained::of`]; decided again with [`Retained::response`],
/// [`Retained::request`] and [`Retained::time`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retained {
    /// [`RETAINED_FORMAT`].
    pub format_version: u32,
    /// The contract's tool.
    pub tool: String,
    /// The version that decided.
    pub contract_version: String,
    /// The digest of its bytes ([`ContractSource::digest`](crate::ContractSource::digest)).
    pub contract_digest: String,
    /// The gate that decided.
    pub gate_version: String,
    /// The outstanding request's id.
    pub request_id: String,
    /// The decision time, RFC 3339 in UTC to the nanosecond.
    pub time: String,
    /// The upstream endpoint or command the adapter named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The upstream status the adapter reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
    /// The transport failure the adapter reported instead of bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
    /// The answer without a result the adapter reported instead of bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// Whether the tool answered with its own error (MCP `isError`): the raw bytes are then the
    /// error's structured part, and `upstream_errors`' `tool_error` entries decide it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_error: bool,
    /// The trusted context, but for the keys marked secret.
    pub context: Map<String, Value>,
    /// For each context key marked secret, the HMAC-SHA-256 of its value as serde_json writes
    /// it, keyed with the operator's key ([`SecretContext`]): with the key, enough to tell
    /// whether a value supplied later is the one that decided; without it, nothing (a guessed
    /// tenant or e-mail cannot be checked against it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context_hmac_sha256: BTreeMap<String, String>,
    /// The unkeyed SHA-256 records written before the key was required kept instead: still
    /// read, and checked, never written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context_sha256: BTreeMap<String, String>,
    /// The raw bytes' length and SHA-256.
    pub raw_len: usize,
    /// The raw bytes' SHA-256 (the name they are kept under).
    pub raw_sha256: String,
    /// The places whose values were replaced by [`REDACTED`] before the bytes were kept
    /// (the contract's `retention: redact:`), as concrete pointers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    /// Why none of the raw bytes were kept: the contract names places to redact, and the bytes
    /// are not JSON, so they could not be found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
    /// The SHA-256 of the bytes kept, where they differ from those received (redacted or
    /// withheld); `raw_sha256` stays the received bytes', which the audit line names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_sha256: Option<String>,
    /// What was decided: `admitted`, `admitted_failure` or `rejected`.
    pub outcome: String,
    /// The layer that refused, for a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
    /// The rule that refused, for a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The code the agent saw, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The SHA-256 of what the agent saw.
    pub agent_sha256: String,
    /// What a shadow version decided of the same bytes, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<Value>,
    /// The probability this record was kept with ([`RetentionPolicy::rate_of`]): 1 for a
    /// refusal, the admitted rate for an admission. Absent from records written before it was
    /// (a replay counts those as kept at 1, and says how many).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_rate: Option<f64>,
    /// The raw bytes (after the facts' line, not in it).
    #[serde(skip)]
    pub raw: Vec<u8>,
}

/// The trusted-context keys a front keeps as a keyed digest only (`--retain-secret`), and the
/// operator's key for it (`--retain-secret-key`): an HMAC-SHA-256, so whoever reads the store
/// cannot find a tenant or an e-mail again by hashing guesses, as an unkeyed digest would let
/// them.
#[derive(Clone, Default)]
pub struct SecretContext {
    keys: Vec<String>,
    key: std::sync::Arc<[u8]>,
}

impl std::fmt::Debug for SecretContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretContext")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl SecretContext {
    /// The shortest key taken: 256 bits, as HMAC-SHA-256's security asks.
    pub const MIN_KEY_BYTES: usize = 32;

    /// `keys` kept as their HMAC under `key` (at least [`Self::MIN_KEY_BYTES`] bytes).
    pub fn new(keys: Vec<String>, key: &[u8]) -> Result<SecretContext, ShortSecretKey> {
        if key.len() < SecretContext::MIN_KEY_BYTES {
            return Err(ShortSecretKey { bytes: key.len() });
        }
        Ok(SecretContext {
            keys,
            key: key.into(),
        })
    }

    /// No key kept secret.
    pub fn none() -> SecretContext {
        SecretContext::default()
    }

    /// The context keys kept as digests.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }
}

/// A secret key shorter than [`SecretContext::MIN_KEY_BYTES`]: how long it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortSecretKey {
    /// Its length.
    pub bytes: usize,
}

impl std::fmt::Display for ShortSecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the secret key is {} bytes; it must be at least {} random bytes (e.g. `head -c 32 /dev/urandom > retain.key`)",
            self.bytes,
            SecretContext::MIN_KEY_BYTES
        )
    }
}

impl std::error::Error for ShortSecretKey {}

/// The HMAC-SHA-256 of `value` as serde_json writes it, under `key`, in hex.
fn keyed_digest(key: &[u8], value: &Value) -> String {
    use hmac::{KeyInit, Mac};
    let text = serde_json::to_vec(value).unwrap_or_default();
    let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(key)
        .expect("HMAC takes a key of any length");
    mac.update(&text);
    let mut hex = Vec::with_capacity(64);
    Sha256Digest::from_bytes(mac.finalize().into_bytes().into()).write_hex(&mut hex);
    String::from_utf8(hex).unwrap_or_default()
}

/// What a front keeps of one call, taken on the call's path at the least cost (the raw bytes
/// and the context copied, everything else shared or a digest already computed), and made a
/// [`Retained`] later, off the path ([`Captured::into_retained`]: the digests written in hex,
/// the time formatted, the secret keys hashed).
#[derive(Debug, Clone)]
pub struct Captured {
    contract: std::sync::Arc<crate::facts::ContractIdentity>,
    request_id: std::sync::Arc<str>,
    upstream: Option<std::sync::Arc<str>>,
    time: SystemTime,
    upstream_status: Option<u16>,
    unreachable: Option<String>,
    incomplete: Option<String>,
    tool_error: bool,
    context: std::sync::Arc<Map<String, Value>>,
    raw: Vec<u8>,
    raw_sha256: Sha256Digest,
    agent_sha256: Sha256Digest,
    outcome: &'static str,
    layer: Option<&'static str>,
    rule: Option<std::borrow::Cow<'static, str>>,
    code: Option<&'static str>,
    shadow: Option<crate::facts::ShadowOutcome>,
    sampling_rate: Option<f64>,
}

impl Captured {
    /// What `decision` keeps of its call: the response and request it was made on.
    pub fn of(decision: &Decision, response: &Response<'_>, request: &Request) -> Captured {
        Captured {
            contract: std::sync::Arc::clone(&decision.facts().contract),
            request_id: std::sync::Arc::clone(&decision.facts().request_id),
            upstream: request.upstream_shared(),
            time: decision.time(),
            upstream_status: response.status(),
            unreachable: response.unreachable_reason().map(str::to_owned),
            incomplete: response.incomplete_reason().map(str::to_owned),
            tool_error: response.is_tool_error(),
            context: request.shared_context(),
            raw: response.bytes().to_vec(),
            // Computed once per decision, and already by an audit line written before.
            raw_sha256: decision.raw_sha256(),
            agent_sha256: decision.agent_sha256(),
            outcome: decision.outcome().as_str(),
            layer: decision
                .rejection()
                .map(|rejection| rejection.layer().as_str()),
            // The rule as the audit line names it: a schema rejection's keyword would build the
            // whole operator record on the call's path, and `reproduce` decides it again anyway.
            rule: decision.known_rule().cloned(),
            code: decision.outcome().code().map(|code| code.as_str()),
            shadow: decision.shadow().cloned(),
            sampling_rate: None,
        }
    }

    /// The record says it was kept with probability `rate` ([`RetentionPolicy::rate_of`]).
    pub fn sampled_at(mut self, rate: f64) -> Captured {
        self.sampling_rate = Some(rate);
        self
    }

    /// The record, with the context keys `secret` names kept as keyed digests only.
    pub fn into_retained(self, secret: &SecretContext) -> Retained {
        let mut context = std::sync::Arc::unwrap_or_clone(self.context);
        let mut context_hmac_sha256 = BTreeMap::new();
        for key in &secret.keys {
            if let Some(value) = context.remove(key) {
                context_hmac_sha256.insert(key.clone(), keyed_digest(&secret.key, &value));
            }
        }
        let kept = Kept::of(self.raw, &self.contract.redact);
        Retained {
            format_version: RETAINED_FORMAT,
            tool: self.contract.tool.to_string(),
            contract_version: self.contract.version.to_string(),
            contract_digest: self.contract.digest.to_hex(),
            gate_version: crate::GATE_VERSION.to_owned(),
            request_id: self.request_id.to_string(),
            time: timestamp::format_utc(timestamp::unix_nanos(self.time)).unwrap_or_default(),
            upstream: self.upstream.map(|upstream| upstream.to_string()),
            upstream_status: self.upstream_status,
            unreachable: self.unreachable,
            incomplete: self.incomplete,
            tool_error: self.tool_error,
            context,
            context_hmac_sha256,
            context_sha256: BTreeMap::new(),
            raw_len: kept.received_len,
            raw_sha256: self.raw_sha256.to_hex(),
            kept_sha256: (!kept.redacted.is_empty() || kept.withheld.is_some())
                .then(|| Sha256Digest::of(&kept.bytes).to_hex()),
            redacted: kept.redacted,
            withheld: kept.withheld,
            outcome: self.outcome.to_owned(),
            layer: self.layer.map(str::to_owned),
            rule: self.rule.map(|rule| rule.into_owned()),
            code: self.code.map(str::to_owned),
            agent_sha256: self.agent_sha256.to_hex(),
            shadow: self
                .shadow
                .and_then(|shadow| serde_json::to_value(shadow).ok()),
            sampling_rate: self.sampling_rate,
            raw: kept.bytes,
        }
    }
}

/// The raw bytes as kept: as received, or with the contract's places redacted, or none.
struct Kept {
    received_len: usize,
    bytes: Vec<u8>,
    redacted: Vec<String>,
    withheld: Option<String>,
}

impl Kept {
    fn of(raw: Vec<u8>, places: &[Box<str>]) -> Kept {
        let received_len = raw.len();
        if places.is_empty() || raw.is_empty() {
            return Kept {
                received_len,
                bytes: raw,
                redacted: Vec::new(),
                withheld: None,
            };
        }
        match redact::redact(&raw, places) {
            Some((bytes, redacted)) => Kept {
                received_len,
                bytes,
                redacted,
                withheld: None,
            },
            None => Kept {
                received_len,
                bytes: Vec::new(),
                redacted: Vec::new(),
                withheld: Some(
                    "the contract redacts places in responses, and these bytes are not JSON, so those places could not be found in them".to_owned(),
                ),
            },
        }
    }
}

impl Retained {
    /// What `decision` keeps of its call: the response and request it was made on, with the
    /// context keys `secret` names kept as keyed digests only.
    pub fn of(
        decision: &Decision,
        response: &Response<'_>,
        request: &Request,
        secret: &SecretContext,
    ) -> Retained {
        Captured::of(decision, response, request).into_retained(secret)
    }

    /// The response to decide again: the raw bytes, with the status and failure the adapter
    /// reported.
    pub fn response(&self) -> Response<'_> {
        let mut response = match (&self.unreachable, &self.incomplete) {
            (Some(reason), _) => Response::unreachable(reason),
            (None, Some(reason)) => Response::incomplete(reason),
            (None, None) if self.tool_error => Response::tool_error(&self.raw),
            (None, None) => Response::body(&self.raw),
        };
        if let Some(status) = self.upstream_status {
            response = response.with_status(status);
        }
        response
    }

    /// The request to decide again under, with `secrets` for the context keys kept as digests
    /// and `key`, the operator's secret key, to check them by: `Err` names a secret key that is
    /// missing, or whose value is not the one that decided, or says the key is needed.
    pub fn request(
        &self,
        secrets: &Map<String, Value>,
        key: Option<&[u8]>,
    ) -> Result<Request, String> {
        let mut context = self.context.clone();
        let kept = self
            .context_hmac_sha256
            .iter()
            .map(|(name, digest)| (name, digest, true))
            .chain(
                self.context_sha256
                    .iter()
                    .map(|(name, digest)| (name, digest, false)),
            );
        for (name, digest, keyed) in kept {
            let Some(value) = secrets.get(name) else {
                return Err(format!(
                    "the context key `{name}` was kept as a digest (secret): supply its value"
                ));
            };
            let supplied = if keyed {
                let Some(key) = key else {
                    return Err(format!(
                        "the context key `{name}` was kept as a keyed digest: give the key the front kept it with (--retain-secret-key FILE) to check the value supplied"
                    ));
                };
                keyed_digest(key, value)
            } else {
                Sha256Digest::of(&serde_json::to_vec(value).unwrap_or_default()).to_hex()
            };
            if supplied != *digest {
                return Err(format!(
                    "the value supplied for the secret context key `{name}` is not the one that decided (its digest differs{})",
                    if keyed {
                        ", or the key is not the one it was kept with"
                    } else {
                        ""
                    }
                ));
            }
            context.insert(name.clone(), value.clone());
        }
        let mut request = Request::new(self.request_id.clone()).with_context_map(context);
        if let Some(upstream) = &self.upstream {
            request = request.with_upstream(upstream.as_str());
        }
        Ok(request)
    }

    /// The context keys kept as digests (secret), keyed or not.
    pub fn secret_keys(&self) -> Vec<&str> {
        self.context_hmac_sha256
            .keys()
            .chain(self.context_sha256.keys())
            .map(String::as_str)
            .collect()
    }

    /// The decision time.
    pub fn time(&self) -> Result<SystemTime, String> {
        timestamp::parse_timestamp(&self.time)
    }

    /// The kept form: the facts as one JSON line, then the raw bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes.extend_from_slice(&self.raw);
        bytes
    }

    /// Reads the kept form back; `Err` says what is wrong with it. The raw bytes must be the
    /// ones the facts name (their digest is checked).
    pub fn from_bytes(bytes: &[u8]) -> Result<Retained, String> {
        let end = bytes
            .iter()
            .position(|byte| *byte == b'\n')
            .ok_or("no line of facts before the raw bytes")?;
        let facts = crate::parse::parse_value(&bytes[..end], 64)
            .map_err(|fault| format!("the line of facts: {}", fault.message))?;
        // The format first: a later format's new fields would otherwise be refused as unknown
        // before the reader could say that the record is of a format it does not read.
        let format = &facts["format_version"];
        if format.as_u64() != Some(u64::from(RETAINED_FORMAT)) {
            return Err(format!(
                "format {} (this toolgate reads format {RETAINED_FORMAT})",
                crate::sanitize::sanitize(&format.to_string(), 40)
            ));
        }
        let mut retained: Retained =
            serde_json::from_value(facts).map_err(|error| format!("the line of facts: {error}"))?;
        retained.raw = bytes[end + 1..].to_vec();
        let digest = Sha256Digest::of(&retained.raw).to_hex();
        let matches = match &retained.kept_sha256 {
            // Redacted or withheld: the kept bytes are checked against their own digest.
            Some(kept) => digest == *kept,
            None => retained.raw.len() == retained.raw_len && digest == retained.raw_sha256,
        };
        if !matches {
            return Err(
                "the raw bytes are not the ones the facts name (their digest differs)".to_owned(),
            );
        }
        Ok(retained)
    }

    /// The name it is kept under: `<tool>/<raw sha256>-<16 hex digits of the request, time and
    /// contract>`, so the same bytes decided twice are kept twice, and the raw digest an audit
    /// line holds finds both.
    pub fn name(&self) -> String {
        let key = Sha256Digest::of(
            format!(
                "{}\0{}\0{}",
                self.request_id, self.time, self.contract_digest
            )
            .as_bytes(),
        )
        .to_hex();
        format!("{}/{}-{}", self.tool, self.raw_sha256, &key[..16])
    }
}
