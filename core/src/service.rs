//! The seam (§3, §4): one provider per context, validation before the provider, and
//! exactly-once settlement of every ask.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context as TaskContext, Poll, Waker};

use futures::task::AtomicWaker;

use crate::abort::{AbortController, AbortListener, AbortSignal};
use crate::agents::{Agent, AgentRegistry, Standing};
use crate::answer::validate_answer;
use crate::deadline::{Deadline, Expire};
use crate::error::{ErrorCode, Result, UserQuestionError, messages};
use crate::journal::{AskRecord, Journal};
use crate::request::{AskUserQuestionRequest, ProviderRequest};
use crate::types::{AskUserQuestionAnswer, AskUserQuestionItem};
use crate::validate::check_request;

/// What a provider's [`ask`](UserQuestionProvider::ask) returns.
pub type ProviderFuture =
    Pin<Box<dyn Future<Output = Result<AskUserQuestionAnswer>> + Send + 'static>>;

/// A UI (or anything else) that shows questions to a human and returns the answer.
///
/// `ask` is called once per ask, on the asking thread, after every check of §3 passed. The
/// returned future may complete on any thread. An error of a known code passes through to
/// the asker (e.g. `ASK_CANCELLED`); a panic (in `ask` or in the future) settles the ask
/// `PROVIDER_FAILED`. `request.signal` fires when the ask is withdrawn; the ask settles then
/// whatever the provider does, and the future is dropped.
pub trait UserQuestionProvider: Send + Sync + 'static {
    /// Shows `request.questions` and resolves with the answer.
    fn ask(&self, request: ProviderRequest) -> ProviderFuture;

    /// Whether this provider itself decides the race between an answer and a withdrawal:
    /// its future resolves with the answer when the answer came first, and with an error
    /// when the withdrawal did. [`QuestionInbox`](crate::QuestionInbox) does, under its lock,
    /// so what its `answer()` reports always matches what the asker gets.
    ///
    /// `false` (the default): once the ask is withdrawn it settles with the withdrawal's
    /// error, and whatever the provider resolves afterwards is dropped (§4.1).
    fn decides_withdrawal_races(&self) -> bool {
        false
    }

    /// The answer decided at once from the questions alone, for a provider that never waits
    /// and needs neither the signal, the agent, the key nor the deadline (the
    /// [`AutoResponder`](crate::AutoResponder)): the ask then settles as it starts, with
    /// exactly what [`ask`](Self::ask) would have resolved to, and nothing is set up for
    /// waiting (no signal, listener or deadline). `None` (the default): the provider is
    /// reached through `ask`.
    fn answer_at_once(
        &self,
        questions: &[AskUserQuestionItem],
    ) -> Option<Result<AskUserQuestionAnswer>> {
        let _ = questions;
        None
    }
}

impl<P: UserQuestionProvider + ?Sized> UserQuestionProvider for Arc<P> {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        (**self).ask(request)
    }

    fn decides_withdrawal_races(&self) -> bool {
        (**self).decides_withdrawal_races()
    }

    fn answer_at_once(
        &self,
        questions: &[AskUserQuestionItem],
    ) -> Option<Result<AskUserQuestionAnswer>> {
        (**self).answer_at_once(questions)
    }
}

struct Registration {
    id: u64,
    provider: Arc<dyn UserQuestionProvider>,
    disposed: AbortController,
}

#[derive(Default)]
struct ServiceState {
    next_registration: u64,
    current: Option<Arc<Registration>>,
    disposed: bool,
}

struct ServiceInner {
    agents: AgentRegistry,
    strict: AtomicBool,
    state: Mutex<ServiceState>,
    /// Numbers every `ask()` call, from 1 (§18).
    asks: AtomicU64,
    journal: Mutex<Option<Arc<Journal>>>,
}

