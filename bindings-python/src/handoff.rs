//! The asker's own questions for the provider.
//!
//! An ask converts the asker's questions to the core's types, and a Python provider then
//! gets them back as Python dicts: fresh dicts and lists, every string made anew. When the
//! asker's list was already exactly what those would be (`convert::plain_questions_shape`:
//! only the known keys, exact `dict`/`list`/`str` objects), a copy of its containers is the
//! same data, shares only the (immutable) strings and costs a fraction: so the list is handed
//! from the asker's call to the provider's request here.
//!
//! The hand-off lives on the asking thread while an ask starts (a [`Handoff`] guard around
//! the core's `start`, which calls the provider). The provider's request takes it, checked
//! against what the core passes on (the count and the ids); what is not taken is dropped
//! when the ask has started. An ask started within (a provider asking in turn) has its own
//! and restores the outer one. Between reading the list and copying it no Python code of
//! the asker's runs, with one exception no check here catches: a `__del__` run by the
//! garbage collector in between that changes the asker's question dicts (other than their
//! ids) would reach the provider's copy, not the questions the core checked.
//!
//! (The other way, a copy of a provider's answer dict for the asker, was measured and left:
//! checking it against the core's answer costs more than building the dict.)

use std::cell::RefCell;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use user_questions::AskUserQuestionItem;

thread_local! {
    /// The asker's exact questions list, while its ask starts.
    static QUESTIONS: RefCell<Option<Py<PyList>>> = const { RefCell::new(None) };
}

/// An ask's start (see the module's documentation): restores the enclosing one's hand-off
/// when dropped, dropping its own list if it was not taken (with the GIL held: it lives in
/// a Python call).
pub(crate) struct Handoff {
    outer: Option<Py<PyList>>,
}

impl Handoff {
    /// Hands `questions` (the asker's list, when exact) to the provider of the ask starting.
    pub(crate) fn begin(questions: Option<Bound<'_, PyList>>) -> Handoff {
        Handoff {
            outer: QUESTIONS.with(|q| q.replace(questions.map(Bound::unbind))),
        }
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        let outer = self.outer.take();
        let ours = QUESTIONS.with(|q| q.replace(outer));
        drop(ours);
    }
}

/// The provider's questions: a copy of the asker's list when it was handed over and holds
/// these questions, else built from `questions`.
pub(crate) fn questions_to_py<'py>(
    py: Python<'py>,
    questions: &[AskUserQuestionItem],
) -> PyResult<Bound<'py, PyAny>> {
    let offered = QUESTIONS.with(|q| q.borrow_mut().take());
    if let Some(list) = offered {
        let list = list.into_bound(py);
        if same_questions(&list, questions) {
            return copy_questions(&list);
        }
    }
    crate::convert::questions_to_py(py, questions)
}

/// Whether `list` (exact, as read) holds these questions: the same count and ids.
fn same_questions(list: &Bound<'_, PyList>, questions: &[AskUserQuestionItem]) -> bool {
    let py = list.py();
    list.len() == questions.len()
        && list.iter().zip(questions).all(|(question, item)| {
            question
                .cast::<PyDict>()
                .ok()
                .and_then(|q| q.get_item(intern!(py, "id")).ok().flatten())
                .is_some_and(|id| {
                    id.cast::<PyString>()
                        .ok()
                        .and_then(|id| crate::convert::str_of(id, |id| id == item.id))
                        .unwrap_or(false)
                })
        })
}

/// A copy of exact questions: new dicts and lists, the same strings.
fn copy_questions<'py>(list: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyAny>> {
    let py = list.py();
    let copies = PyList::empty(py);
    for question in list.iter() {
        let copy = question.cast::<PyDict>()?.copy()?;
        if let Some(options) = copy.get_item(intern!(py, "options"))? {
            let options_copy = PyList::empty(py);
            for option in options.cast::<PyList>()?.iter() {
                options_copy.append(option.cast::<PyDict>()?.copy()?)?;
            }
            copy.set_item(intern!(py, "options"), options_copy)?;
        }
        if let Some(intent) = copy.get_item(intern!(py, "intent"))? {
            copy.set_item(intern!(py, "intent"), intent.cast::<PyDict>()?.copy()?)?;
        }
        copies.append(copy)?;
    }
    Ok(copies.into_any())
}
