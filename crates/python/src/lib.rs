//! `toolgate_gate._native`: the toolgate gate as a Python extension module (PyO3, abi3).
//!
//! A thin layer over the gate crate, so the bytes a Python agent receives are the ones the
//! harness tested: `Contract` compiles once and is shared across threads; `admit` takes the raw
//! bytes a tool returned (a `dict` is refused: re-serializing would hide duplicate keys) and
//! releases the GIL while the gate decides; a `Decision` holds the agent bytes, the operator
//! record and the audit event. The Python package around it (`python/toolgate_gate/`) adds the
//! framework wrappers; its type stubs are `python/toolgate_gate/_native.pyi`.

mod door;
mod retention;
mod values;
use retention::Retention;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use values::{
    context_map, decision_time, raw_bytes, request_from_dict, serialized_to_python, to_python,
};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};
use toolgate_gate::{
    CompileErrors, ContractSource, ErrorCode, Outcome, Request as GateRequest, Response,
};

// The extension's own allocations (the gate's, per decision) through mimalloc, as in the
// `toolgate` binary: measured faster than the platform's malloc on the gate's many small
// allocations (BENCHMARKS.md). Python's own objects keep Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(
    _native,
    RetentionError,
    pyo3::exceptions::PyException,
    "A retention store that cannot be used: a folder that cannot be created or is not private\n\
     enough, a bucket that cannot be reached, a recipient that is not an age public key."
);

pyo3::create_exception!(
    _native,
    ContractError,
    pyo3::exceptions::PyException,
    "A contract that cannot be loaded or compiled. `errors` lists each problem as a\n\
     `ContractProblem` (file, line, column, JSON pointer, message, fix)."
);

/// One problem with a contract: where it is and what to do.
#[pyclass(frozen, get_all, module = "toolgate_gate")]
#[derive(Debug, Clone)]
struct ContractProblem {
    /// The file, as the contract names it (or its path, when read from a folder).
    file: String,
    /// The 1-based line, when the problem is in `contract.yaml` and has one.
    line: Option<u64>,
    /// The 1-based column, with the line.
    column: Option<u64>,
    /// The JSON pointer into the file, when the problem has one.
    json_pointer: Option<String>,
    /// What is wrong.
    message: String,
    /// How to fix it, when the gate knows.
    fix: Option<String>,
}

#[pymethods]
impl ContractProblem {
    fn __repr__(&self) -> String {
        format!("ContractProblem({})", self.__str__())
    }

    fn __str__(&self) -> String {
        let mut shown = self.file.clone();
        if let (Some(line), Some(column)) = (self.line, self.column) {
            shown.push_str(&format!(":{line}:{column}"));
        }
        if let Some(pointer) = &self.json_pointer {
            shown.push_str(&format!(" at {pointer}"));
        }
        shown.push_str(&format!(": {}", self.message));
        if let Some(fix) = &self.fix {
            shown.push_str(&format!(" ({fix})"));
        }
        shown
    }
}

fn contract_error(py: Python<'_>, errors: &CompileErrors) -> PyErr {
    let problems: Vec<ContractProblem> = errors
        .errors()
        .iter()
        .map(|error| ContractProblem {
            file: error.file().to_owned(),
            line: error.line().map(|(line, _)| line),
            column: error.line().map(|(_, column)| column),
            json_pointer: error.json_pointer().map(str::to_owned),
            message: error.message().to_owned(),
            fix: error.fix().map(str::to_owned),
        })
        .collect();
    let text = problems
        .iter()
        .map(ContractProblem::__str__)
        .collect::<Vec<_>>()
        .join("\n");
    let error = ContractError::new_err(text);
    let list = problems
        .into_iter()
        .map(|problem| Py::new(py, problem))
        .collect::<PyResult<Vec<_>>>();
    if let Ok(list) = list {
        let _ = error.value(py).setattr("errors", list);
    }
    error
}