impl ServiceInner {
    fn lock(&self) -> MutexGuard<'_, ServiceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn journal(&self) -> Option<Arc<Journal>> {
        self.journal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The `userQuestions` service of one context. Cheap to clone; clones are the same service.
#[derive(Clone)]
pub struct UserQuestionService {
    inner: Arc<ServiceInner>,
}

impl fmt::Debug for UserQuestionService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserQuestionService")
            .field("has_provider", &self.has_provider())
            .field("strict", &self.is_strict())
            .finish()
    }
}

impl UserQuestionService {
    /// A service that checks callers against `agents`.
    pub fn new(agents: AgentRegistry) -> Self {
        UserQuestionService {
            inner: Arc::new(ServiceInner {
                agents,
                strict: AtomicBool::new(false),
                state: Mutex::new(ServiceState::default()),
                asks: AtomicU64::new(0),
                journal: Mutex::new(None),
            }),
        }
    }

    /// Turns strict answer checking (§6 on every provider answer) on or off. Off by default.
    pub fn set_strict(&self, strict: bool) {
        self.inner.strict.store(strict, Ordering::Relaxed);
    }

    /// Whether strict answer checking is on.
    pub fn is_strict(&self) -> bool {
        self.inner.strict.load(Ordering::Relaxed)
    }

    /// Writes every later ask to the journal at `path` (§18), appending. Never fails: a file
    /// that cannot be opened counts as the first write error ([`journal_errors`](Self::journal_errors)).
    pub fn set_journal(&self, path: impl AsRef<Path>) {
        let journal = Arc::new(Journal::open(path.as_ref()));
        *self.inner.journal.lock().unwrap_or_else(|e| e.into_inner()) = Some(journal);
    }

    /// How many journal writes failed (0 without a journal).
    pub fn journal_errors(&self) -> u64 {
        self.inner.journal().map_or(0, |j| j.errors())
    }

    /// The first journal write error's text, exactly once (later calls return `None`), for a
    /// surface to report it once (a Python `RuntimeWarning`, a Node process warning).
    pub fn take_journal_error(&self) -> Option<String> {
        self.inner.journal().and_then(|j| j.take_first_error())
    }

    /// Whether a provider is registered.
    pub fn has_provider(&self) -> bool {
        self.inner.lock().current.is_some()
    }

    /// Registers the one provider of this context.
    ///
    /// Fails `DUPLICATE_PROVIDER` while another is registered, and `INVALID_ARGUMENT` once the
    /// context was disposed. The returned handle unregisters *this* registration; dropping it
    /// keeps the provider registered.
    pub fn register_provider<P: UserQuestionProvider>(
        &self,
        provider: P,
    ) -> Result<ProviderRegistration> {
        self.register_provider_arc(Arc::new(provider))
    }

    /// [`register_provider`](Self::register_provider) for a provider already behind an `Arc`.
    pub fn register_provider_arc(
        &self,
        provider: Arc<dyn UserQuestionProvider>,
    ) -> Result<ProviderRegistration> {
        let mut state = self.inner.lock();
        if state.disposed {
            return Err(UserQuestionError::invalid_argument(
                "the context was disposed; no provider can be registered",
            ));
        }
        if state.current.is_some() {
            return Err(UserQuestionError::new(
                ErrorCode::DuplicateProvider,
                messages::DUPLICATE_PROVIDER,
            ));
        }
        state.next_registration += 1;
        let registration = Arc::new(Registration {
            id: state.next_registration,
            provider,
            disposed: AbortController::new(),
        });
        let handle = ProviderRegistration {
            service: Arc::downgrade(&self.inner),
            id: registration.id,
            disposed: registration.disposed.clone(),
        };
        state.current = Some(registration);
        Ok(handle)
    }

