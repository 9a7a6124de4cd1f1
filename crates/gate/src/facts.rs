//! What a decision knew about the call, for the audit event and the operator record: when, for
//! which request, tool and contract version, the upstream, and the raw bytes' length and digest.
//!
//! A leaf module: the decision, the audit event and the operator record all read these facts.

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The version of this gate, recorded in every audit event and operator record.
pub const GATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The longest text from outside (a host's request id, a caller's name, an upstream's label) a
/// record keeps as it is: an audit line, a span attribute. A longer one is kept as its digest
/// and length ([`bounded_text`]), so what a host sends cannot grow a record past a few KiB.
pub const MAX_RECORDED_TEXT: usize = 256;

/// `text` as a record keeps it: itself up to [`MAX_RECORDED_TEXT`] bytes, else
/// `sha256:<hex> (<n> bytes)`, which still tells one long value from another.
pub fn bounded_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_RECORDED_TEXT {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(format!(
            "sha256:{} ({} bytes)",
            Sha256Digest::of(text.as_bytes()).to_hex(),
            text.len()
        ))
    }
}

/// A SHA-256 digest, written as lowercase hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    /// Digests `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256Digest {
        Sha256Digest(Sha256::digest(bytes).into())
    }

    /// A digest computed elsewhere (a keyed one), to be written as this one is.
    pub(crate) fn from_bytes(bytes: [u8; 32]) -> Sha256Digest {
        Sha256Digest(bytes)
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        let mut hex = Vec::with_capacity(64);
        self.write_hex(&mut hex);
        String::from_utf8(hex).expect("hex digits are ASCII")
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Reads lowercase or uppercase hex, 64 characters.
    pub fn from_hex(hex: &str) -> Option<Sha256Digest> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            let digit = |b: u8| (b as char).to_digit(16);
            *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
        }
        Some(Sha256Digest(out))
    }

    /// Appends the lowercase hex to `out`.
    pub(crate) fn write_hex(&self, out: &mut Vec<u8>) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; 64];
        for (pair, byte) in hex.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0x0f)];
        }
        out.extend_from_slice(&hex);
    }
}

impl std::fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Sha256Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

/// Which contract decided: its tool and version. One per contract, shared by every decision and
/// audit event it makes (one reference count per decision rather than one per name).
#[derive(Debug, Serialize)]
pub(crate) struct ContractIdentity {
    pub tool: Box<str>,
    #[serde(rename = "contract_version")]
    pub version: Box<str>,
    /// The contract's own bytes ([`ContractSource::digest`](crate::ContractSource::digest)):
    /// which contract decided, exactly, whatever its version is called.
    #[serde(rename = "contract_digest")]
    pub digest: Sha256Digest,
    /// The audit line's members that name the contract and the gate
    /// (`,"tool":…,"contract_version":…,"contract_digest":…,"gate_version":…`), written once per
    /// contract rather than once per line (`audit::contract_identity` builds them).
    #[serde(skip)]
    pub line_members: Box<[u8]>,
    /// The places `retention: redact:` names: their values are replaced before a decision's
    /// raw bytes are kept.
    #[serde(skip)]
    pub redact: Box<[Box<str>]>,
}

/// What the decision knew about the call, for the audit event and the operator record.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub time: SystemTime,
    pub request_id: Arc<str>,
    pub contract: Arc<ContractIdentity>,
    pub upstream: Option<Arc<str>>,
    /// Who asked for the call, when the front authenticated them.
    pub caller: Option<Arc<str>>,
    pub upstream_status: Option<u16>,
    pub shape: Option<Arc<str>>,
    pub raw: RawEvidence,
    /// What a front added to the decision: another version's decision of the same call, and
    /// whether the call was only observed (see [`Marks`]).
    pub marks: Option<Arc<Marks>>,
}

/// What a front adds to a decision for its audit line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    pub shadow: Option<ShadowOutcome>,
    /// The front forwarded the upstream's result unchanged (`--mode observe`): decided and
    /// audited, not enforced.
    pub observed: bool,
    /// The call the decision belongs to, as the front that served it names it.
    pub call: Option<CallIds>,
}

/// How a front names the call a decision belongs to, so an audit line joins its trace and the
/// front's other records of the call: a unique id, and the W3C trace context where the call has
/// one. Written into the audit line as `call_id`, `trace_id` and `span_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallIds {
    /// Unique among every call any replica of the front serves.
    pub call_id: Arc<str>,
    /// The call's trace (32 lowercase hex digits), where it is traced or the host sent one.
    pub trace_id: Option<Arc<str>>,
    /// The front's span of the call in that trace (16 lowercase hex digits).
    pub span_id: Option<Arc<str>>,
}

/// What a shadow version (a candidate, decided beside the one enforced) decided of the same
/// call: its audit line carries it, so a rollout can be judged on real traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShadowOutcome {
    /// The shadow version.
    pub version: String,
    /// The digest of its contract's bytes.
    pub contract_digest: Sha256Digest,
    /// What it decided: `admitted`, `admitted_failure` or `rejected`.
    pub outcome: &'static str,
    /// The layer that refused, for a refusal (a [`Layer`](crate::Layer)'s name: this module
    /// is vocabulary, below the outcome's).
    pub layer: Option<&'static str>,
    /// The code the agent would have seen, if any (an [`ErrorCode`](crate::ErrorCode)'s wire
    /// name).
    pub code: Option<&'static str>,
    /// Whether the agent would have seen other bytes than the enforced version gave it.
    pub agent_differs: bool,
}

/// What the audit event and the operator record say about the raw bytes: their length and
/// SHA-256. The digest is computed when first needed; until then a small body is kept (copying
/// 64 KiB costs a fraction of hashing it), and a larger one is hashed at once so a decision never
/// holds a large response.
#[derive(Debug, Clone)]
pub(crate) struct RawEvidence {
    len: usize,
    kept: Option<Arc<[u8]>>,
    digest: OnceLock<Sha256Digest>,
}

impl RawEvidence {
    const KEEP_AT_MOST: usize = 64 * 1024;

    pub(crate) fn new(raw: &[u8]) -> RawEvidence {
        if raw.len() <= RawEvidence::KEEP_AT_MOST {
            RawEvidence {
                len: raw.len(),
                kept: Some(raw.into()),
                digest: OnceLock::new(),
            }
        } else {
            RawEvidence {
                len: raw.len(),
                kept: None,
                digest: OnceLock::from(Sha256Digest::of(raw)),
            }
        }
    }

    /// Evidence whose digest is already known.
    pub(crate) fn hashed(len: usize, digest: Sha256Digest) -> RawEvidence {
        RawEvidence {
            len,
            kept: None,
            digest: OnceLock::from(digest),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes, when they are small enough to be kept.
    pub(crate) fn kept(&self) -> Option<Arc<[u8]>> {
        self.kept.clone()
    }

    pub(crate) fn digest(&self) -> Sha256Digest {
        *self
            .digest
            .get_or_init(|| Sha256Digest::of(self.kept.as_deref().unwrap_or_default()))
    }
}
