//! `Door`: the gate inside a Python gateway that hands its plugins an MCP call's parts already
//! parsed (LiteLLM's guardrails, ContextForge's plugins; `toolgate_gate.litellm`,
//! `toolgate_gate.contextforge`). It is `toolgate_mcp::Door`, the one every door of the binary
//! decides with, so a call gets the same agent bytes and the same audit line as through
//! `toolgate mcp-proxy`; its front (audit log, retention, rollout) is opened from the same
//! settings the binary's flags name.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use serde_json::Value;
use toolgate_front::FrontConfig;
use toolgate_mcp::{ArgumentsDecided, DoorConfig, Handed};
use toolgate_store::RetentionConfig;

use crate::values::{to_json, to_python};

pyo3::create_exception!(
    _native,
    DoorError,
    pyo3::exceptions::PyException,
    "A door that cannot be opened: contracts that do not compile, a context file, an audit log\n\
     or a retention store that cannot be used. The message says which and what to do."
);

/// The most a `close` waits for the audit log's last lines and the retention queue by default.
const CLOSE_WITHIN: Duration = Duration::from_secs(5);

#[pyclass(frozen, module = "toolgate_gate")]
pub(super) struct Door {
    inner: toolgate_mcp::Door,
}

#[pymethods]
impl Door {
    /// Opens the contracts at `contracts` (a repository folder or a bundle) and the front.
    #[new]
    #[pyo3(signature = (contracts, *, name = None, context = None, audit = None, audit_key = None, retain = None, retain_admitted = None, shadow = Vec::new(), enforce = Vec::new(), observe = false, redact_values = false))]
    #[expect(
        clippy::too_many_arguments,
        reason = "Python's keyword arguments, each its own setting"
    )]
    fn new(
        py: Python<'_>,
        contracts: PathBuf,
        name: Option<&str>,
        context: Option<PathBuf>,
        audit: Option<PathBuf>,
        audit_key: Option<PathBuf>,
        retain: Option<String>,
        retain_admitted: Option<&str>,
        shadow: Vec<String>,
        enforce: Vec<String>,
        observe: bool,
        redact_values: bool,
    ) -> PyResult<Door> {
        let retention = match retain {
            Some(store) => {
                let mut config = RetentionConfig::new(store);
                if let Some(rate) = retain_admitted {
                    config.admitted_rate = toolgate_store::parse_rate(rate).map_err(|why| {
                        pyo3::exceptions::PyValueError::new_err(format!("retain_admitted: {why}"))
                    })?;
                }
                Some(config)
            }
            None => None,
        };
        let config = DoorConfig {
            // A door is opened once per gateway process: its name lives as long as the process.
            name: Box::leak(
                name.map_or_else(|| "python".to_owned(), |name| format!("python {name}"))
                    .into_boxed_str(),
            ),
            root: contracts,
            front: FrontConfig {
                audit,
                audit_key,
                audit_flush_interval: None,
                retention,
                redact_values,
                shadow,
                enforce,
                observe,
                ..FrontConfig::default()
            },
            context,
            allow: Vec::new(),
            max_message_bytes: None,
            only_tool: None,
        };
        let inner = py
            .detach(|| toolgate_mcp::Door::open(&config))
            .map_err(|error| DoorError::new_err(error.to_string()))?;
        Ok(Door { inner })
    }

    /// A call's arguments, decided by the tool's argument contract: `("unchanged", None)`,
    /// `("rebuilt", arguments)` (call the tool with these), or `("refused", failure)` (do not call
    /// it; `failure` is the tool's fixed failure, the agent bytes).
    fn decide_arguments<'py>(
        &self,
        py: Python<'py>,
        tool: &str,
        request_id: &str,
        arguments: &Bound<'py, PyAny>,
    ) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
        let Ok(arguments) = to_json(arguments, 0) else {
            let failure = toolgate_mcp::fixed_failure(tool, request_id);
            return Ok(("refused", failure.into_pyobject(py)?.into_any()));
        };
        let decided = py.detach(|| self.inner.decide_arguments(tool, request_id, &arguments));
        Ok(match decided {
            ArgumentsDecided::Unchanged => ("unchanged", py.None().into_bound(py)),
            ArgumentsDecided::Rebuilt(rebuilt) => ("rebuilt", to_python(py, &rebuilt)?),
            ArgumentsDecided::Refused(failure) => {
                ("refused", failure.into_pyobject(py)?.into_any())
            }
        })
    }

    /// A call's result (the MCP `CallToolResult` as a dict), decided by the tool's contract:
    /// `(result, agent_bytes)`, the result the host is given and its agent bytes (`None` in
    /// observe mode, where the result is the upstream's as it came).
    fn decide_result<'py>(
        &self,
        py: Python<'py>,
        tool: &str,
        request_id: &str,
        arguments: &Bound<'py, PyAny>,
        result: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, Option<String>)> {
        let arguments = to_json(arguments, 0).unwrap_or(Value::Null);
        let result = to_json_within(result);
        let decided = py.detach(|| {
            let handed = match &result {
                Some(result) => Handed::Result(result),
                None => Handed::Nothing("a result that is not JSON, or nests too deeply"),
            };
            self.inner
                .decide_result(tool, request_id, &arguments, handed)
        });
        let result: Value = serde_json::from_slice(&decided.result).unwrap_or(Value::Null);
        Ok((to_python(py, &result)?, decided.agent))
    }

    /// A `tools/list` result as the door offers it: tools without a contract left out, each
    /// output schema the one the agent's results meet. `None` where it cannot be read.
    fn decide_tools_list<'py>(
        &self,
        py: Python<'py>,
        result: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(result) = to_json_within(result) else {
            return Ok(None);
        };
        match py.detach(|| self.inner.decide_tools_list(&result)) {
            Some(listed) => Ok(Some(to_python(py, &listed)?)),
            None => Ok(None),
        }
    }

    /// Whether the door only reports (observe mode): it decides and audits, and the upstream's
    /// results go on unchanged.
    #[getter]
    fn observe(&self) -> bool {
        self.inner.front().observe()
    }

    /// Writes what is held back (the audit log's last signed checkpoint, the retention queue),
    /// waiting at most `within` seconds.
    #[pyo3(signature = (within = None))]
    fn close(&self, py: Python<'_>, within: Option<f64>) {
        let within = within
            .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
            .unwrap_or(CLOSE_WITHIN);
        py.detach(|| self.inner.front().finish(within));
    }

    fn __repr__(&self) -> String {
        format!("Door({})", self.inner.front().summary())
    }
}

/// The tool's fixed failure for request `request_id`, where no contract decided the call: what a
/// plugin answers when the door could not be asked.
#[pyfunction]
pub(super) fn fixed_failure(tool: &str, request_id: &str) -> String {
    toolgate_mcp::fixed_failure(tool, request_id)
}

/// A value handed over, as JSON, or `None` where it is not JSON or nests too deeply: the door
/// then decides the call as one it could not read.
fn to_json_within(value: &Bound<'_, PyAny>) -> Option<Value> {
    to_json(value, 0).ok()
}
