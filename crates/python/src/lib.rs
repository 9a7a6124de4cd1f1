//! `toolgate_gate._native`: the toolgate gate as a Python extension module (PyO3, abi3).
//!
//! A thin layer over the gate crate, so the bytes a Python agent receives are the ones the
//! harness tested: `Contract` compiles once and is shared across threads; `admit` takes the raw
//! bytes a tool returned (a `dict` is refused: re-serializing would hide duplicate keys) and
//! releases the GIL while the gate decides; a `Decision` holds the agent bytes, the operator
//! record and the audit event. The Python package around it (`python/toolgate_gate/`) adds the
//! framework wrappers; its type stubs are `python/toolgate_gate/_native.pyi`.

mod contract;
mod decision;
mod door;
mod retention;
mod values;
use contract::{Contract, ContractProblem, Metrics, RetryPolicy};
use decision::{Decision, Request};
use retention::Retention;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};
use toolgate_gate::Response;

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
