//! Plain Python data (dicts, lists, strings, numbers) to and from JSON values.
//!
//! Requests and answers cross the boundary as JSON values so that the core's parsers judge
//! them and every language reports the same `INVALID_REQUEST` messages.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::Serialize;
use serde_json::{Map, Number, Value};
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionIntent, AskUserQuestionItem,
    AskUserQuestionOption,
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

/// An answer of the usual shape (`{"answers": [{"id": str, "selected": [str, ...],
/// "custom"?: str}]}`, dicts and lists, within the limits), read directly; `None` for
/// anything else, which the caller then parses through [`to_value`] and the core's parser
/// for its exact message. Both give the same answer where this one gives one.
pub(crate) fn plain_answer(obj: &Bound<'_, PyAny>) -> Option<AskUserQuestionAnswer> {
    let py = obj.py();
    let dict = obj.cast::<PyDict>().ok()?;
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
    let request = request.cast::<PyDict>().ok()?;
    plain_questions(
        &request
            .get_item(intern!(request.py(), "questions"))
            .ok()??,
    )
}

/// A questions list of the usual shape, read directly (see [`plain_request_questions`]).
pub(crate) fn plain_questions<'py>(
    questions: &Bound<'py, PyAny>,
) -> Option<Vec<AskUserQuestionItem>> {
    let py = questions.py();
    let list = questions.cast::<PyList>().ok()?;
    if list.len() > user_questions::limits::MAX_QUESTIONS {
        return None;
    }
    let mut parsed = Vec::with_capacity(list.len());
    for question in list.iter() {
        let question = question.cast::<PyDict>().ok()?;
        let field = |name: &Bound<'py, PyString>| question.get_item(name).ok();
        let text = |name: &Bound<'py, PyString>| -> Option<Option<String>> {
            match field(name)? {
                None => Some(None),
                Some(value) => plain_string(&value).map(Some),
            }
        };
        let mut item =
            AskUserQuestionItem::new(text(intern!(py, "id"))??, text(intern!(py, "question"))??);
        item.detail = text(intern!(py, "detail"))?;
        item.header = text(intern!(py, "header"))?;
        item.options = match field(intern!(py, "options"))? {
            None => None,
            Some(options) => {
                let options = options.cast::<PyList>().ok()?;
                let mut parsed = Vec::with_capacity(options.len());
                for option in options.iter() {
                    let option = option.cast::<PyDict>().ok()?;
                    let label = plain_string(&option.get_item(intern!(py, "label")).ok()??)?;
                    let description = match option.get_item(intern!(py, "description")).ok()? {
                        None => None,
                        Some(d) => Some(plain_string(&d)?),
                    };
                    parsed.push(AskUserQuestionOption::new(label, description));
                }
                Some(parsed)
            }
        };
        item.multi_select = match field(intern!(py, "multiSelect"))? {
            None => None,
            Some(multi) => Some(multi.cast::<PyBool>().ok()?.is_true()),
        };
        item.intent = match field(intern!(py, "intent"))? {
            None => None,
            Some(intent) => {
                let intent = intent.cast::<PyDict>().ok()?;
                let kind = plain_string(&intent.get_item(intern!(py, "kind")).ok()??)?;
                let approve = plain_string(&intent.get_item(intern!(py, "approve")).ok()??)?;
                Some(AskUserQuestionIntent::new(kind, approve))
            }
        };
        parsed.push(item);
    }
    user_questions::limits::check_question_limits(&parsed).ok()?;
    Some(parsed)
}

fn plain_string(obj: &Bound<'_, PyAny>) -> Option<String> {
    obj.cast::<PyString>()
        .ok()?
        .to_cow()
        .ok()
        .map(|s| s.into_owned())
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
/// data as `to_py(serde_json::to_value(wire))`, built directly (no JSON value in between).
pub(crate) fn wire_to_py<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    wire: &T,
) -> PyResult<Bound<'py, PyAny>> {
    wire.serialize(ser::PySerializer { py }).map_err(|e| e.0)
}

