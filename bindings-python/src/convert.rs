//! Plain Python data (dicts, lists, strings, numbers) to and from JSON values.
//!
//! Requests and answers cross the boundary as JSON values so that the core's parsers judge
//! them and every language reports the same `INVALID_REQUEST` messages.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::Serialize;
use serde_json::{Map, Number, Value};

/// Deeper than this, a value is treated as not JSON (guards against self-referencing lists).
const MAX_DEPTH: usize = 128;

/// Converts plain Python data to a JSON value.
///
/// A value that JSON cannot hold (an arbitrary object, bytes, a NaN, a dict key that is not a
/// string's entry) becomes `null`: unknown fields stay ignored, and a known field holding one
/// fails the core's type check (`questions[0].id must be a string`).
pub(crate) fn to_value(obj: &Bound<'_, PyAny>) -> Value {
    to_value_at(obj, 0)
}

fn to_value_at(obj: &Bound<'_, PyAny>, depth: usize) -> Value {
    if depth > MAX_DEPTH || obj.is_none() {
        return Value::Null;
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s
            .to_cow()
            .map_or(Value::Null, |s| Value::String(s.into_owned()));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Value::Bool(b.is_true());
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(n) = obj.extract::<i64>() {
            return Value::Number(n.into());
        }
        if let Ok(n) = obj.extract::<u64>() {
            return Value::Number(n.into());
        }
        return obj
            .extract::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or(Value::Null, Value::Number);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value()).map_or(Value::Null, Value::Number);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            if let Ok(key) = key.cast::<PyString>()
                && let Ok(key) = key.to_cow()
            {
                map.insert(key.into_owned(), to_value_at(&value, depth + 1));
            }
        }
        return Value::Object(map);
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return Value::Array(list.iter().map(|v| to_value_at(&v, depth + 1)).collect());
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return Value::Array(tuple.iter().map(|v| to_value_at(&v, depth + 1)).collect());
    }
    Value::Null
}

/// Converts a JSON value to plain Python data (dict, list, str, int, float, bool, None).
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Serializes a wire type (answer, question, inbox event) to plain Python data.
pub(crate) fn wire_to_py<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    wire: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(wire)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    to_py(py, &value)
}
