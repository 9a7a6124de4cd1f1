//! `toolgate_gate._native`: the toolgate gate as a Python extension module (PyO3, abi3).
//!
//! A thin layer over the gate crate, so the bytes a Python agent receives are the ones the
//! harness tested: `Contract` compiles once and is shared across threads; `admit` takes the raw
//! bytes a tool returned (a `dict` is refused: re-serializing would hide duplicate keys) and
//! releases the GIL while the gate decides; a `Decision` holds the agent bytes, the operator
//! record and the audit event. The Python package around it (`python/toolgate_gate/`) adds the
//! framework wrappers; its type stubs are `python/toolgate_gate/_native.pyi`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    /// The contract of `tool` from a repository root holding `contracts/<tool>/v<N>/`: the
    /// newest version, or `version` ("v2" or 2).
    #[staticmethod]
    #[pyo3(signature = (root, tool, version = None))]
    fn load(
        py: Python<'_>,
        root: PathBuf,
        tool: &str,
        version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Contract> {
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
    #[pyo3(signature = (raw, request, now = None))]
    fn admit(
        &self,
        py: Python<'_>,
        raw: &Bound<'_, PyAny>,
        request: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Decision> {
        let raw = raw_bytes(raw)?;
        // A body over the limit is decided on its first max_bytes + 1 bytes, as `toolgate check`
        // reads one (so its audit line, length and digest, is the same): the rest cannot change
        // the decision.
        let raw = &raw[..raw.len().min(self.inner.max_bytes().saturating_add(1))];
        let now = decision_time(now)?;
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
        let contract = &self.inner;
        let decide = || {
            let mut response = Response::body(raw);
            if let Some(status) = status {
                response = response.with_status(status);
            }
            contract.admit_response(response, request, now)
        };
        // Releasing the GIL costs a hand-off each way; for a small body the gate's work is
        // shorter than that, and threads would queue on the GIL instead of deciding.
        let decision = if raw.len() >= DETACH_AT_BYTES {
            py.detach(decide)
        } else {
            decide()
        };
        Ok(Decision { inner: decision })
    }

    fn __repr__(&self) -> String {
        format!(
            "Contract(tool={:?}, version={:?})",
            self.inner.tool(),
            self.inner.version()
        )
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

/// The raw bytes, borrowed without a copy from `bytes` (copied from `bytearray` or
/// `memoryview`), never a parsed value.
fn raw_bytes(raw: &Bound<'_, PyAny>) -> PyResult<PyBackedBytes> {
    if let Ok(bytes) = raw.extract::<PyBackedBytes>() {
        return Ok(bytes);
    }
    if raw.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "raw must be the bytes the tool returned, not str: decoding already lost them (use response.content, or proc.stdout from subprocess.run without text=True)",
        ));
    }
    if raw.is_instance_of::<PyDict>() || raw.is_instance_of::<PyList>() {
        return Err(PyTypeError::new_err(
            "raw must be the bytes the tool returned, not a parsed value: re-serializing it would hide duplicate keys and number spellings the gate checks (use response.content, not response.json())",
        ));
    }
    let copied = raw.extract::<Vec<u8>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "raw must be bytes (or bytearray, memoryview), got {}",
            raw.get_type()
                .name()
                .map(|name| name.to_string())
                .unwrap_or_default()
        ))
    })?;
    Ok(PyBackedBytes::from(PyBytes::new(raw.py(), &copied)))
}

/// A request from a dict: `request_id`, and optionally `context`, `upstream_status`, `upstream`.
fn request_from_dict(request: &Bound<'_, PyAny>) -> PyResult<Request> {
    let Ok(members) = request.cast::<PyDict>() else {
        return Err(PyTypeError::new_err(
            "request must be a toolgate_gate.Request or a dict with request_id (and optionally context, upstream_status, upstream)",
        ));
    };
    for key in members.keys() {
        let key: String = key.extract()?;
        if !matches!(
            key.as_str(),
            "request_id" | "context" | "upstream_status" | "upstream"
        ) {
            return Err(PyValueError::new_err(format!(
                "request has no member {key:?}: it takes request_id, context, upstream_status, upstream"
            )));
        }
    }
    let request_id: String = members
        .get_item("request_id")?
        .ok_or_else(|| PyValueError::new_err("request needs a request_id"))?
        .extract()
        .map_err(|_| PyTypeError::new_err("request_id is a str"))?;
    let context = members.get_item("context")?;
    let upstream_status =
        match members.get_item("upstream_status")? {
            Some(status) if !status.is_none() => Some(status.extract::<u16>().map_err(|_| {
                PyValueError::new_err("upstream_status is an HTTP status (100-599)")
            })?),
            _ => None,
        };
    let upstream = match members.get_item("upstream")? {
        Some(upstream) if !upstream.is_none() => Some(upstream.extract::<String>()?),
        _ => None,
    };
    Request::new(request_id, context.as_ref(), upstream_status, upstream)
}