    /// Disposes the service: unregisters the provider, settling its waiting asks
    /// `ASK_ABORTED` (§4.4). Later asks fail `NO_PROVIDER`; later registrations fail.
    pub fn dispose(&self) {
        let current = {
            let mut state = self.inner.lock();
            state.disposed = true;
            state.current.take()
        };
        if let Some(registration) = current {
            registration.disposed.abort();
        }
        // Its file closes once the asks just withdrawn have written their `settled`.
        if let Some(journal) = self.inner.journal() {
            journal.close_when_idle();
        }
    }

    /// Asks the registered provider and waits for the answer.
    ///
    /// Runs the checks of §3 in order; the provider is not reached when one fails. The
    /// returned future is `'static` and settles exactly once (§4). Dropping it withdraws the
    /// ask: the provider's signal fires.
    pub fn ask(
        &self,
        request: AskUserQuestionRequest,
    ) -> impl Future<Output = Result<AskUserQuestionAnswer>> + Send + 'static + use<> {
        let started = self.start(request);
        async move { started?.await }
    }

    /// Runs the checks of §3 now — after the input limits ([`crate::limits`]) and the
    /// well-formedness of `timeout` and `key`, all `INVALID_REQUEST` — and, when they pass,
    /// reaches the provider now (on this thread). `Err` means the provider was not reached;
    /// `Ok` is the waiting ask, which settles exactly once.
    pub fn start(&self, request: AskUserQuestionRequest) -> Result<PendingAsk> {
        let ask = self.inner.asks.fetch_add(1, Ordering::Relaxed) + 1;
        let journal = self.inner.journal();
        let agent_id = request.agent.as_ref().map(|a| a.id().to_owned());
        match self.check(request) {
            Ok((registration, request, timeout_ms)) => {
                let record = journal.map(|journal| {
                    journal.asked(
                        ask,
                        agent_id.as_deref(),
                        request.key.as_deref(),
                        &request.questions,
                        timeout_ms,
                    );
                    AskRecord::new(journal, ask, &request.questions)
                });
                Ok(PendingAsk::begin(
                    registration,
                    request,
                    timeout_ms,
                    self.is_strict(),
                    record,
                ))
            }
            Err(error) => {
                if let Some(journal) = journal {
                    journal.refused(ask, agent_id.as_deref(), &error);
                }
                Err(error)
            }
        }
    }

    /// Parses a wire request (`{"questions":[…],"timeoutMs"?,"key"?}`, see
    /// [`AskUserQuestionRequest::from_json`]) and [`start`](Self::start)s it with this agent
    /// and signal. Malformed input counts as an ask refused (§18).
    pub fn start_json(
        &self,
        text: &str,
        agent: Option<Agent>,
        signal: Option<AbortSignal>,
    ) -> Result<PendingAsk> {
        self.start_parsed(AskUserQuestionRequest::from_json(text), agent, signal)
    }

    /// [`start_json`](Self::start_json) for untyped JSON.
    pub fn start_value(
        &self,
        value: &serde_json::Value,
        agent: Option<Agent>,
        signal: Option<AbortSignal>,
    ) -> Result<PendingAsk> {
        self.start_parsed(AskUserQuestionRequest::from_value(value), agent, signal)
    }

    /// [`start`](Self::start)s a request parsed by the caller; a parse error counts as an
    /// ask refused (§18) and is returned.
    pub fn start_parsed(
        &self,
        parsed: Result<AskUserQuestionRequest>,
        agent: Option<Agent>,
        signal: Option<AbortSignal>,
    ) -> Result<PendingAsk> {
        match parsed {
            Ok(mut request) => {
                request.agent = agent;
                request.signal = signal;
                self.start(request)
            }
            Err(error) => {
                self.refuse(agent.as_ref(), &error);
                Err(error)
            }
        }
    }

    /// Records an ask refused before it could be parsed (§18): numbers it and journals it.
    pub fn refuse(&self, agent: Option<&Agent>, error: &UserQuestionError) {
        let ask = self.inner.asks.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(journal) = self.inner.journal() {
            journal.refused(ask, agent.map(Agent::id), error);
        }
    }

    /// The checks of `start`, in order; the provider to reach on success.
    fn check(
        &self,
        request: AskUserQuestionRequest,
    ) -> Result<(Arc<Registration>, AskUserQuestionRequest, Option<u64>)> {
        let timeout_ms = check_request(&request, || match &request.agent {
            None => Ok(()),
            Some(agent) => match self.inner.agents.standing(agent) {
                Standing::Root => Ok(()),
                Standing::Child => Err(UserQuestionError::new(
                    ErrorCode::DelegatedCaller,
                    messages::DELEGATED_CALLER,
                )),
                Standing::NotLive => Err(UserQuestionError::new(
                    ErrorCode::CallerNotLive,
                    messages::CALLER_NOT_LIVE,
                )),
            },
        })?;
        let registration =
            self.inner.lock().current.clone().ok_or_else(|| {
                UserQuestionError::new(ErrorCode::NoProvider, messages::NO_PROVIDER)
            })?;
        Ok((registration, request, timeout_ms))
    }
}