fn single_problem(py: Python<'_>, file: &Path, message: String) -> PyErr {
    let error = ContractError::new_err(format!("{}: {message}", file.display()));
    let problem = ContractProblem {
        file: file.display().to_string(),
        line: None,
        column: None,
        json_pointer: None,
        message,
        fix: None,
    };
    if let Ok(problem) = Py::new(py, problem) {
        let _ = error.value(py).setattr("errors", vec![problem]);
    }
    error
}

/// A compiled contract: compile once, then admit from any number of threads.
#[pyclass(frozen, module = "toolgate_gate")]
struct Contract {
    inner: Arc<toolgate_gate::Contract>,
}

#[pymethods]
impl Contract {
    /// The contract of `tool` from a repository root holding `contracts/<tool>/v<N>/`, or from
    /// a bundle `toolgate bundle` wrote (read and checked whole, as every front reads one): the
    /// newest version, or `version` ("v2" or 2).
    #[staticmethod]
    #[pyo3(signature = (root, tool, version = None))]
    fn load(
        py: Python<'_>,
        root: PathBuf,
        tool: &str,
        version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Contract> {
        if toolgate_repo::bundle::is_bundle(&root) {
            let version = version.map(version_name).transpose()?;
            let loaded = py.detach(|| {
                toolgate_repo::bundle::open_contracts(&root)
                    .and_then(|repository| repository.load(tool, version.as_deref()))
            });
            return match loaded {
                Ok(inner) => Ok(Contract {
                    inner: Arc::new(inner),
                }),
                Err(toolgate_repo::LoadError::Compile(errors)) => Err(contract_error(py, &errors)),
                Err(other) => Err(single_problem(py, &root, other.to_string())),
            };
        }
        let folder = root.join("contracts").join(tool);
        let version = match version {
            None => newest_version(py, &folder)?,
            Some(given) => version_name(given)?,
        };
        Contract::from_folder(py, folder.join(version))
    }

    /// The contract in one version folder (`contract.yaml` and its schema files).
    #[staticmethod]
    fn from_folder(py: Python<'_>, folder: PathBuf) -> PyResult<Contract> {
        let compiled = py.detach(|| {
            ContractSource::read_dir(&folder)
                .and_then(|source| toolgate_gate::Contract::compile(&source))
        });
        compiled
            .map(|inner| Contract {
                inner: Arc::new(inner),
            })
            .map_err(|errors| contract_error(py, &errors))
    }

    /// A contract from the text of its files: `contract.yaml`, and each schema file by the
    /// name `contract.yaml` and `$ref`s use.
    #[staticmethod]
    #[pyo3(signature = (contract_yaml, schemas = None))]
    fn from_files(
        py: Python<'_>,
        contract_yaml: String,
        schemas: Option<BTreeMap<String, String>>,
    ) -> PyResult<Contract> {
        let mut source = ContractSource::new(contract_yaml);
        for (name, text) in schemas.unwrap_or_default() {
            source = source.with_schema(name, text);
        }
        py.detach(|| toolgate_gate::Contract::compile(&source))
            .map(|inner| Contract {
                inner: Arc::new(inner),
            })
            .map_err(|errors| contract_error(py, &errors))
    }

    /// The tool this contract gates.
    #[getter]
    fn tool(&self) -> &str {
        self.inner.tool()
    }

    /// Its version folder's name (`v1`).
    #[getter]
    fn version(&self) -> &str {
        self.inner.version()
    }

    /// `"result"` (a tool's answer) or `"action"` (a model's proposed call).
    #[getter]
    fn direction(&self) -> &'static str {
        match self.inner.direction() {
            toolgate_gate::Direction::Result => "result",
            toolgate_gate::Direction::Action => "action",
        }
    }