fn context_map(context: &Bound<'_, PyAny>) -> PyResult<Map<String, Value>> {
    match to_json(context, 0)? {
        Value::Object(members) => Ok(members),
        _ => Err(PyTypeError::new_err(
            "context is a dict of the trusted values the rules read",
        )),
    }
}

/// The decision time: an aware `datetime`, or now.
fn decision_time(now: Option<&Bound<'_, PyAny>>) -> PyResult<SystemTime> {
    let Some(now) = now.filter(|now| !now.is_none()) else {
        return Ok(SystemTime::now());
    };
    let not_a_datetime =
        || PyTypeError::new_err("now is a datetime with a time zone (datetime.now(timezone.utc))");
    // Two calls: a naive datetime has no offset, and anything else has no such method.
    let offset = now
        .call_method0("utcoffset")
        .map_err(|_| not_a_datetime())?;
    if offset.is_none() {
        return Err(PyValueError::new_err(
            "now must carry its time zone: a naive datetime is ambiguous (datetime.now(timezone.utc))",
        ));
    }
    let seconds: f64 = now
        .call_method0("timestamp")
        .and_then(|seconds| seconds.extract())
        .map_err(|_| not_a_datetime())?;
    let micros = (seconds * 1e6).round() as i128;
    let time = if micros >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_micros(micros as u64))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_micros(micros.unsigned_abs() as u64))
    };
    time.ok_or_else(|| PyValueError::new_err("now is out of range"))
}

/// How deep a context value may nest before it is refused.
const MAX_CONTEXT_DEPTH: usize = 64;

/// A Python value as JSON: None, bool, int, float, str, list/tuple, dict with str keys.
fn to_json(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_CONTEXT_DEPTH {
        return Err(PyValueError::new_err("the context nests too deeply"));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(number) = value.extract::<i64>() {
            return Ok(Value::from(number));
        }
        if let Ok(number) = value.extract::<u64>() {
            return Ok(Value::from(number));
        }
        return Err(PyValueError::new_err(
            "an integer in the context is out of JSON's range",
        ));
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        return serde_json::Number::from_f64(number.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("NaN and infinity are not JSON"));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Value::String(text.to_cow()?.into_owned()));
    }
    if let Ok(members) = value.cast::<PyDict>() {
        let mut object = Map::new();
        for (key, item) in members.iter() {
            let key: String = key
                .extract()
                .map_err(|_| PyTypeError::new_err("context keys are str"))?;
            object.insert(key, to_json(&item, depth + 1)?);
        }
        return Ok(Value::Object(object));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value
            .try_iter()?
            .map(|item| to_json(&item?, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    Err(PyTypeError::new_err(format!(
        "a context value must be JSON (None, bool, int, float, str, list, dict), got {}",
        value
            .get_type()
            .name()
            .map(|name| name.to_string())
            .unwrap_or_default()
    )))
}

/// JSON as a Python value.
fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(integer), _) => integer.into_pyobject(py)?.into_any(),
            (_, Some(integer)) => integer.into_pyobject(py)?.into_any(),
            _ => number
                .as_f64()
                .unwrap_or(f64::NAN)
                .into_pyobject(py)?
                .into_any(),
        },
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(members) => {
            let dict = PyDict::new(py);
            for (key, item) in members {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

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

    /// Exactly the bytes the agent sees: the projection, or the fixed failure.
    #[getter]
    fn agent_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.agent_bytes())
    }

    /// The agent bytes, parsed (a dict; a str for a text contract's projection is inside it).
    fn agent_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value: Value = serde_json::from_slice(self.inner.agent_bytes())
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        to_python(py, &value)
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
            .map(|record| {
                let value = serde_json::to_value(record)
                    .map_err(|error| PyValueError::new_err(error.to_string()))?;
                to_python(py, &value)
            })
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
        match self.code() {
            None => "Decision(admitted)".to_owned(),
            Some(code) => format!(
                "Decision({}, code={code}, retryable={})",
                self.outcome(),
                if self.retryable() { "True" } else { "False" }
            ),
        }
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
    module.add("ContractError", module.py().get_type::<ContractError>())?;
    module.add_function(wrap_pyfunction!(gate_version, module)?)?;
    module.add_function(wrap_pyfunction!(_admit_loop, module)?)?;
    Ok(())
}