/// Returned by [`UserQuestionService::register_provider`]: unregisters that registration.
///
/// [`dispose`](ProviderRegistration::dispose) is idempotent, and a stale handle (its
/// registration already gone) never removes a later provider.
pub struct ProviderRegistration {
    service: Weak<ServiceInner>,
    id: u64,
    disposed: AbortController,
}

impl fmt::Debug for ProviderRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderRegistration")
            .field("id", &self.id)
            .field("active", &self.is_active())
            .finish()
    }
}

impl ProviderRegistration {
    /// Unregisters this provider and settles its waiting asks `ASK_ABORTED` (§4.3), on this
    /// thread, before returning.
    pub fn dispose(&self) {
        if let Some(service) = self.service.upgrade() {
            let mut state = service.lock();
            if state.current.as_ref().is_some_and(|r| r.id == self.id) {
                let current = state.current.take();
                drop(state);
                drop(current);
            }
        }
        self.disposed.abort();
    }

    /// Whether this registration is still the registered provider.
    pub fn is_active(&self) -> bool {
        !self.disposed.is_aborted()
    }
}

struct Settlement {
    waker: AtomicWaker,
    /// Why the ask was withdrawn: the first withdrawal claims it.
    reason: Mutex<Option<UserQuestionError>>,
    /// Set once the claimed withdrawal has fired the provider's signal (its listeners ran):
    /// only then may the asker observe it (§4.7).
    published: AtomicBool,
    withdraw: AbortController,
}

impl Settlement {
    /// Withdraws the ask: the first reason wins; the provider's signal fires (its listeners
    /// run, on this thread), and only then is the asker woken.
    fn withdraw(&self, reason: UserQuestionError) {
        self.withdraw_then(reason, || {});
    }

    /// [`withdraw`](Self::withdraw), calling `claimed` when this reason wins, before the
    /// provider's signal fires.
    fn withdraw_then(&self, reason: UserQuestionError, claimed: impl FnOnce()) {
        {
            let mut slot = self.reason.lock().unwrap_or_else(|e| e.into_inner());
            if slot.is_some() {
                return;
            }
            *slot = Some(reason);
        }
        claimed();
        self.withdraw.abort();
        self.published.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// The withdrawal's reason, once the provider's signal has fired for it.
    fn published_reason(&self) -> Option<UserQuestionError> {
        if self.published.load(Ordering::Acquire) {
            self.claimed_reason()
        } else {
            None
        }
    }

    fn claimed_reason(&self) -> Option<UserQuestionError> {
        self.reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Expire for Settlement {
    fn expire(&self, timeout_ms: u64, won: &dyn Fn()) {
        self.withdraw_then(UserQuestionError::timed_out(timeout_ms), won);
    }
}

/// An ask that reached its provider; a future that settles exactly once (§4).
///
/// Dropping it before it settles withdraws the ask (the provider's signal fires).
#[must_use = "an ask settles only when polled; dropping it withdraws the ask"]
pub struct PendingAsk {
    state: PendingState,
}

enum PendingState {
    /// Reached through the provider's `ask`: waits for the provider or a withdrawal.
    Waiting(Waiting),
    /// Settled as it started (`answer_at_once`, or a provider's future ready at once): the
    /// outcome, until it is polled.
    Settled(Option<Result<AskUserQuestionAnswer>>),
}

impl fmt::Debug for PendingAsk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            PendingState::Waiting(waiting) => waiting.fmt(f),
            PendingState::Settled(_) => f
                .debug_struct("PendingAsk")
                .field("settled", &true)
                .field("deadline", &None::<Deadline>)
                .finish(),
        }
    }
}

