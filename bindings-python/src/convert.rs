//! Plain Python data (dicts, lists, strings, numbers) to and from JSON values.
//!
//! Requests and answers cross the boundary as JSON values so that the core's parsers judge
//! them and every language reports the same `INVALID_REQUEST` messages.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};
use serde::Serialize;
use serde_json::{Map, Number, Value};
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionInput, AskUserQuestionIntent,
    AskUserQuestionItem, AskUserQuestionOption, Respondent,
};

// The direct conversions below ([`answer_to_py`], [`questions_to_py`]) write every field of
// these wire types by hand. Should a field be added to one of them, its size changes and
// these checks stop the build: the conversion must then learn the new field.
const _: () = {
    use std::mem::size_of;
    assert!(
        size_of::<AskUserQuestionAnswer>()
            == size_of::<(Vec<AskUserQuestionAnswerItem>, Option<Respondent>)>()
    );
    assert!(size_of::<Respondent>() == size_of::<(String, String)>());
    assert!(
        size_of::<AskUserQuestionAnswerItem>()
            == size_of::<(String, Vec<String>, Option<String>, Option<Value>)>()
    );
    assert!(
        size_of::<AskUserQuestionOption>() == size_of::<(String, Option<String>, Option<String>)>()
    );
    assert!(size_of::<AskUserQuestionIntent>() == size_of::<(String, String)>());
    assert!(
        size_of::<AskUserQuestionItem>()
            == size_of::<(
                String,
                String,
                Option<String>,
                Option<String>,
                Option<Vec<AskUserQuestionOption>>,
                Option<bool>,
                Option<AskUserQuestionIntent>,
                Option<AskUserQuestionInput>,
            )>()
    );
};

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
        return string_of(s).map_or(Value::Null, Value::String);
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
                && let Some(key) = string_of(key)
            {
                map.insert(key, to_value_at(&value, depth + 1));
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
    // Any other mapping (`collections.abc.Mapping`: a `MappingProxyType`, a `UserDict`), as
    // the stubs' `Mapping[str, Any]` promise: read as a dict is.
    if let Ok(mapping) = obj.cast::<PyMapping>()
        && let Ok(items) = mapping.items()
    {
        let mut map = Map::with_capacity(items.len());
        for item in items.iter() {
            if let Ok((key, value)) = item.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()
                && let Ok(key) = key.cast::<PyString>()
                && let Some(key) = string_of(key)
            {
                map.insert(key, to_value_at(&value, depth + 1));
            }
        }
        return Value::Object(map);
    }
    Value::Null
}

/// An answer of the usual shape (`{"answers": [{"id": str, "selected": [str, ...],
/// "custom"?: str}]}`, dicts and lists, within the limits; no `value`), read directly; `None`
/// for anything else, which the caller then parses through [`to_value`] and the core's parser
/// for its exact message. Both give the same answer where this one gives one. An answer
/// with a `respondent` (§23, rare: a person's server) goes to the core's parser too.
pub(crate) fn plain_answer(obj: &Bound<'_, PyAny>) -> Option<AskUserQuestionAnswer> {
    let py = obj.py();
    let dict = obj.cast::<PyDict>().ok()?;
    if dict.contains(intern!(py, "respondent")).ok()? {
        return None;
    }
    let items = dict.get_item(intern!(py, "answers")).ok()??;
    let items = items.cast::<PyList>().ok()?;
    let mut answers = Vec::with_capacity(items.len());
    for item in items.iter() {
        let item = item.cast::<PyDict>().ok()?;
        let id = plain_string(&item.get_item(intern!(py, "id")).ok()??)?;
        let selected = item.get_item(intern!(py, "selected")).ok()??;
        let selected = selected.cast::<PyList>().ok()?;
        let selected = selected
            .iter()
            .map(|label| plain_string(&label))
            .collect::<Option<Vec<_>>>()?;
        let custom = match item.get_item(intern!(py, "custom")).ok()? {
            None => None,
            Some(custom) => Some(plain_string(&custom)?),
        };
        // A typed value (§24) goes to the core's parser.
        if item.contains(intern!(py, "value")).ok()? {
            return None;
        }
        answers.push(AskUserQuestionAnswerItem::new(id, selected, custom));
    }
    let answer = AskUserQuestionAnswer::new(answers);
    user_questions::limits::check_answer_limits(&answer).ok()?;
    Some(answer)
}

/// The questions of a request dict of the usual shape (`{"questions": [...]}`, each
/// question a dict of strings, an options list of dicts, a bool `multiSelect`, an intent
/// dict; within the limits), read directly; `None` for anything else, which the caller then
/// parses through [`to_value`] and the core's parser for its exact message. Both give the
/// same questions where this one gives them.
pub(crate) fn plain_request_questions(
    request: &Bound<'_, PyAny>,
) -> Option<Vec<AskUserQuestionItem>> {
    plain_request_questions_shape(request).map(|(questions, _)| questions)
}

