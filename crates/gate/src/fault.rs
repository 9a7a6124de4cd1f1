//! The internal account of a refusal, as each stage reports it, before it is split into what the
//! agent sees (code, retryable) and what the operator sees (everything else).

use std::borrow::Cow;

use serde::Serialize;

use crate::outcome::{ErrorCode, Layer};
use crate::sanitize::{FINDINGS_CAP, MESSAGE_CAP, PATH_CAP, sanitize};

/// Why one stage said no. Boxed: it travels up every stage's `Result`, and the admission path
/// should not pay for moving the rejection path's detail around.
#[derive(Debug, Clone)]
pub(crate) struct Fault(Box<FaultDetail>);

/// The detail of a fault. Strings here may quote attacker text; they are sanitized when stored.
#[derive(Debug, Clone)]
pub(crate) struct FaultDetail {
    pub layer: Layer,
    pub rule: Cow<'static, str>,
    pub code: ErrorCode,
    /// `None`: the contract's retry policy decides from the code. `Some`: the rule decided.
    pub retryable: Option<bool>,
    pub message: String,
    pub instance_path: Option<String>,
    pub keyword_location: Option<String>,
    pub findings: Vec<Finding>,
    pub hint: Cow<'static, str>,
}

// Faults are built on rejection paths only: `#[cold]` lets the compiler lay every branch that
// builds one out of the admission path's way.
impl Fault {
    #[cold]
    pub(crate) fn new(
        layer: Layer,
        rule: impl Into<Cow<'static, str>>,
        message: impl AsRef<str>,
        hint: impl Into<Cow<'static, str>>,
    ) -> Fault {
        Fault(Box::new(FaultDetail {
            layer,
            rule: rule.into(),
            code: ErrorCode::InvalidResponse,
            retryable: None,
            message: sanitize(message.as_ref(), MESSAGE_CAP),
            instance_path: None,
            keyword_location: None,
            findings: Vec::new(),
            hint: hint.into(),
        }))
    }

    #[cold]
    pub(crate) fn at(mut self, instance_path: &str) -> Fault {
        self.instance_path = Some(sanitize(instance_path, PATH_CAP));
        self
    }

    pub(crate) fn keyword(mut self, keyword_location: &str) -> Fault {
        self.keyword_location = Some(sanitize(keyword_location, PATH_CAP));
        self
    }

    pub(crate) fn code(mut self, code: ErrorCode) -> Fault {
        self.code = code;
        self
    }

    pub(crate) fn retryable(mut self, retryable: bool) -> Fault {
        self.retryable = Some(retryable);
        self
    }

    pub(crate) fn into_detail(self) -> FaultDetail {
        *self.0
    }

    pub(crate) fn with_findings(mut self, findings: impl IntoIterator<Item = Finding>) -> Fault {
        self.findings
            .extend(findings.into_iter().take(FINDINGS_CAP));
        self
    }
}

impl std::ops::Deref for Fault {
    type Target = FaultDetail;

    fn deref(&self) -> &FaultDetail {
        &self.0
    }
}

impl std::ops::DerefMut for Fault {
    fn deref_mut(&mut self) -> &mut FaultDetail {
        &mut self.0
    }
}

/// One problem found in the response, beyond the first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub(crate) instance_path: String,
    pub(crate) keyword_location: String,
    pub(crate) message: String,
}

impl Finding {
    pub(crate) fn new(instance_path: &str, keyword_location: &str, message: &str) -> Finding {
        Finding {
            instance_path: sanitize(instance_path, PATH_CAP),
            keyword_location: sanitize(keyword_location, PATH_CAP),
            message: sanitize(message, MESSAGE_CAP),
        }
    }

    /// JSON pointer into the response (escaped, capped).
    pub fn instance_path(&self) -> &str {
        &self.instance_path
    }

    /// JSON pointer into the schema (escaped, capped).
    pub fn keyword_location(&self) -> &str {
        &self.keyword_location
    }

    /// The validator's own message (escaped, capped).
    pub fn message(&self) -> &str {
        &self.message
    }
}