impl PendingAsk {
    /// Reaches the provider: at once when it answers at once, else through its `ask`.
    fn begin(
        registration: Arc<Registration>,
        request: AskUserQuestionRequest,
        timeout_ms: Option<u64>,
        strict: bool,
        record: Option<AskRecord>,
    ) -> PendingAsk {
        let provider = &registration.provider;
        let at_once = match catch_unwind(AssertUnwindSafe(|| {
            provider.answer_at_once(&request.questions)
        })) {
            Ok(outcome) => outcome,
            Err(payload) => Some(Err(provider_panicked(&*payload))),
        };
        let state = match at_once {
            None => Waiting::begin(registration, request, timeout_ms, strict, record),
            Some(outcome) => settled_at_once(outcome, strict, &request.questions, record),
        };
        PendingAsk { state }
    }

    /// The signal the provider received; it fires when this ask is withdrawn. (For an ask
    /// settled as it started, a signal that never fires: there is nothing left to withdraw,
    /// and a provider that got a signal, one whose future was ready at once, never sees it
    /// fire either.)
    pub fn provider_signal(&self) -> AbortSignal {
        match &self.state {
            PendingState::Waiting(waiting) => waiting.provider_signal(),
            PendingState::Settled(_) => AbortSignal::default(),
        }
    }

    /// The ask's deadline, when it has one (never for an ask settled as it started).
    pub fn deadline(&self) -> Option<&Deadline> {
        match &self.state {
            PendingState::Waiting(waiting) => waiting.deadline(),
            PendingState::Settled(_) => None,
        }
    }
}

impl Future for PendingAsk {
    type Output = Result<AskUserQuestionAnswer>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            PendingState::Waiting(waiting) => Pin::new(waiting).poll(cx),
            PendingState::Settled(outcome) => Poll::Ready(outcome.take().unwrap_or_else(|| {
                Err(UserQuestionError::new(
                    ErrorCode::Internal,
                    "the ask was polled after it settled",
                ))
            })),
        }
    }
}

/// An ask settled as it starts: what a waiting ask does with the provider's outcome (no
/// withdrawal can have been claimed), and the journal's `settled` line.
fn settled_at_once(
    outcome: Result<AskUserQuestionAnswer>,
    strict: bool,
    questions: &[AskUserQuestionItem],
    record: Option<AskRecord>,
) -> PendingState {
    let result = finish_with_provider(outcome, strict, questions, None);
    if let Some(record) = record {
        record.settled(&result);
    }
    PendingState::Settled(Some(result))
}

/// A provider's outcome as the asker gets it: an answer checked when `strict`; an error
/// replaced by the withdrawal's reason when one was `claimed`, and a provider error with code
/// `OK` made `PROVIDER_FAILED`.
fn finish_with_provider(
    outcome: Result<AskUserQuestionAnswer>,
    strict: bool,
    questions: &[AskUserQuestionItem],
    claimed: Option<UserQuestionError>,
) -> Result<AskUserQuestionAnswer> {
    match outcome {
        Ok(answer) => {
            if strict {
                validate_answer(questions, &answer)?;
            }
            Ok(answer)
        }
        Err(error) => {
            // An ask that was withdrawn settles with the withdrawal's reason, whatever error
            // the provider gave on seeing its signal.
            if let Some(reason) = claimed {
                return Err(reason);
            }
            if error.code() == ErrorCode::Ok {
                return Err(UserQuestionError::provider_failed(format!(
                    "the user-questions provider failed with code OK: {}",
                    error.message()
                )));
            }
            Err(error)
        }
    }
}

