//! `UserQuestionError` across the boundary: core errors become the Python exception class
//! defined in `user_questions._errors`, and exceptions raised by Python providers become
//! core errors (§4.5).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use user_questions::{ErrorCode, UserQuestionError};

static ERROR_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The Python class `user_questions.UserQuestionError`.
pub(crate) fn error_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    ERROR_CLASS.import(py, "user_questions._errors", "UserQuestionError")
}

/// The Python exception for a core error: `UserQuestionError(message, code)`.
pub(crate) fn to_py_err(py: Python<'_>, error: &UserQuestionError) -> PyErr {
    match error_class(py).and_then(|class| class.call1((error.message(), error.code().as_str()))) {
        Ok(instance) => PyErr::from_value(instance),
        Err(import_failed) => import_failed,
    }
}

/// A core error on its way to Python; `?` turns it into the Python exception.
pub(crate) struct SeamError(pub(crate) UserQuestionError);

impl From<UserQuestionError> for SeamError {
    fn from(error: UserQuestionError) -> Self {
        SeamError(error)
    }
}

impl From<SeamError> for PyErr {
    fn from(error: SeamError) -> PyErr {
        Python::attach(|py| to_py_err(py, &error.0))
    }
}

/// Shorthand for native methods whose failures are core errors.
pub(crate) type SeamResult<T> = Result<T, SeamError>;

/// `CODES`: every code name → its number (§10).
pub(crate) fn codes(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let dict = PyDict::new(py);
    for code in ErrorCode::ALL {
        dict.set_item(code.as_str(), code.as_number())?;
    }
    Ok(dict)
}

/// What an exception raised by a provider settles the ask with (§4.5).
///
/// A `UserQuestionError` of a known code passes through with its message; anything else is
/// `PROVIDER_FAILED` whose message is the exception's own (`str(exc)`), or its type name
/// when that is empty.
pub(crate) fn from_provider_exception(py: Python<'_>, err: &PyErr) -> UserQuestionError {
    let value = err.value(py);
    if let Ok(class) = error_class(py)
        && value.is_instance(class).unwrap_or(false)
    {
        let code: Option<String> = value.getattr("code").and_then(|c| c.extract()).ok();
        let message: String = value
            .getattr("message")
            .and_then(|m| m.extract())
            .unwrap_or_else(|_| describe(err, py));
        return UserQuestionError::from_code_name(&code.unwrap_or_default(), message);
    }
    UserQuestionError::provider_failed(describe(err, py))
}

/// `str(exc)`, or the exception's type name when that is empty.
fn describe(err: &PyErr, py: Python<'_>) -> String {
    let text = err
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_default();
    if text.is_empty() {
        err.get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "an exception".to_owned())
    } else {
        text
    }
}
