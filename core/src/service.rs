//! The seam (§3, §4): one provider per context, validation before the provider, and
//! exactly-once settlement of every ask.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context as TaskContext, Poll};

use futures::task::AtomicWaker;

use crate::abort::{AbortController, AbortListener, AbortSignal};
use crate::agents::{Agent, AgentRegistry, Standing};
use crate::answer::validate_answer;
use crate::error::{ErrorCode, Result, UserQuestionError, messages};
use crate::limits::check_question_limits;
use crate::types::{AskUserQuestionAnswer, AskUserQuestionItem};
use crate::validate::{check_not_empty, check_questions};

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
}

impl<P: UserQuestionProvider + ?Sized> UserQuestionProvider for Arc<P> {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        (**self).ask(request)
    }

    fn decides_withdrawal_races(&self) -> bool {
        (**self).decides_withdrawal_races()
    }
}

/// What a provider receives.
#[derive(Clone, Debug)]
pub struct ProviderRequest {
    /// The validated questions.
    pub questions: Arc<[AskUserQuestionItem]>,
    /// The asking agent, when one was supplied (always a live runtime root).
    pub agent: Option<Agent>,
    /// Fires when the ask is withdrawn: the caller's abort, the provider's disposal, the
    /// context's disposal, or the asker dropping its future.
    pub signal: AbortSignal,
}

/// What an asker passes to [`UserQuestionService::ask`].
#[derive(Clone, Debug, Default)]
pub struct AskUserQuestionRequest {
    /// The questions, at least one.
    pub questions: Vec<AskUserQuestionItem>,
    /// The calling agent; when present it must be the exact live runtime root.
    pub agent: Option<Agent>,
    /// The caller's abort signal.
    pub signal: Option<AbortSignal>,
}

impl AskUserQuestionRequest {
    /// A request for these questions, with no agent and no signal.
    pub fn new(questions: Vec<AskUserQuestionItem>) -> Self {
        AskUserQuestionRequest {
            questions,
            agent: None,
            signal: None,
        }
    }

    /// The same request, asked by `agent`.
    pub fn with_agent(mut self, agent: Agent) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The same request, withdrawn when `signal` aborts.
    pub fn with_signal(mut self, signal: AbortSignal) -> Self {
        self.signal = Some(signal);
        self
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
}

impl ServiceInner {
    fn lock(&self) -> MutexGuard<'_, ServiceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Checks the input limits ([`crate::limits`], `INVALID_REQUEST`), then runs the checks of §3 now and, when they pass, reaches the provider now (on this
    /// thread). `Err` means the provider was not reached; `Ok` is the waiting ask, which
    /// settles exactly once.
    pub fn start(&self, request: AskUserQuestionRequest) -> Result<PendingAsk> {
        let AskUserQuestionRequest {
            questions,
            agent,
            signal,
        } = request;
        check_question_limits(&questions)?;
        if signal.as_ref().is_some_and(AbortSignal::is_aborted) {
            return Err(UserQuestionError::aborted());
        }
        check_not_empty(&questions)?;
        if let Some(agent) = &agent {
            match self.inner.agents.standing(agent) {
                Standing::Root => {}
                Standing::Child => {
                    return Err(UserQuestionError::new(
                        ErrorCode::DelegatedCaller,
                        messages::DELEGATED_CALLER,
                    ));
                }
                Standing::NotLive => {
                    return Err(UserQuestionError::new(
                        ErrorCode::CallerNotLive,
                        messages::CALLER_NOT_LIVE,
                    ));
                }
            }
        }
        check_questions(&questions)?;
        let registration =
            self.inner.lock().current.clone().ok_or_else(|| {
                UserQuestionError::new(ErrorCode::NoProvider, messages::NO_PROVIDER)
            })?;
        Ok(PendingAsk::begin(
            registration,
            questions.into(),
            agent,
            signal,
            self.is_strict(),
        ))
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
    reason: Mutex<Option<UserQuestionError>>,
    withdraw: AbortController,
}

impl Settlement {
    /// Records why the ask was withdrawn (first reason wins), fires the provider's signal and
    /// wakes the asker.
    fn withdraw(&self, reason: UserQuestionError) {
        {
            let mut slot = self.reason.lock().unwrap_or_else(|e| e.into_inner());
            if slot.is_none() {
                *slot = Some(reason);
            }
        }
        self.withdraw.abort();
        self.waker.wake();
    }