/// A serde serializer whose output is plain Python data, following `serde_json::to_value`'s
/// mapping (`preserve_order`): structs and maps are dicts in field order, sequences lists,
/// `None` and units `None`, non-finite floats `None`, enum variants as serde_json tags them.
mod ser {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};
    use serde::ser::{self, Serialize};

    pub(crate) struct Error(pub(crate) PyErr);

    impl From<PyErr> for Error {
        fn from(err: PyErr) -> Self {
            Error(err)
        }
    }

    impl std::fmt::Debug for Error {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            std::fmt::Debug::fmt(&self.0, f)
        }
    }

    impl std::fmt::Display for Error {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            std::fmt::Display::fmt(&self.0, f)
        }
    }

    impl std::error::Error for Error {}

    impl ser::Error for Error {
        fn custom<T: std::fmt::Display>(msg: T) -> Self {
            Error(PyValueError::new_err(msg.to_string()))
        }
    }

    type Out<'py> = Result<Bound<'py, PyAny>, Error>;

    #[derive(Clone, Copy)]
    pub(crate) struct PySerializer<'py> {
        pub(crate) py: Python<'py>,
    }

    /// `{variant: value}`, serde_json's external tagging.
    fn tagged<'py>(py: Python<'py>, variant: &str, value: Bound<'py, PyAny>) -> Out<'py> {
        let dict = PyDict::new(py);
        dict.set_item(PyString::new(py, variant), value)?;
        Ok(dict.into_any())
    }

    impl<'py> ser::Serializer for PySerializer<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        type SerializeSeq = Seq<'py>;
        type SerializeTuple = Seq<'py>;
        type SerializeTupleStruct = Seq<'py>;
        type SerializeTupleVariant = Seq<'py>;
        type SerializeMap = Map<'py>;
        type SerializeStruct = Map<'py>;
        type SerializeStructVariant = Map<'py>;

        fn serialize_bool(self, v: bool) -> Out<'py> {
            Ok(PyBool::new(self.py, v).to_owned().into_any())
        }
        fn serialize_i8(self, v: i8) -> Out<'py> {
            self.serialize_i64(v.into())
        }
        fn serialize_i16(self, v: i16) -> Out<'py> {
            self.serialize_i64(v.into())
        }
        fn serialize_i32(self, v: i32) -> Out<'py> {
            self.serialize_i64(v.into())
        }
        fn serialize_i64(self, v: i64) -> Out<'py> {
            Ok(v.into_pyobject(self.py)
                .map(|v| v.into_any())
                .unwrap_or_else(|e| match e {}))
        }
        fn serialize_u8(self, v: u8) -> Out<'py> {
            self.serialize_i64(v.into())
        }
        fn serialize_u16(self, v: u16) -> Out<'py> {
            self.serialize_i64(v.into())
        }
        fn serialize_u32(self, v: u32) -> Out<'py> {
            self.serialize_i64(v.into())
        }
        fn serialize_u64(self, v: u64) -> Out<'py> {
            Ok(v.into_pyobject(self.py)
                .map(|v| v.into_any())
                .unwrap_or_else(|e| match e {}))
        }
        fn serialize_f32(self, v: f32) -> Out<'py> {
            self.serialize_f64(v.into())
        }
        fn serialize_f64(self, v: f64) -> Out<'py> {
            if v.is_finite() {
                Ok(PyFloat::new(self.py, v).into_any())
            } else {
                self.serialize_unit()
            }
        }
        fn serialize_char(self, v: char) -> Out<'py> {
            self.serialize_str(v.encode_utf8(&mut [0; 4]))
        }
        fn serialize_str(self, v: &str) -> Out<'py> {
            Ok(PyString::new(self.py, v).into_any())
        }
        fn serialize_bytes(self, v: &[u8]) -> Out<'py> {
            let list = PyList::empty(self.py);
            for b in v {
                list.append(*b)?;
            }
            Ok(list.into_any())
        }
        fn serialize_none(self) -> Out<'py> {
            self.serialize_unit()
        }
        fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Out<'py> {
            value.serialize(self)
        }
        fn serialize_unit(self) -> Out<'py> {
            Ok(self.py.None().into_bound(self.py))
        }
        fn serialize_unit_struct(self, _name: &'static str) -> Out<'py> {
            self.serialize_unit()
        }
        fn serialize_unit_variant(
            self,
            _name: &'static str,
            _index: u32,
            variant: &'static str,
        ) -> Out<'py> {
            self.serialize_str(variant)
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _name: &'static str,
            value: &T,
        ) -> Out<'py> {
            value.serialize(self)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _name: &'static str,
            _index: u32,
            variant: &'static str,
            value: &T,
        ) -> Out<'py> {
            tagged(self.py, variant, value.serialize(self)?)
        }
        fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'py>, Error> {
            Ok(Seq {
                py: self.py,
                list: PyList::empty(self.py),
                variant: None,
            })
        }
        fn serialize_tuple(self, len: usize) -> Result<Seq<'py>, Error> {
            self.serialize_seq(Some(len))
        }
        fn serialize_tuple_struct(
            self,
            _name: &'static str,
            len: usize,
        ) -> Result<Seq<'py>, Error> {
            self.serialize_seq(Some(len))
        }
        fn serialize_tuple_variant(
            self,
            _name: &'static str,
            _index: u32,
            variant: &'static str,
            len: usize,
        ) -> Result<Seq<'py>, Error> {
            let mut seq = self.serialize_seq(Some(len))?;
            seq.variant = Some(variant);
            Ok(seq)
        }
        fn serialize_map(self, _len: Option<usize>) -> Result<Map<'py>, Error> {
            Ok(Map {
                py: self.py,
                dict: PyDict::new(self.py),
                key: None,
                variant: None,
            })
        }
        fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Map<'py>, Error> {
            self.serialize_map(Some(len))
        }
        fn serialize_struct_variant(
            self,
            _name: &'static str,
            _index: u32,
            variant: &'static str,
            len: usize,
        ) -> Result<Map<'py>, Error> {
            let mut map = self.serialize_map(Some(len))?;
            map.variant = Some(variant);
            Ok(map)
        }
    }

    pub(crate) struct Seq<'py> {
        py: Python<'py>,
        list: Bound<'py, PyList>,
        variant: Option<&'static str>,
    }

    impl<'py> Seq<'py> {
        fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.list
                .append(value.serialize(PySerializer { py: self.py })?)?;
            Ok(())
        }

        fn finish(self) -> Out<'py> {
            match self.variant {
                None => Ok(self.list.into_any()),
                Some(variant) => tagged(self.py, variant, self.list.into_any()),
            }
        }
    }

    impl<'py> ser::SerializeSeq for Seq<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.push(value)
        }
        fn end(self) -> Out<'py> {
            self.finish()
        }
    }

    impl<'py> ser::SerializeTuple for Seq<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.push(value)
        }
        fn end(self) -> Out<'py> {
            self.finish()
        }
    }

    impl<'py> ser::SerializeTupleStruct for Seq<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.push(value)
        }
        fn end(self) -> Out<'py> {
            self.finish()
        }
    }

    impl<'py> ser::SerializeTupleVariant for Seq<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.push(value)
        }
        fn end(self) -> Out<'py> {
            self.finish()
        }
    }

    pub(crate) struct Map<'py> {
        py: Python<'py>,
        dict: Bound<'py, PyDict>,
        key: Option<Bound<'py, PyAny>>,
        variant: Option<&'static str>,
    }

    impl<'py> Map<'py> {
        fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
            let value = value.serialize(PySerializer { py: self.py })?;
            self.dict.set_item(PyString::new(self.py, key), value)?;
            Ok(())
        }

        fn finish(self) -> Out<'py> {
            match self.variant {
                None => Ok(self.dict.into_any()),
                Some(variant) => tagged(self.py, variant, self.dict.into_any()),
            }
        }
    }

    impl<'py> ser::SerializeMap for Map<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
            // JSON object keys are strings: serde_json's rules (strings, chars, integers,
            // bools as their text; anything else fails).
            let key = serde_json::to_value(key)
                .map_err(|e| Error(PyValueError::new_err(e.to_string())))?;
            let text = match key {
                serde_json::Value::String(s) => s,
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                _ => return Err(ser::Error::custom("key must be a string")),
            };
            self.key = Some(PyString::new(self.py, &text).into_any());
            Ok(())
        }
        fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            let key = self
                .key
                .take()
                .ok_or_else(|| <Error as ser::Error>::custom("a map value without its key"))?;
            let value = value.serialize(PySerializer { py: self.py })?;
            self.dict.set_item(key, value)?;
            Ok(())
        }
        fn end(self) -> Out<'py> {
            self.finish()
        }
    }

    impl<'py> ser::SerializeStruct for Map<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(
            &mut self,
            key: &'static str,
            value: &T,
        ) -> Result<(), Error> {
            self.field(key, value)
        }
        fn end(self) -> Out<'py> {
            self.finish()
        }
    }

    impl<'py> ser::SerializeStructVariant for Map<'py> {
        type Ok = Bound<'py, PyAny>;
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(
            &mut self,
            key: &'static str,
            value: &T,
        ) -> Result<(), Error> {
            self.field(key, value)
        }
        fn end(self) -> Out<'py> {
            self.finish()
        }
    }
}