/// [`plain_request_questions`], and the questions list itself when it is exactly what
/// [`questions_to_py`] would build from them (see [`plain_questions_shape`]).
pub(crate) fn plain_request_questions_shape<'py>(
    request: &Bound<'py, PyAny>,
) -> Option<(Vec<AskUserQuestionItem>, Option<Bound<'py, PyList>>)> {
    let request = request.cast::<PyDict>().ok()?;
    let questions = request
        .get_item(intern!(request.py(), "questions"))
        .ok()??;
    let (parsed, exact) = plain_questions_shape(&questions)?;
    let list = exact
        .then(|| questions.cast_into::<PyList>().ok())
        .flatten();
    Some((parsed, list))
}

/// A questions list of the usual shape, read directly (see [`plain_request_questions`]).
pub(crate) fn plain_questions(questions: &Bound<'_, PyAny>) -> Option<Vec<AskUserQuestionItem>> {
    plain_questions_shape(questions).map(|(questions, _)| questions)
}

/// [`plain_questions`], and whether the list is exactly what [`questions_to_py`] would build
/// from them: no keys but the known ones, `str`, `list` and `dict` objects themselves (not
/// subclasses). A copy of such a list (`handoff.rs`) is then that.
pub(crate) fn plain_questions_shape<'py>(
    questions: &Bound<'py, PyAny>,
) -> Option<(Vec<AskUserQuestionItem>, bool)> {
    let py = questions.py();
    let mut exact = questions.is_exact_instance_of::<PyList>();
    let list = questions.cast::<PyList>().ok()?;
    if list.len() > user_questions::limits::MAX_QUESTIONS {
        return None;
    }
    let mut parsed = Vec::with_capacity(list.len());
    for question in list.iter() {
        exact &= question.is_exact_instance_of::<PyDict>();
        let question = question.cast::<PyDict>().ok()?;
        // The known keys found, and whether every value read is exact.
        let mut found = 0;
        let mut text = |name: &Bound<'py, PyString>| -> Option<Option<String>> {
            match question.get_item(name).ok()? {
                None => Some(None),
                Some(value) => {
                    found += 1;
                    exact &= value.is_exact_instance_of::<PyString>();
                    plain_string(&value).map(Some)
                }
            }
        };
        // A typed input (§24) goes to the core's parser.
        if question.contains(intern!(py, "input")).ok()? {
            return None;
        }
        let id = text(intern!(py, "id"))??;
        let mut item = AskUserQuestionItem::new(id, text(intern!(py, "question"))??);
        item.detail = text(intern!(py, "detail"))?;
        item.header = text(intern!(py, "header"))?;
        let field = |name: &Bound<'py, PyString>| question.get_item(name).ok();
        item.options = match field(intern!(py, "options"))? {
            None => None,
            Some(options) => {
                found += 1;
                exact &= options.is_exact_instance_of::<PyList>();
                let options = options.cast::<PyList>().ok()?;
                let mut parsed = Vec::with_capacity(options.len());
                for option in options.iter() {
                    exact &= option.is_exact_instance_of::<PyDict>();
                    let option = option.cast::<PyDict>().ok()?;
                    // An option's preview (§24) goes to the core's parser.
                    if option.contains(intern!(py, "preview")).ok()? {
                        return None;
                    }
                    let label = option.get_item(intern!(py, "label")).ok()??;
                    exact &= label.is_exact_instance_of::<PyString>();
                    let label = plain_string(&label)?;
                    let description = match option.get_item(intern!(py, "description")).ok()? {
                        None => None,
                        Some(d) => {
                            exact &= d.is_exact_instance_of::<PyString>();
                            Some(plain_string(&d)?)
                        }
                    };
                    exact &= option.len() == 1 + usize::from(description.is_some());
                    parsed.push(AskUserQuestionOption::new(label, description));
                }
                Some(parsed)
            }
        };
        item.multi_select = match field(intern!(py, "multiSelect"))? {
            None => None,
            Some(multi) => {
                found += 1;
                Some(multi.cast::<PyBool>().ok()?.is_true())
            }
        };
        item.intent = match field(intern!(py, "intent"))? {
            None => None,
            Some(intent) => {
                found += 1;
                exact &= intent.is_exact_instance_of::<PyDict>();
                let intent = intent.cast::<PyDict>().ok()?;
                let kind = intent.get_item(intern!(py, "kind")).ok()??;
                let approve = intent.get_item(intern!(py, "approve")).ok()??;
                exact &= kind.is_exact_instance_of::<PyString>()
                    && approve.is_exact_instance_of::<PyString>()
                    && intent.len() == 2;
                Some(AskUserQuestionIntent::new(
                    plain_string(&kind)?,
                    plain_string(&approve)?,
                ))
            }
        };
        exact &= question.len() == found;
        parsed.push(item);
    }
    user_questions::limits::check_question_limits(&parsed).ok()?;
    Some((parsed, exact))
}