    fn reason(&self) -> Option<UserQuestionError> {
        self.reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// An ask that reached its provider; a future that settles exactly once (§4).
///
/// Dropping it before it settles withdraws the ask (the provider's signal fires).
#[must_use = "an ask settles only when polled; dropping it withdraws the ask"]
pub struct PendingAsk {
    provider: Option<ProviderFuture>,
    settlement: Arc<Settlement>,
    listeners: Vec<AbortListener>,
    questions: Arc<[AskUserQuestionItem]>,
    strict: bool,
    provider_decides: bool,
    registration: Option<Arc<Registration>>,
}

impl fmt::Debug for PendingAsk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingAsk")
            .field("settled", &self.registration.is_none())
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

fn provider_panicked(payload: &(dyn Any + Send)) -> UserQuestionError {
    UserQuestionError::provider_failed(format!(
        "the user-questions provider panicked: {}",
        panic_message(payload)
    ))
}

impl PendingAsk {
    fn begin(
        registration: Arc<Registration>,
        questions: Arc<[AskUserQuestionItem]>,
        agent: Option<Agent>,
        signal: Option<AbortSignal>,
        strict: bool,
    ) -> PendingAsk {
        let settlement = Arc::new(Settlement {
            waker: AtomicWaker::new(),
            reason: Mutex::new(None),
            withdraw: AbortController::new(),
        });
        let request = ProviderRequest {
            questions: questions.clone(),
            agent,
            signal: settlement.withdraw.signal(),
        };
        let provider = registration.provider.clone();
        let provider_decides = provider.decides_withdrawal_races();
        let future: ProviderFuture = match catch_unwind(AssertUnwindSafe(|| provider.ask(request)))
        {
            Ok(future) => future,
            Err(payload) => {
                let error = provider_panicked(&*payload);
                Box::pin(async move { Err(error) })
            }
        };
        let mut listeners = Vec::with_capacity(2);
        if let Some(signal) = signal {
            let s = settlement.clone();
            listeners.push(signal.on_abort(move || s.withdraw(UserQuestionError::aborted())));
        }
        let s = settlement.clone();
        listeners.push(
            registration
                .disposed
                .signal()
                .on_abort(move || s.withdraw(UserQuestionError::provider_disposed())),
        );
        PendingAsk {
            provider: Some(future),
            settlement,
            listeners,
            questions,
            strict,
            provider_decides,
            registration: Some(registration),
        }
    }

    /// The signal the provider received; it fires when this ask is withdrawn.
    pub fn provider_signal(&self) -> AbortSignal {
        self.settlement.withdraw.signal()
    }

    fn settle(&mut self) {
        for listener in self.listeners.drain(..) {
            listener.remove();
        }
        self.provider = None;
        self.registration = None;
    }

    fn finish_with_provider(
        &self,
        outcome: Result<AskUserQuestionAnswer>,
    ) -> Result<AskUserQuestionAnswer> {
        match outcome {
            Ok(answer) => {
                if self.strict {
                    validate_answer(&self.questions, &answer)?;
                }
                Ok(answer)
            }
            Err(error) => {
                // An ask that was withdrawn settles with the withdrawal's reason, whatever error
                // the provider gave on seeing its signal.
                if let Some(reason) = self.settlement.reason() {
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
}

impl Future for PendingAsk {
    type Output = Result<AskUserQuestionAnswer>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(provider) = this.provider.as_mut() else {
            return Poll::Ready(Err(UserQuestionError::new(
                ErrorCode::Internal,
                "the ask was polled after it settled",
            )));
        };
        // A withdrawal settles the ask at once; what the provider resolves after it is late and
        // dropped — unless the provider decides that race itself (the inbox).
        if !this.provider_decides
            && let Some(reason) = this.settlement.reason()
        {
            this.settle();
            return Poll::Ready(Err(reason));
        }
        let polled = catch_unwind(AssertUnwindSafe(|| provider.as_mut().poll(cx)));
        let outcome = match polled {
            Ok(Poll::Ready(outcome)) => Some(outcome),
            Ok(Poll::Pending) => None,
            Err(payload) => Some(Err(provider_panicked(&*payload))),
        };
        if let Some(outcome) = outcome {
            let result = this.finish_with_provider(outcome);
            this.settle();
            return Poll::Ready(result);
        }
        this.settlement.waker.register(cx.waker());
        // A provider that decides the race always resolves after a withdrawal (the inbox sends
        // the winning settlement, answer or withdrawal); wait for it rather than guess.
        if !this.provider_decides
            && let Some(reason) = this.settlement.reason()
        {
            this.settle();
            return Poll::Ready(Err(reason));
        }
        Poll::Pending
    }
}

impl Drop for PendingAsk {
    fn drop(&mut self) {
        if self.registration.is_some() {
            // Withdrawn by the asker: the provider must see its signal fire.
            self.settlement.withdraw(UserQuestionError::aborted());
            self.settle();
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
