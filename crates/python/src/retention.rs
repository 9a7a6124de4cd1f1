//! `Retention`: what the Python front keeps of its decisions (`--retain`'s counterpart): the
//! store, the policy, sealing, and the retainer's log lines handed to Python's `logging`.

use super::*;

/// Keeps what the gate decided, for `toolgate reproduce` to decide again exactly and for
/// `toolgate diff --replay` to try a bump on: every refusal, a shadow's every disagreement, and
/// `admitted` (a rate, 0.01 or "1%") of admissions, in `store` (a folder, created private, or
/// `s3://BUCKET/PREFIX`, credentials from the environment). Written on a thread of its own:
/// `admit(retain=…)` never waits for the store, and a store that fails costs no decision.
#[pyclass(frozen, module = "toolgate_gate")]
pub(super) struct Retention {
    retainer: std::sync::RwLock<Option<toolgate_store::Retainer>>,
    store: String,
    /// What it had done when it was closed.
    closed_with: std::sync::Mutex<toolgate_store::RetentionStats>,
}

#[pymethods]
impl Retention {
    #[new]
    #[pyo3(signature = (store, *, admitted = None, budget = None, max_age = None, max_records = None, secret_keys = Vec::new(), secret_key = None, recipients = Vec::new(), endpoint = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, each its own setting
    fn new(
        py: Python<'_>,
        store: PathBuf,
        admitted: Option<&Bound<'_, PyAny>>,
        budget: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        max_records: Option<usize>,
        secret_keys: Vec<String>,
        secret_key: Option<Vec<u8>>,
        recipients: Vec<String>,
        endpoint: Option<String>,
    ) -> PyResult<Retention> {
        let store = store
            .to_str()
            .ok_or_else(|| PyValueError::new_err("store: the path is not UTF-8"))?
            .to_owned();
        let mut config = toolgate_store::RetentionConfig::new(store.clone());
        if let Some(admitted) = admitted {
            config.admitted_rate = setting(admitted, "admitted", toolgate_store::parse_rate)?;
        }
        if let Some(budget) = budget {
            config.budget_bytes = setting(budget, "budget", toolgate_store::parse_bytes)?;
        }
        if let Some(max_age) = max_age {
            config.max_age = age_setting(max_age)?;
        }
        if let Some(max_records) = max_records {
            if max_records == 0 {
                return Err(PyValueError::new_err(
                    "max_records: at least 1 (a store that holds no record keeps nothing)",
                ));
            }
            config.max_records = max_records;
        }
        config.secret_keys = secret_keys;
        config.secret_key = secret_key;
        config.recipients = recipients;
        config.endpoint = endpoint;
        let log: toolgate_store::Log = Arc::new(log_to_python);
        let retainer = py
            .detach(|| config.start(log))
            .map_err(|why| RetentionError::new_err(format!("Retention({store:?}): {why}")))?;
        Ok(Retention {
            retainer: std::sync::RwLock::new(Some(retainer)),
            store,
            closed_with: std::sync::Mutex::default(),
        })
    }

    /// Waits up to `timeout` seconds for everything kept so far to be written; False if the
    /// store did not take it in time.
    #[pyo3(signature = (timeout = 10.0))]
    fn flush(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let within = seconds(timeout)?;
        let retainer = self.read();
        let Some(retainer) = retainer.as_ref() else {
            return Ok(true);
        };
        // Detached: the retainer's thread logs through Python, and must not wait on this one.
        Ok(py.detach(|| retainer.flush(within)))
    }

    /// Writes what is queued (waiting up to `timeout` seconds), stops keeping, and returns
    /// what was kept and what was not (one line, also logged). Later `admit(retain=…)` calls
    /// with it raise.
    #[pyo3(signature = (timeout = 10.0))]
    fn close(&self, py: Python<'_>, timeout: f64) -> PyResult<String> {
        let within = seconds(timeout)?;
        let taken = self
            .retainer
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(retainer) = taken else {
            return Ok(format!("retention: {} was already closed", self.store));
        };
        let line = py.detach(|| retainer.finish(within));
        *self
            .closed_with
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = retainer.stats();
        log_to_python(&line);
        Ok(line)
    }

