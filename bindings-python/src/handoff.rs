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
//! and restores the outer one. Between reading the list and copying it no Python code runs
//! for a Python provider: the garbage collector, whose finalizers could change the asker's
//! dicts in between, is held off until the copy is made (Python ≥ 3.10; on 3.9 nothing is
//! handed over).
//!
//! (The other way, a copy of a provider's answer dict for the asker, was measured and left:
//! checking it against the core's answer costs more than building the dict.)

use std::cell::RefCell;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use user_questions::AskUserQuestionItem;

/// The asker's exact questions list, while its ask starts, and whether the garbage collector
/// was held off for it (to be let go once the list is copied or dropped).
struct Offered {
    list: Py<PyList>,
    gc_held: bool,
}

impl Offered {
    fn release(self) -> Py<PyList> {
        if self.gc_held {
            gc::resume();
        }
        self.list
    }
}

thread_local! {
    static QUESTIONS: RefCell<Option<Offered>> = const { RefCell::new(None) };
}

/// An ask's start (see the module's documentation): restores the enclosing one's hand-off
/// when dropped, dropping its own list if it was not taken (with the GIL held: it lives in
/// a Python call).
pub(crate) struct Handoff {
    outer: Option<Offered>,
}

impl Handoff {
    /// Hands `questions` (the asker's list, when exact) to the provider of the ask starting.
    pub(crate) fn begin(questions: Option<Bound<'_, PyList>>) -> Handoff {
        let offered = questions.and_then(|list| {
            Some(Offered {
                gc_held: gc::hold()?,
                list: list.unbind(),
            })
        });
        Handoff {
            outer: QUESTIONS.with(|q| q.replace(offered)),
        }
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        let outer = self.outer.take();
        let ours = QUESTIONS.with(|q| q.replace(outer));
        drop(ours.map(Offered::release));
    }
}

/// Holding off the garbage collector (`PyGC_Disable`, Python ≥ 3.10).
mod gc {
    /// Holds it off; `Some(true)` when it ran until now (so [`resume`] is due), `Some(false)`
    /// when it was off already, `None` where it cannot be held off.
    #[cfg(Py_3_10)]
    pub(super) fn hold() -> Option<bool> {
        // SAFETY: called with the GIL held (within a Python call).
        Some(unsafe { pyo3::ffi::PyGC_Disable() } != 0)
    }

    #[cfg(not(Py_3_10))]
    pub(super) fn hold() -> Option<bool> {
        None
    }

    /// Lets it run again.
    pub(super) fn resume() {
        // SAFETY: called with the GIL held (within a Python call), after [`hold`] returned
        // `Some(true)`, which needs Python ≥ 3.10.
        #[cfg(Py_3_10)]
        unsafe {
            pyo3::ffi::PyGC_Enable();
        }
    }
}

/// The provider's questions: a copy of the asker's list when it was handed over and holds
/// these questions, else built from `questions`.
pub(crate) fn questions_to_py<'py>(
    py: Python<'py>,
    questions: &[AskUserQuestionItem],
) -> PyResult<Bound<'py, PyAny>> {
    let offered = QUESTIONS.with(|q| q.borrow_mut().take());
    if let Some(offered) = offered {
        let gc_held = offered.gc_held;
        let list = offered.list.into_bound(py);
        let copied = same_questions(&list, questions).then(|| copy_questions(&list));
        if gc_held {
            gc::resume();
        }
        if let Some(copied) = copied {
            return copied;
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