    /// The retry policy, as the contract states it.
    #[getter]
    fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            contract: Arc::clone(&self.inner),
        }
    }

    /// Decides on `raw`, the bytes the tool returned (an HTTP body: `response.content`; a
    /// subprocess's stdout), under `request` (a `Request`, or a dict with `request_id`, and
    /// optionally `context`, `upstream_status`, `upstream`). `now` is the decision time (an
    /// aware `datetime`; the current time by default). The GIL is released while deciding.
    ///
    /// `shadow`, another version of the same tool's contract, decides the same call beside
    /// this one, never enforced: the decision's `shadow` and audit line say what it decided.
    /// `observe=True` is report-only: decided and audited, but `agent_bytes` is `raw` as it
    /// came (refused in CI). `retain`, a `Retention`, keeps what its policy chooses. `metrics`,
    /// a `Metrics`, counts the decision and how long it took. `tool_error=True` says the tool
    /// answered with its own error (an MCP result with `isError`), `raw` being its structured
    /// part (or empty): the contract's `upstream_errors` with `tool_error: true` map it, and
    /// unmapped it is `INVALID_RESPONSE`, not retryable.
    #[pyo3(signature = (raw, request, now = None, *, shadow = None, observe = false, retain = None, metrics = None, tool_error = false))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, each its own switch
    fn admit(
        &self,
        py: Python<'_>,
        raw: &Bound<'_, PyAny>,
        request: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        shadow: Option<&Contract>,
        observe: bool,
        retain: Option<&Retention>,
        metrics: Option<&Metrics>,
        tool_error: bool,
    ) -> PyResult<Decision> {
        let given = raw_bytes(raw)?;
        // A body over the limit is decided on its first max_bytes + 1 bytes, as `toolgate check`
        // reads one (so its audit line, length and digest, is the same): the rest cannot change
        // the decision.
        let raw = &given[..given.len().min(self.inner.max_bytes().saturating_add(1))];
        let now = decision_time(now)?;
        if let Some(shadow) = shadow {
            self.check_shadow(shadow)?;
        }
        if observe {
            toolgate_front::refuse_observe_in_ci("Contract.admit(observe=True)")
                .map_err(|error| PyValueError::new_err(error.to_string()))?;
        }
        let retainer = retain.map(Retention::retainer).transpose()?;
        let typed;
        let converted;
        let (request, status) = match request.cast::<Request>() {
            Ok(request) => {
                typed = request.get();
                (&typed.inner, typed.upstream_status)
            }
            Err(_) => {
                converted = request_from_dict(request)?;
                (&converted.inner, converted.upstream_status)
            }
        };
        if tool_error && status.is_some() {
            return Err(PyValueError::new_err(
                "tool_error=True with an upstream_status: a tool's own error has no status; give one or the other",
            ));
        }
        let contract = &self.inner;
        let decide = || {
            let mut response = if tool_error {
                Response::tool_error(raw)
            } else {
                Response::body(raw)
            };
            if let Some(status) = status {
                response = response.with_status(status);
            }
            // The binding's front: the steps this call's arguments turn on (no audit log, no
            // trace; the operator record is on the Decision returned).
            let steps = toolgate_front::Steps {
                observe,
                metrics: metrics.map(|metrics| &metrics.inner),
                retainer: retainer.as_ref().and_then(|guard| guard.as_ref()),
                ..toolgate_front::Steps::default()
            };
            let gated = toolgate_front::Gated {
                contract,
                shadow: shadow.map(|shadow| &*shadow.inner),
            };
            let call = steps.begin(contract, None);
            steps.decide(gated, response, request, now, &call)
        };
        // Releasing the GIL costs a hand-off each way; for a small body the gate's work is
        // shorter than that, and threads would queue on the GIL instead of deciding.
        let decision = if raw.len() >= DETACH_AT_BYTES {
            py.detach(decide)
        } else {
            decide()
        };
        Ok(Decision {
            inner: decision,
            forwarded: observe.then_some(given),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Contract(tool={:?}, version={:?})",
            self.inner.tool(),
            self.inner.version()
        )
    }
}

impl Contract {
    /// A shadow decides the same tool's calls under another version; anything else would
    /// compare decisions of different questions.
    fn check_shadow(&self, shadow: &Contract) -> PyResult<()> {
        if shadow.inner.tool() != self.inner.tool() {
            return Err(PyValueError::new_err(format!(
                "shadow is a contract of {:?}, not of {:?}: a shadow is another version of the same tool's contract",
                shadow.inner.tool(),
                self.inner.tool()
            )));
        }
        if shadow.inner.digest() == self.inner.digest() {
            return Err(PyValueError::new_err(format!(
                "shadow is {} {} itself: give the candidate version (Contract.load(root, {:?}, \"v2\"))",
                self.inner.tool(),
                self.inner.version(),
                self.inner.tool()
            )));
        }
        Ok(())
    }
}

