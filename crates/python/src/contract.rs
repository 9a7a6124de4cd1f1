//! `Contract`: a compiled contract, loaded from a repository, a folder or strings, and its
//! `admit`; the problems a contract that does not compile has, its retry policy, and the
//! `Metrics` an `admit` counts into (which a contract's series are made in: one module, as each
//! names the other).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use toolgate_gate::{CompileErrors, ContractSource, ErrorCode, Response};

use crate::decision::{Decision, Request};
use crate::retention::Retention;
use crate::values::{decision_time, raw_bytes, request_from_dict};
use crate::{ContractError, RetentionError};

/// One problem with a contract: where it is and what to do.
#[pyclass(frozen, get_all, module = "toolgate_gate")]
#[derive(Debug, Clone)]
pub(crate) struct ContractProblem {
    /// The file, as the contract names it (or its path, when read from a folder).
    pub(crate) file: String,
    /// The 1-based line, when the problem is in `contract.yaml` and has one.
    pub(crate) line: Option<u64>,
    /// The 1-based column, with the line.
    pub(crate) column: Option<u64>,
    /// The JSON pointer into the file, when the problem has one.
    pub(crate) json_pointer: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
    /// How to fix it, when the gate knows.
    pub(crate) fix: Option<String>,
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

pub(crate) fn contract_error(py: Python<'_>, errors: &CompileErrors) -> PyErr {
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

pub(crate) fn single_problem(py: Python<'_>, file: &Path, message: String) -> PyErr {
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
pub(crate) struct Contract {
    pub(crate) inner: Arc<toolgate_gate::Contract>,
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
pub(crate) const DETACH_AT_BYTES: usize = 2048;

/// The newest `v<N>` folder of a tool.
pub(crate) fn newest_version(py: Python<'_>, folder: &Path) -> PyResult<String> {
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

pub(crate) fn version_name(given: &Bound<'_, PyAny>) -> PyResult<String> {
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

/// A contract's retry policy: how often and how long to call again, and for which codes.
#[pyclass(frozen, module = "toolgate_gate")]
pub(crate) struct RetryPolicy {
    pub(crate) contract: Arc<toolgate_gate::Contract>,
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

/// The metrics a front keeps, as `toolgate mcp-proxy` and `toolgate serve` keep them: every
/// decision `Contract.admit(metrics=…)` made, by tool, version, direction, outcome, layer and
/// code, and how long each took. Publish them with your own metrics library from
/// `snapshot()` (every sample), or serve `exposition()` (the Prometheus text) as they are.
#[pyclass(frozen, module = "toolgate_gate")]
pub(crate) struct Metrics {
    pub(crate) inner: toolgate_telemetry::Metrics,
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