/// An ask waiting for its provider.
struct Waiting {
    provider: Option<ProviderFuture>,
    /// The provider's outcome, held until a withdrawal in progress has fired its signal.
    held: Option<Result<AskUserQuestionAnswer>>,
    settlement: Arc<Settlement>,
    /// The asker's signal and the registration's disposal, listened to while the ask waits
    /// (an array: no allocation of its own).
    listeners: [Option<AbortListener>; 2],
    questions: Arc<[AskUserQuestionItem]>,
    deadline: Option<Deadline>,
    record: Option<AskRecord>,
    strict: bool,
    provider_decides: bool,
    registration: Option<Arc<Registration>>,
}

impl fmt::Debug for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingAsk")
            .field("settled", &self.registration.is_none())
            .field("deadline", &self.deadline)
            .finish()
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

/// Drops a provider's future. A panic in its destructor is the provider's own (§4.5: nothing a
/// provider does crashes the process) and changes nothing: the ask's settlement stands.
fn drop_provider_future(future: Option<ProviderFuture>) {
    if let Some(future) = future {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(future)));
    }
}

fn provider_panicked(payload: &(dyn Any + Send)) -> UserQuestionError {
    UserQuestionError::provider_failed(format!(
        "the user-questions provider panicked: {}",
        panic_message(payload)
    ))
}

impl Waiting {
    /// Reaches the provider through its `ask`. A future that is ready when first polled (a
    /// synchronous provider's), with nothing withdrawing the ask by then (its signal, the
    /// registration's disposal, a deadline), settles the ask as it starts: no listener is
    /// registered for a wait that will not happen.
    fn begin(
        registration: Arc<Registration>,
        request: AskUserQuestionRequest,
        timeout_ms: Option<u64>,
        strict: bool,
        record: Option<AskRecord>,
    ) -> PendingState {
        let AskUserQuestionRequest {
            questions,
            agent,
            signal,
            key,
            to,
            ..
        } = request;
        let questions: Arc<[AskUserQuestionItem]> = questions.into();
        let settlement = Arc::new(Settlement {
            waker: AtomicWaker::new(),
            reason: Mutex::new(None),
            published: AtomicBool::new(false),
            withdraw: AbortController::new(),
        });
        // The clock starts as the provider is reached (§16).
        let deadline = timeout_ms.map(|ms| {
            let target: Arc<dyn Expire> = settlement.clone();
            Deadline::arm(ms, Arc::downgrade(&target))
        });
        let request = ProviderRequest {
            questions: questions.clone(),
            agent,
            signal: settlement.withdraw.signal(),
            key,
            to: to.map(Into::into),
            deadline: deadline.clone(),
        };
        let provider = registration.provider.clone();
        let provider_decides = provider.decides_withdrawal_races();
        let mut future: ProviderFuture =
            match catch_unwind(AssertUnwindSafe(|| provider.ask(request))) {
                Ok(future) => future,
                Err(payload) => {
                    let error = provider_panicked(&*payload);
                    Box::pin(async move { Err(error) })
                }
            };
        let ready = match catch_unwind(AssertUnwindSafe(|| {
            future
                .as_mut()
                .poll(&mut TaskContext::from_waker(Waker::noop()))
        })) {
            Ok(Poll::Ready(outcome)) => Some(outcome),
            Ok(Poll::Pending) => None,
            Err(payload) => Some(Err(provider_panicked(&*payload))),
        };
        let withdrawn = || {
            settlement.claimed_reason().is_some()
                || signal.as_ref().is_some_and(AbortSignal::is_aborted)
                || registration.disposed.signal().is_aborted()
        };
        let held = match ready {
            Some(outcome) if !withdrawn() => {
                if let Some(deadline) = &deadline {
                    deadline.clear();
                }
                drop_provider_future(Some(future));
                return settled_at_once(outcome, strict, &questions, record);
            }
            // Withdrawn meanwhile: the outcome waits for the withdrawal, as when polled.
            outcome => outcome,
        };
        let asker = signal.map(|signal| {
            let s = settlement.clone();
            signal.on_abort(move || s.withdraw(UserQuestionError::aborted()))
        });
        let s = settlement.clone();
        let disposal = registration
            .disposed
            .signal()
            .on_abort(move || s.withdraw(UserQuestionError::provider_disposed()));
        let listeners = [asker, Some(disposal)];
        let provider = if held.is_none() {
            Some(future)
        } else {
            drop_provider_future(Some(future));
            None
        };
        PendingState::Waiting(Waiting {
            provider,
            held,
            settlement,
            listeners,
            questions,
            deadline,
            record,
            strict,
            provider_decides,
            registration: Some(registration),
        })
    }