/// The body size from which `admit` releases the GIL while the gate decides.
const DETACH_AT_BYTES: usize = 2048;

/// The newest `v<N>` folder of a tool.
fn newest_version(py: Python<'_>, folder: &Path) -> PyResult<String> {
    let entries = std::fs::read_dir(folder).map_err(|error| {
        single_problem(
            py,
            folder,
            format!("cannot read the tool's contract folder: {error}"),
        )
    })?;
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let number: u64 = name.strip_prefix('v')?.parse().ok()?;
            Some((number, name))
        })
        .max()
        .map(|(_, name)| name)
        .ok_or_else(|| {
            single_problem(
                py,
                folder,
                "no version folder (v1, v2, …) in the tool's contract folder".to_owned(),
            )
        })
}

fn version_name(given: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(number) = given.extract::<u64>() {
        return Ok(format!("v{number}"));
    }
    let text: String = given
        .extract()
        .map_err(|_| PyTypeError::new_err("version is a folder name (\"v2\") or a number (2)"))?;
    if text.strip_prefix('v').is_some_and(|digits| {
        !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit())
    }) {
        Ok(text)
    } else {
        Err(PyValueError::new_err(format!(
            "version {text:?} is not a version folder's name (v1, v2, …)"
        )))
    }
}

/// How deep a context value may nest before it is refused.
const MAX_CONTEXT_DEPTH: usize = 64;

/// The outstanding request a response is decided under. Built once (its context converted
/// once), it can decide any number of responses: the fastest way to call `admit`.
#[pyclass(frozen, module = "toolgate_gate")]
#[derive(Debug, Clone)]
struct Request {
    inner: GateRequest,
    /// The upstream status the adapter saw (an HTTP status), if any.
    #[pyo3(get)]
    upstream_status: Option<u16>,
}

#[pymethods]
impl Request {
    #[new]
    #[pyo3(signature = (request_id, context = None, upstream_status = None, upstream = None))]
    fn new(
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
struct Decision {
    inner: toolgate_gate::Decision,
    /// Observed only (`admit(observe=True)`): the bytes as the tool returned them, which the
    /// agent is given in place of the gate's.
    forwarded: Option<PyBackedBytes>,
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

/// The metrics a front keeps, as `toolgate mcp-proxy` and `toolgate serve` keep them: every
/// decision `Contract.admit(metrics=…)` made, by tool, version, direction, outcome, layer and
/// code, and how long each took. Publish them with your own metrics library from
/// `snapshot()` (every sample), or serve `exposition()` (the Prometheus text) as they are.
#[pyclass(frozen, module = "toolgate_gate")]
struct Metrics {
    inner: toolgate_telemetry::Metrics,
}

#[pymethods]
impl Metrics {
    #[new]
    fn new() -> Metrics {
        Metrics {
            inner: toolgate_telemetry::Metrics::new(),
        }
    }

    /// Every sample, as a scraper would read it: a list of dicts with `name` (the series,
    /// `_total`, `_bucket`, `_sum` and `_count` included), `labels` (a dict) and `value` (a
    /// float).
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let samples = PyList::empty(py);
        for sample in self.inner.samples() {
            let labels = PyDict::new(py);
            for (name, value) in &sample.labels {
                labels.set_item(name, value)?;
            }
            let item = PyDict::new(py);
            item.set_item("name", &sample.name)?;
            item.set_item("labels", labels)?;
            item.set_item("value", sample.value)?;
            samples.append(item)?;
        }
        Ok(samples)
    }

    /// The Prometheus text exposition (version 0.0.4).
    fn exposition(&self) -> String {
        self.inner.prometheus_text()
    }

    /// Counts what `retention` keeps, drops and evicts (`toolgate_retention_records_total`).
    fn watch(&self, retention: &Retention) -> PyResult<()> {
        let retainer = retention.read();
        let retainer = retainer
            .as_ref()
            .ok_or_else(|| RetentionError::new_err("this Retention is closed"))?;
        self.inner.watch_retainer(retainer);
        Ok(())
    }

    /// Counts `contract` in `toolgate_contract_info` (tool, version, digest).
    fn loaded(&self, contract: &Contract) {
        self.inner.contract_loaded(&contract.inner);
    }

    fn __repr__(&self) -> String {
        format!("Metrics({} samples)", self.inner.samples().len())
    }
}

/// A contract's retry policy: how often and how long to call again, and for which codes.
#[pyclass(frozen, module = "toolgate_gate")]
struct RetryPolicy {
    contract: Arc<toolgate_gate::Contract>,
}

#[pymethods]
impl RetryPolicy {
    /// The most attempts, the first included.
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.contract.retry_policy().max_attempts()
    }

    /// The time budget for all attempts together, in seconds.
    #[getter]
    fn time_budget(&self) -> f64 {
        self.contract.retry_policy().time_budget().as_secs_f64()
    }

    /// The codes a retry may help with.
    #[getter]
    fn retryable_codes(&self) -> Vec<&'static str> {
        self.contract
            .retry_policy()
            .retryable_codes()
            .iter()
            .map(|code| code.as_str())
            .collect()
    }

