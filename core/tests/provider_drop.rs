//! §4.5 "nothing a provider does crashes the process", for the one thing a provider can do
//! after the seam stops polling it: its future's destructor, which the seam runs when the ask
//! settles (answered, withdrawn, dropped by the asker). A destructor that panics changes
//! nothing: the settlement stands, and the seam goes on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};

use futures::executor::block_on;
use user_questions::{
    AbortController, AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionRequest, Context,
    ErrorCode, ProviderFuture, ProviderRequest, Result, UserQuestionProvider, messages,
    parse_answer_json, parse_questions,
};

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}, {"label": "No"}]}
    ]))
    .unwrap()
}

fn yes() -> AskUserQuestionAnswer {
    parse_answer_json(r#"{"answers":[{"id":"go","selected":["Yes"]}]}"#).unwrap()
}

/// Answers `Yes` on its first poll when `answer`, else never; panics when dropped, counting
/// the drops.
struct PanicsOnDrop {
    answer: bool,
    drops: Arc<AtomicUsize>,
}

impl Future for PanicsOnDrop {
    type Output = Result<AskUserQuestionAnswer>;

    fn poll(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<Self::Output> {
        if self.answer {
            Poll::Ready(Ok(yes()))
        } else {
            Poll::Pending
        }
    }
}

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        panic!("the provider's future panics as it is dropped");
    }
}

struct Provider {
    answer: bool,
    drops: Arc<AtomicUsize>,
}

impl UserQuestionProvider for Provider {
    fn ask(&self, _: ProviderRequest) -> ProviderFuture {
        Box::pin(PanicsOnDrop {
            answer: self.answer,
            drops: self.drops.clone(),
        })
    }
}

/// How the ask ends.
#[derive(Clone, Copy, Debug)]
enum End {
    /// The provider's future answers on its first poll (the ask settles as it starts).
    AnsweredAtOnce,
    /// The caller's signal aborts while the provider waits.
    Abort,
    /// The provider's registration is disposed while it waits.
    Dispose,
    /// The deadline passes while the provider waits.
    Deadline,
    /// The asker drops its future while the provider waits.
    AskerDrops,
}

#[test]
fn a_provider_future_that_panics_when_dropped_changes_no_settlement() {
    for end in [
        End::AnsweredAtOnce,
        End::Abort,
        End::Dispose,
        End::Deadline,
        End::AskerDrops,
    ] {
        let ctx = Context::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let registration = ctx
            .user_questions()
            .register_provider(Provider {
                answer: matches!(end, End::AnsweredAtOnce),
                drops: drops.clone(),
            })
            .unwrap();
        let controller = AbortController::new();
        let mut request = AskUserQuestionRequest::new(questions()).with_signal(controller.signal());
        if let End::Deadline = end {
            request = request.with_timeout(std::time::Duration::from_millis(1));
        }
        let pending = ctx.user_questions().start(request).unwrap();
        let signal = pending.provider_signal();
        let outcome = match end {
            End::AnsweredAtOnce | End::Deadline => Some(block_on(pending)),
            End::Abort => {
                controller.abort();
                Some(block_on(pending))
            }
            End::Dispose => {
                registration.dispose();
                Some(block_on(pending))
            }
            End::AskerDrops => {
                drop(pending);
                assert!(signal.is_aborted(), "the provider saw the withdrawal");
                None
            }
        };
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{end:?}: dropped once");
        match (end, outcome) {
            (End::AnsweredAtOnce, Some(outcome)) => assert_eq!(outcome.unwrap(), yes()),
            (End::Abort, Some(outcome)) => {
                let e = outcome.unwrap_err();
                assert_eq!(
                    (e.code(), e.message()),
                    (ErrorCode::AskAborted, messages::ASK_ABORTED)
                );
            }
            (End::Dispose, Some(outcome)) => {
                let e = outcome.unwrap_err();
                assert_eq!(
                    (e.code(), e.message()),
                    (ErrorCode::AskAborted, messages::PROVIDER_DISPOSED)
                );
            }
            (End::Deadline, Some(outcome)) => {
                let e = outcome.unwrap_err();
                assert_eq!(
                    (e.code(), e.message()),
                    (
                        ErrorCode::AskTimedOut,
                        "the user did not answer ask_user_question within 1 ms"
                    )
                );
            }
            (End::AskerDrops, None) => {}
            other => unreachable!("{other:?}"),
        }
        // The seam goes on: the next ask reaches the provider (or finds none, once disposed).
        if !matches!(end, End::Dispose) {
            let next = ctx
                .user_questions()
                .start(AskUserQuestionRequest::new(questions()))
                .unwrap();
            drop(next);
            assert_eq!(drops.load(Ordering::SeqCst), 2, "{end:?}");
        }
    }
}