    fn provider_signal(&self) -> AbortSignal {
        self.settlement.withdraw.signal()
    }

    fn deadline(&self) -> Option<&Deadline> {
        self.deadline.as_ref()
    }

    /// Settles: releases the listeners, the provider and the deadline, and writes the
    /// journal's `settled` line — all before the asker sees `result`.
    fn settle(&mut self, result: Result<AskUserQuestionAnswer>) -> Result<AskUserQuestionAnswer> {
        self.listeners = [None, None];
        drop_provider_future(self.provider.take());
        self.held = None;
        self.registration = None;
        if let Some(deadline) = &self.deadline {
            deadline.clear();
        }
        if let Some(record) = self.record.take() {
            record.settled(&result);
        }
        result
    }

    /// The provider's outcome as the asker gets it, given the withdrawal `claimed` when the
    /// outcome was taken — read once for both this and [`must_hold`](Self::must_hold), so that
    /// an outcome is never replaced by a withdrawal it was not held for (whose listeners may
    /// not have run yet, §4.7).
    fn finish_with_provider(
        &self,
        outcome: Result<AskUserQuestionAnswer>,
        claimed: Option<UserQuestionError>,
    ) -> Result<AskUserQuestionAnswer> {
        let claimed = match &outcome {
            Ok(_) => None,
            // A provider that decides the race reports the withdrawal as `ASK_ABORTED` (which
            // becomes the withdrawal's own reason: a deadline, a disposal); any other error it
            // settled with came first and stands — an inbox `cancel` or `fail` that won, which
            // its subscribers were told (§7).
            Err(error) if self.provider_decides && error.code() != ErrorCode::AskAborted => None,
            Err(_) => claimed,
        };
        finish_with_provider(outcome, self.strict, &self.questions, claimed)
    }

    /// Whether the provider's outcome must wait: a withdrawal was claimed but its signal's
    /// listeners have not all run yet (§4.7). An answer must wait too, unless the provider
    /// decides the race: an executor that polls inside a waker (the inline one) can see the
    /// provider's answer while the withdrawal's listeners run, and §4.1 drops that answer.
    fn must_hold(&self, outcome: &Result<AskUserQuestionAnswer>, claimed: bool) -> bool {
        (outcome.is_err() || !self.provider_decides)
            && claimed
            && !self.settlement.published.load(Ordering::Acquire)
    }
}