    /// Whether to call again after `decision`, the `attempt`-th (from 1), `elapsed` seconds in.
    fn should_retry(&self, decision: &Decision, attempt: u32, elapsed: f64) -> PyResult<bool> {
        if !elapsed.is_finite() || elapsed < 0.0 {
            return Err(PyValueError::new_err(
                "elapsed is a number of seconds, 0 or more",
            ));
        }
        Ok(self.contract.retry_policy().should_retry(
            &decision.inner,
            attempt,
            Duration::from_secs_f64(elapsed),
        ))
    }

    /// Whether a code is one the policy retries.
    fn is_retryable(&self, code: &str) -> PyResult<bool> {
        let code = ErrorCode::from_wire(code)
            .ok_or_else(|| PyValueError::new_err(format!("{code:?} is not a gate error code")))?;
        Ok(self.contract.retry_policy().is_retryable(code))
    }
}

/// For the benchmark only (crates/python/bench): `rounds` passes of the Rust `admit` over
/// `raws` in this very build, timed in Rust, so the binding's own cost per call is the
/// difference from `Contract.admit` called from Python. Returns nanoseconds per input, one per
/// pass.
#[pyfunction]
fn _admit_loop(
    py: Python<'_>,
    contract: &Contract,
    raws: Vec<PyBackedBytes>,
    request: &Request,
    rounds: usize,
) -> Vec<f64> {
    let now = SystemTime::now();
    py.detach(|| {
        (0..rounds)
            .map(|_| {
                let started = std::time::Instant::now();
                for raw in &raws {
                    std::hint::black_box(contract.inner.admit_response(
                        Response::body(raw),
                        &request.inner,
                        now,
                    ));
                }
                started.elapsed().as_nanos() as f64 / raws.len().max(1) as f64
            })
            .collect()
    })
}

/// The gate's version.
#[pyfunction]
fn gate_version() -> &'static str {
    toolgate_gate::GATE_VERSION
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Contract>()?;
    module.add_class::<Decision>()?;
    module.add_class::<Request>()?;
    module.add_class::<RetryPolicy>()?;
    module.add_class::<ContractProblem>()?;
    module.add_class::<Retention>()?;
    module.add_class::<Metrics>()?;
    module.add_class::<door::Door>()?;
    module.add("DoorError", module.py().get_type::<door::DoorError>())?;
    module.add("RetentionError", module.py().get_type::<RetentionError>())?;
    module.add("ContractError", module.py().get_type::<ContractError>())?;
    module.add_function(wrap_pyfunction!(gate_version, module)?)?;
    module.add_function(wrap_pyfunction!(door::fixed_failure, module)?)?;
    module.add_function(wrap_pyfunction!(_admit_loop, module)?)?;
    Ok(())
}
