//! Values between Python and the gate: the raw bytes a tool returned (never a `dict`, whose
//! re-serialization would hide duplicate keys), a request from a `dict`, a decision time, and
//! JSON to and from Python objects, depth-bounded.

use super::*;

/// The raw bytes, borrowed without a copy from `bytes` (copied from `bytearray` or
/// `memoryview`), never a parsed value.
pub(super) fn raw_bytes(raw: &Bound<'_, PyAny>) -> PyResult<PyBackedBytes> {
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
pub(super) fn request_from_dict(request: &Bound<'_, PyAny>) -> PyResult<Request> {
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

pub(super) fn context_map(context: &Bound<'_, PyAny>) -> PyResult<Map<String, Value>> {
    match to_json(context, 0)? {
        Value::Object(members) => Ok(members),
        _ => Err(PyTypeError::new_err(
            "context is a dict of the trusted values the rules read",
        )),
    }
}

/// The decision time: an aware `datetime`, or now.
pub(super) fn decision_time(now: Option<&Bound<'_, PyAny>>) -> PyResult<SystemTime> {
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

/// A Python value as JSON: None, bool, int, float, str, list/tuple, dict with str keys.
pub(super) fn to_json(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > decision::MAX_CONTEXT_DEPTH {
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

/// A value the gate serializes (an operator record, a shadow's outcome) as a Python dict.
pub(super) fn serialized_to_python<'py>(
    py: Python<'py>,
    value: &impl serde::Serialize,
) -> PyResult<Bound<'py, PyAny>> {
    let value =
        serde_json::to_value(value).map_err(|error| PyValueError::new_err(error.to_string()))?;
    to_python(py, &value)
}

/// JSON as a Python value.
pub(super) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
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