    /// What it has done so far: `kept`, `dropped` (its queue was full), `failed` (the store
    /// refused), `lost` (still waiting when it was closed and its wait ran out), `evicted` (deleted
    /// for the budget or the age).
    #[getter]
    fn stats(&self) -> BTreeMap<&'static str, u64> {
        let stats = self
            .read()
            .as_ref()
            .map(toolgate_store::Retainer::stats)
            .unwrap_or_else(|| {
                *self
                    .closed_with
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            });
        BTreeMap::from([
            ("kept", stats.kept),
            ("dropped", stats.dropped),
            ("failed", stats.failed),
            ("lost", stats.lost),
            ("evicted", stats.evicted),
        ])
    }

    /// Where it keeps.
    #[getter]
    fn store(&self) -> &str {
        &self.store
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exception))]
    fn __exit__(&self, py: Python<'_>, _exception: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py, 10.0)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match self.read().as_ref() {
            Some(retainer) => format!("Retention({:?})", retainer.describe()),
            None => format!("Retention({:?}, closed)", self.store),
        }
    }
}

impl Retention {
    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, Option<toolgate_store::Retainer>> {
        self.retainer
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The retainer, for one `admit`; a closed one is an error, not a silent loss.
    pub(super) fn retainer(
        &self,
    ) -> PyResult<std::sync::RwLockReadGuard<'_, Option<toolgate_store::Retainer>>> {
        let guard = self.read();
        if guard.is_none() {
            return Err(PyValueError::new_err(format!(
                "Retention({:?}) is closed: make a new one to keep more",
                self.store
            )));
        }
        Ok(guard)
    }
}

/// A setting given as a number or as text an operator writes (`"1%"`, `"512MiB"`), read as
/// the command line reads it.
pub(super) fn setting<T>(
    value: &Bound<'_, PyAny>,
    name: &str,
    parse: fn(&str) -> Result<T, String>,
) -> PyResult<T> {
    let number = value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>();
    if value.is_instance_of::<PyBool>() || !(number || value.is_instance_of::<PyString>()) {
        return Err(PyTypeError::new_err(format!("{name} is a number or a str")));
    }
    let text = value.str()?.to_string();
    parse(&text).map_err(|why| PyValueError::new_err(format!("{name}: {why}")))
}

/// `max_age`: seconds, a `timedelta`, or text (`"7d"`).
pub(super) fn age_setting(value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if let Ok(text) = value.extract::<String>() {
        return toolgate_store::parse_age(&text)
            .map_err(|why| PyValueError::new_err(format!("max_age: {why}")));
    }
    let seconds_given: f64 = match value.call_method0("total_seconds") {
        Ok(total) => total.extract()?,
        Err(_) => value.extract().map_err(|_| {
            PyTypeError::new_err("max_age is seconds, a timedelta, or a str (\"7d\")")
        })?,
    };
    let age = seconds(seconds_given)
        .map_err(|_| PyValueError::new_err("max_age is a duration above zero"))?;
    if age.is_zero() {
        return Err(PyValueError::new_err("max_age is a duration above zero"));
    }
    Ok(age)
}

/// A number of seconds, 0 or more.
pub(super) fn seconds(value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyValueError::new_err("a timeout is a number of seconds, 0 or more"))
}

/// The retainer's lines, to the `toolgate_gate` logger at WARNING; to stderr when Python cannot
/// be reached (the interpreter is shutting down).
pub(super) fn log_to_python(line: &str) {
    let logged = Python::try_attach(|py| {
        py.import("logging")
            .and_then(|logging| logging.call_method1("getLogger", ("toolgate_gate",)))
            .and_then(|logger| logger.call_method1("warning", ("%s", line)))
            .is_ok()
    });
    if logged != Some(true) {
        eprintln!("toolgate_gate: {line}");
    }
}