fn plain_string(obj: &Bound<'_, PyAny>) -> Option<String> {
    string_of(obj.cast::<PyString>().ok()?)
}

/// A Python string's text; `None` when it is not valid UTF-8 (a lone surrogate).
pub(crate) fn string_of(s: &Bound<'_, PyString>) -> Option<String> {
    str_of(s, str::to_owned)
}

/// `read` of a Python string's text, borrowed (for an ASCII string its data itself; CPython
/// caches the UTF-8 of others); `None` when it is not valid UTF-8 (a lone surrogate: the
/// `UnicodeEncodeError` is dropped, the caller reports its own error).
pub(crate) fn str_of<R>(s: &Bound<'_, PyString>, read: impl FnOnce(&str) -> R) -> Option<R> {
    s.to_str().ok().map(read)
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

/// Serializes a wire type (answer, question, inbox event) to plain Python data: the same
/// data as `to_py(serde_json::to_value(wire))` (dicts in field order, lists, strings, numbers,
/// `None`), built directly by `pythonize` (no JSON value in between).
pub(crate) fn wire_to_py<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    wire: &T,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, wire).map_err(PyErr::from)
}

/// An answer as Python data, the same as [`wire_to_py`] gives (`{"answers": [{"id",
/// "selected", "custom"?, "value"?}], "respondent"?: {"id", "name"}}`), built directly with interned
/// keys.
pub(crate) fn answer_to_py<'py>(
    py: Python<'py>,
    answer: &AskUserQuestionAnswer,
) -> PyResult<Bound<'py, PyAny>> {
    let items = PyList::empty(py);
    for item in &answer.answers {
        let dict = PyDict::new(py);
        dict.set_item(intern!(py, "id"), &item.id)?;
        dict.set_item(intern!(py, "selected"), PyList::new(py, &item.selected)?)?;
        if let Some(custom) = &item.custom {
            dict.set_item(intern!(py, "custom"), custom)?;
        }
        if let Some(value) = &item.value {
            dict.set_item(intern!(py, "value"), to_py(py, value)?)?;
        }
        items.append(dict)?;
    }
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "answers"), items)?;
    if let Some(respondent) = &answer.respondent {
        dict.set_item(intern!(py, "respondent"), respondent_to_py(py, respondent)?)?;
    }
    Ok(dict.into_any())
}

/// A respondent (§23) as Python data: `{"id", "name"}`.
pub(crate) fn respondent_to_py<'py>(
    py: Python<'py>,
    respondent: &Respondent,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "id"), &respondent.id)?;
    dict.set_item(intern!(py, "name"), &respondent.name)?;
    Ok(dict)
}

/// Questions as Python data, the same as [`wire_to_py`] gives (each `{"id", "question",
/// "detail"?, "header"?, "options"?: [{"label", "description"?, "preview"?}], "multiSelect"?,
/// "intent"?: {"kind", "approve"}, "input"?}`), built directly with interned keys.
pub(crate) fn questions_to_py<'py>(
    py: Python<'py>,
    questions: &[AskUserQuestionItem],
) -> PyResult<Bound<'py, PyAny>> {
    let list = PyList::empty(py);
    for question in questions {
        let dict = PyDict::new(py);
        dict.set_item(intern!(py, "id"), &question.id)?;
        dict.set_item(intern!(py, "question"), &question.question)?;
        if let Some(detail) = &question.detail {
            dict.set_item(intern!(py, "detail"), detail)?;
        }
        if let Some(header) = &question.header {
            dict.set_item(intern!(py, "header"), header)?;
        }
        if let Some(options) = &question.options {
            let items = PyList::empty(py);
            for option in options {
                let item = PyDict::new(py);
                item.set_item(intern!(py, "label"), &option.label)?;
                if let Some(description) = &option.description {
                    item.set_item(intern!(py, "description"), description)?;
                }
                if let Some(preview) = &option.preview {
                    item.set_item(intern!(py, "preview"), preview)?;
                }
                items.append(item)?;
            }
            dict.set_item(intern!(py, "options"), items)?;
        }
        if let Some(multi_select) = question.multi_select {
            dict.set_item(intern!(py, "multiSelect"), multi_select)?;
        }
        if let Some(intent) = &question.intent {
            let item = PyDict::new(py);
            item.set_item(intern!(py, "kind"), &intent.kind)?;
            item.set_item(intern!(py, "approve"), &intent.approve)?;
            dict.set_item(intern!(py, "intent"), item)?;
        }
        if let Some(input) = &question.input {
            dict.set_item(intern!(py, "input"), wire_to_py(py, input)?)?;
        }
        list.append(dict)?;
    }
    Ok(list.into_any())
}
