//! `Request`, the outstanding request a response is decided under, and `Decision`, what the gate
//! said of one response: the agent bytes, the operator record, the audit event.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;
use serde_json::Value;
use toolgate_gate::{Outcome, Request as GateRequest};

use crate::values::{context_map, serialized_to_python, to_python};

/// How deep a context value may nest before it is refused.
pub(crate) const MAX_CONTEXT_DEPTH: usize = 64;

/// The outstanding request a response is decided under. Built once (its context converted
/// once), it can decide any number of responses: the fastest way to call `admit`.
#[pyclass(frozen, module = "toolgate_gate")]
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) inner: GateRequest,
    /// The upstream status the adapter saw (an HTTP status), if any.
    #[pyo3(get)]
    pub(crate) upstream_status: Option<u16>,
}

#[pymethods]
impl Request {
    #[new]
    #[pyo3(signature = (request_id, context = None, upstream_status = None, upstream = None))]
    pub(crate) fn new(
        request_id: String,
        context: Option<&Bound<'_, PyAny>>,
        upstream_status: Option<u16>,
        upstream: Option<String>,
    ) -> PyResult<Request> {
        let mut inner = GateRequest::new(request_id);
        if let Some(context) = context.filter(|context| !context.is_none()) {
            inner = inner.with_context_map(context_map(context)?);
        }
        if let Some(upstream) = upstream {
            inner = inner.with_upstream(upstream);
        }
        Ok(Request {
            inner,
            upstream_status,
        })
    }

    /// The request's id (a correlation rule holds the answer to it).
    #[getter]
    fn request_id(&self) -> &str {
        self.inner.id()
    }

    /// The trusted context the rules read (a dict): what was asked, and the operator's lists.
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &Value::Object(self.inner.context().clone()))
    }

    /// Where the call went, for the operator record (`GET https://…`).
    #[getter]
    fn upstream(&self) -> Option<&str> {
        self.inner.upstream()
    }

    fn __repr__(&self) -> String {
        format!(
            "Request(request_id={:?}, context={}, upstream_status={:?})",
            self.inner.id(),
            Value::Object(self.inner.context().clone()),
            self.upstream_status
        )
    }
}

/// The gate's decision on one response.
#[pyclass(frozen, module = "toolgate_gate")]
pub(crate) struct Decision {
    pub(crate) inner: toolgate_gate::Decision,
    /// Observed only (`admit(observe=True)`): the bytes as the tool returned them, which the
    /// agent is given in place of the gate's.
    pub(crate) forwarded: Option<PyBackedBytes>,
}

#[pymethods]
impl Decision {
    /// Whether the response was admitted (a success, or a failure the contract allows).
    #[getter]
    fn admitted(&self) -> bool {
        !matches!(self.inner.outcome(), Outcome::Rejected(_))
    }

    /// `"admitted"`, `"admitted_failure"` or `"rejected"`.
    #[getter]
    fn outcome(&self) -> &'static str {
        self.inner.outcome().as_str()
    }

    /// The layer that refused (`"schema"`, `"semantic"`, …), for a rejection.
    #[getter]
    fn layer(&self) -> Option<&'static str> {
        self.inner
            .rejection()
            .map(|rejection| rejection.layer().as_str())
    }

    /// The rule within the layer that refused, for a rejection.
    #[getter]
    fn rule(&self) -> Option<&str> {
        self.inner.rule()
    }

    /// The code the agent sees (`NOT_FOUND`, `UPSTREAM_UNAVAILABLE`, `INVALID_RESPONSE`), unless
    /// the response was admitted as a success.
    #[getter]
    fn code(&self) -> Option<&'static str> {
        self.inner.outcome().code().map(|code| code.as_str())
    }

    /// Whether the agent is told that asking again may help.
    #[getter]
    fn retryable(&self) -> bool {
        self.inner.retryable()
    }

    /// The shape that matched (`"current"`, or a legacy shape's name), when one did.
    #[getter]
    fn shape(&self) -> Option<&str> {
        self.inner.shape()
    }

    /// Exactly the bytes the agent sees: the projection, or the fixed failure; observed only
    /// (`admit(observe=True)`), the bytes as the tool returned them.
    #[getter]
    fn agent_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.agent())
    }

    /// The agent bytes, parsed (a dict; a str for a text contract's projection is inside it).
    fn agent_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value: Value = serde_json::from_slice(self.agent())
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        to_python(py, &value)
    }

    /// The bytes the gate built (the projection, or the fixed failure), enforced or not.
    #[getter]
    fn gate_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.agent_bytes())
    }

    /// Whether the decision is enforced: `False` when only observed (`admit(observe=True)`).
    #[getter]
    fn enforced(&self) -> bool {
        self.forwarded.is_none()
    }

    /// What the shadow version (`admit(shadow=…)`) decided of the same call, as a dict
    /// (`version`, `contract_digest`, `outcome`, `layer`, `code`, `agent_differs`); None
    /// without one.
    #[getter]
    fn shadow<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .shadow()
            .map(|shadow| serialized_to_python(py, shadow))
            .transpose()
    }

    /// Whether the shadow version decided otherwise: another outcome, or other agent bytes.
    #[getter]
    fn shadow_disagrees(&self) -> bool {
        self.inner.shadow_disagrees()
    }

    /// The operator's account of a rejection, as `toolgate check --explain` prints it (None
    /// when admitted). Holds what the upstream wrote, escaped and capped: for logs, never for
    /// the agent.
    #[getter]
    fn operator_text(&self) -> Option<String> {
        self.inner.operator_record().map(ToString::to_string)
    }

    /// The operator record as a dict (None when admitted).
    #[getter]
    fn operator_record<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .operator_record()
            .map(|record| serialized_to_python(py, record))
            .transpose()
    }

    /// The audit event as one JSON line (bytes, with its newline), as every sink writes it.
    #[getter]
    fn audit_line<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        // Written from the decision: a sink that only logs the line builds no event.
        let mut line = Vec::new();
        self.inner.write_audit_line(&mut line);
        PyBytes::new(py, &line)
    }

    /// The audit event as a dict.
    #[getter]
    fn audit_event<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value: Value = serde_json::from_slice(&self.inner.audit_event().to_json_line())
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        to_python(py, &value)
    }

    fn __repr__(&self) -> String {
        let mut shown = match self.code() {
            None => "Decision(admitted".to_owned(),
            Some(code) => format!(
                "Decision({}, code={code}, retryable={}",
                self.outcome(),
                if self.retryable() { "True" } else { "False" }
            ),
        };
        if let Some(shadow) = self.inner.shadow() {
            shown.push_str(&format!(", shadow {}={}", shadow.version, shadow.outcome));
        }
        if !self.enforced() {
            shown.push_str(", observed only");
        }
        shown.push(')');
        shown
    }
}

impl Decision {
    /// What the agent is given: the gate's bytes, or the tool's when only observed.
    fn agent(&self) -> &[u8] {
        self.forwarded
            .as_deref()
            .unwrap_or(self.inner.agent_bytes())
    }
}