impl Future for Waiting {
    type Output = Result<AskUserQuestionAnswer>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if this.registration.is_none() {
            return Poll::Ready(Err(UserQuestionError::new(
                ErrorCode::Internal,
                "the ask was polled after it settled",
            )));
        }
        // A withdrawal settles the ask at once; what the provider resolves after it is late and
        // dropped — unless the provider decides that race itself (the inbox).
        if !this.provider_decides
            && let Some(reason) = this.settlement.published_reason()
        {
            return Poll::Ready(this.settle(Err(reason)));
        }
        let outcome = match this.held.take() {
            Some(outcome) => Some(outcome),
            None => match this.provider.as_mut() {
                Some(provider) => {
                    match catch_unwind(AssertUnwindSafe(|| provider.as_mut().poll(cx))) {
                        Ok(Poll::Ready(outcome)) => Some(outcome),
                        Ok(Poll::Pending) => None,
                        Err(payload) => Some(Err(provider_panicked(&*payload))),
                    }
                }
                None => None,
            },
        };
        if let Some(outcome) = outcome {
            let claimed = this.settlement.claimed_reason();
            if this.must_hold(&outcome, claimed.is_some()) {
                drop_provider_future(this.provider.take());
                this.held = Some(outcome);
                this.settlement.waker.register(cx.waker());
                if this.must_hold(this.held.as_ref().expect("just held"), true) {
                    return Poll::Pending;
                }
                let outcome = this.held.take().expect("just held");
                let result = this.finish_with_provider(outcome, claimed);
                return Poll::Ready(this.settle(result));
            }
            let result = this.finish_with_provider(outcome, claimed);
            return Poll::Ready(this.settle(result));
        }
        this.settlement.waker.register(cx.waker());
        // A provider that decides the race always resolves after a withdrawal (the inbox sends
        // the winning settlement, answer or withdrawal); wait for it rather than guess.
        if !this.provider_decides
            && let Some(reason) = this.settlement.published_reason()
        {
            return Poll::Ready(this.settle(Err(reason)));
        }
        Poll::Pending
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.registration.is_some() {
            // Withdrawn by the asker: the provider must see its signal fire.
            self.settlement.withdraw(UserQuestionError::aborted());
            let reason = self
                .settlement
                .claimed_reason()
                .unwrap_or_else(UserQuestionError::aborted);
            let _ = self.settle(Err(reason));
        }
    }
}

/// One context: an agent registry and the user-questions service that checks against it.
///
/// Dropping the context disposes it (§4.4).
pub struct Context {
    agents: AgentRegistry,
    service: UserQuestionService,
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("agents", &self.agents)
            .field("user_questions", &self.service)
            .finish()
    }
}

impl Context {
    /// A context with an empty agent registry and no provider.
    pub fn new() -> Self {
        let agents = AgentRegistry::new();
        let service = UserQuestionService::new(agents.clone());
        Context { agents, service }
    }

    /// A context whose asks are written to the journal at `path` (§18). Never fails: a file
    /// that cannot be opened counts as the first write error.
    pub fn with_journal(path: impl AsRef<Path>) -> Self {
        let ctx = Context::new();
        ctx.service.set_journal(path);
        ctx
    }

    /// Writes every later ask to the journal at `path` (§18); see
    /// [`UserQuestionService::set_journal`].
    pub fn set_journal(&self, path: impl AsRef<Path>) {
        self.service.set_journal(path);
    }

    /// How many journal writes failed (0 without a journal); see
    /// [`UserQuestionService::journal_errors`].
    pub fn journal_errors(&self) -> u64 {
        self.service.journal_errors()
    }

    /// The live agents of this context.
    pub fn agents(&self) -> &AgentRegistry {
        &self.agents
    }

    /// The `userQuestions` service.
    pub fn user_questions(&self) -> &UserQuestionService {
        &self.service
    }

    /// Disposes the provider, settling waiting asks `ASK_ABORTED` (§4.4); later asks fail
    /// `NO_PROVIDER`. Idempotent; also done on drop.
    pub fn dispose(&self) {
        self.service.dispose();
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        self.service.dispose();
    }
}
