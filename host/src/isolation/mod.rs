//! Why a module of its own: a policy is code the host did not write, and one that spins or
//! blocks must not take the threads that decide with built-in policies and serve requests.
//! Isolation is that guarantee, kept apart from the registry (which only hands it a version to
//! call) and from the engine (which enforces a call's own deadline, fuel and memory, and rings
//! the alarms this module's callers wait on: `wasm::deadline`, `wasm::alarm`,
//! `wasm::call_watch`, which every call of the engine needs, isolated or not).
//!
//! `[engine] isolation`: a trusted version ([`trust`]) is called on the deciding thread; a
//! distrusted one on threads of their own, with a bounded number of calls per policy version
//! at once ([`call_room`]) and a bounded share of the threads' time for its calls
//! ([`time_share`]), a caller past either waiting (in a tokio runtime, holding no thread) at
//! most the call's deadline before its fail-safe answers as `overloaded`; the call itself given
//! what is left of that deadline and ended by the sandbox (with its grace for a preempted
//! thread), and, in a tokio runtime, answered for by the host as soon as it is past due having
//! spent CPU (spinning, its thread perhaps waiting for a core), or if even the grace passes
//! ([`answer_wait`]).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

mod answer_wait;
mod call_room;
mod time_share;
mod trust;

use answer_wait::{wait_for_answer, Waited};
use call_room::{CallRoom, CallRooms};
use time_share::TimeShare;
use trust::Trust;

use crate::action::{PolicyFailure, PolicyFailureKind, RetryAction};
use crate::config::IsolationConfig;
use crate::request::Request;
use crate::strategy::{DecisionContext, FailureNote};
use crate::strategy::{RetryStrategy, Strategy, StrategyFuture, SyncStrategy};
use crate::wasm::{CallWatch, Due, EngineError, WasmRuntime, WasmStrategy};

/// The threads components' calls run on, how many calls of one version may run at once, and
/// how much of the threads' time one version's calls may take.
pub(crate) struct Isolation {
    threads: rayon::ThreadPool,
    per_policy: usize,
    busy_per_second_ms: u64,
    rooms: CallRooms,
}

impl Isolation {
    pub(crate) fn new(config: IsolationConfig) -> Result<Self, EngineError> {
        let nice = config.nice.clamp(0, 19);
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads.max(1))
            .thread_name(|i| format!("rebound-policy-{i}"))
            .start_handler(move |_| lower_priority(nice))
            .build()
            .map_err(|e| EngineError::new(format!("cannot start the policy threads: {e}")))?;
        Ok(Isolation {
            threads,
            per_policy: config.per_policy.max(1),
            busy_per_second_ms: config.busy_per_second_ms,
            rooms: CallRooms::default(),
        })
    }
}

/// Makes the calling thread `nice` (Linux: a thread's priority is its own).
#[cfg(target_os = "linux")]
fn lower_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    // SAFETY: setpriority reads its three integer arguments only; `who` 0 is the calling
    // thread on Linux.
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if done != 0 {
        tracing::warn!(nice, error = %std::io::Error::last_os_error(),
            "cannot lower the policy threads' priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority(_nice: i32) {}

/// What the isolation calls: a policy version, with its strategy, its component when it is
/// one, and the names a log line gives it. A version's calls share one room, kept while the
/// version lives.
pub(crate) trait IsolatedVersion: std::fmt::Debug + Send + Sync + 'static {
    /// The version's strategy (called directly when it is not a component).
    fn strategy(&self) -> &dyn RetryStrategy;
    /// The version's component, when it is one.
    fn component(&self) -> Option<&Arc<WasmStrategy>>;
    /// The policy's name.
    fn policy(&self) -> &str;
    /// The version's label.
    fn label(&self) -> &str;
}

/// A component version's strategy, called on the isolation's threads.
pub(crate) struct Isolated<'a, V> {
    pub(crate) isolation: &'a Isolation,
    pub(crate) version: &'a Arc<V>,
}

impl<V: IsolatedVersion> std::fmt::Debug for Isolated<'_, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolated")
            .field("version", self.version)
            .finish_non_exhaustive()
    }
}

impl<V: IsolatedVersion> Strategy for Isolated<'_, V> {
    fn name(&self) -> &str {
        self.version.strategy().name()
    }
}

impl<V: IsolatedVersion> RetryStrategy for Isolated<'_, V> {
    fn retry_after<'a>(
        &'a self,
        request: &'a Request,
        context: &'a DecisionContext<'a>,
    ) -> StrategyFuture<'a> {
        let Some(wasm) = self.version.component() else {
            return self.version.strategy().retry_after(request, context);
        };
        let room = self.isolation.rooms.of(self.version, || CallRoom {
            places: Arc::new(tokio::sync::Semaphore::new(self.isolation.per_policy)),
            share: TimeShare::new(self.isolation.busy_per_second_ms),
            trust: Trust::new(),
        });
        let deadline_ms = wasm.config().limits.deadline_ms;
        // A trusted version is called here, on the deciding thread, when one of its places
        // there is free (as many as on the policy threads). The time share bounds the calls
        // made on the policy threads, and a call here that overran.
        if let Some(action) = self.on_this_thread(wasm, &room, request, context) {
            return StrategyFuture::ready(action);
        }
        let in_tokio = tokio::runtime::Handle::try_current().is_ok();
        StrategyFuture::pending(async move {
            // The caller's answer is due one deadline after it asked, waiting included.
            let asked = tokio::time::Instant::now();
            // Its places here taken by calls of microseconds, a trusted version's call gives
            // way to the deciding thread's other work a few times before it is handed to the
            // policy threads, whose wake-up on busy cores costs far more.
            if in_tokio && room.trust.trusted(Instant::now()) {
                for _ in 0..GIVE_WAY {
                    tokio::task::yield_now().await;
                    if let Some(action) = self.on_this_thread(wasm, &room, request, context) {
                        return action;
                    }
                }
            }
            let due = asked + Duration::from_millis(deadline_ms);
            let place = match self.admitted(&room, asked, due, in_tokio).await {
                Ok(place) => place,
                Err(why) => {
                    wasm.count_overloaded();
                    let failure = PolicyFailure::new(PolicyFailureKind::Overloaded, why);
                    return wasm.fail_safe(failure, request, context);
                }
            };
            let answered = self.spawn_call(wasm, &room, request, context, place, due);
            // Outside a tokio runtime there is no timer: the sandbox's deadline ends the call.
            let waited = if in_tokio {
                let runtime = wasm.component().runtime();
                wait_for_answer(answered.0, &answered.1, due, |at| first_wake(runtime, at)).await
            } else {
                Waited::Answered(answered.0.await)
            };
            match answer_of(waited, deadline_ms) {
                Ok((action, failure)) => {
                    if let Some(failure) = failure {
                        context.note_failure(failure);
                    }
                    action
                }
                Err(failure) => wasm.fail_safe(failure, request, context),
            }
        })
    }
}

/// What a call on the policy threads sends back: its answer and the failure it noted.
type Answer = (RetryAction, Option<PolicyFailure>);

impl<V: IsolatedVersion> Isolated<'_, V> {
    /// A place on the policy threads for a call asked at `asked` and due at `due`: its turn in
    /// the version's share of the threads' time, then one of its places, each at once or, in a
    /// tokio runtime, when free before the answer is due (a caller waiting costs no thread).
    /// `Err` says why the call is overloaded.
    async fn admitted(
        &self,
        room: &CallRoom,
        asked: tokio::time::Instant,
        due: tokio::time::Instant,
        in_tokio: bool,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, String> {
        let deadline_ms = (due - asked).as_millis();
        let mut waited = false;
        if let Some(share) = &room.share {
            let starts = tokio::time::Instant::from_std(share.starts_at(asked.into_std()));
            if starts > asked {
                waited = true;
                if in_tokio {
                    let until = if starts > due { by(due) } else { starts };
                    tokio::time::sleep_until(until).await;
                }
                if !in_tokio || starts > due {
                    return Err(format!(
                        "this policy's calls used their share of the policy threads' time \
                         ({} ms per second) for the whole deadline of {deadline_ms} ms",
                        share.per_second_ms()
                    ));
                }
            }
        }
        let place = match Arc::clone(&room.places).try_acquire_owned() {
            Ok(place) => Some(place),
            Err(_) if in_tokio => {
                waited = true;
                tokio::time::timeout_at(by(due), Arc::clone(&room.places).acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Err(_) => None,
        };
        // A place that freed only as the answer fell due leaves the call no time (the clock
        // read only after a wait: a call placed at once has its whole deadline).
        place
            .filter(|_| !waited || tokio::time::Instant::now() < due)
            .ok_or_else(|| {
                format!(
                    "{} calls of this policy were in progress for the whole deadline of {deadline_ms} ms",
                    self.isolation.per_policy
                )
            })
    }

    /// Hands `wasm`'s call for `request` to the policy threads, holding `place` until it
    /// answers, given what is left until `due`: where its answer arrives, and the watch the
    /// host reads to answer for a call past due.
    fn spawn_call(
        &self,
        wasm: &Arc<WasmStrategy>,
        room: &Arc<CallRoom>,
        request: &Request,
        context: &DecisionContext<'_>,
        place: tokio::sync::OwnedSemaphorePermit,
        due: tokio::time::Instant,
    ) -> (tokio::sync::oneshot::Receiver<Answer>, Arc<CallWatch>) {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let (strategy, owned, room) = (Arc::clone(wasm), request.clone(), Arc::clone(room));
        let reason = context.reason().clone();
        let (spec, pushback, moment) = (
            context.error_map_spec().copied(),
            context.pushback(),
            context.moment(),
        );
        let due_std = due.into_std();
        let watch = Arc::new(CallWatch::default());
        let watched = Arc::clone(&watch);
        self.isolation.threads.spawn(move || {
            let note = FailureNote::default();
            let mut there = DecisionContext::new(&reason)
                .with_error_map_spec(spec)
                .with_pushback(pushback)
                .with_failure_note(&note);
            if let Some(moment) = moment {
                there = there.at(moment);
            }
            // The call has what is left of the caller's deadline after its wait.
            let started = room.share.as_ref().map(|_| Instant::now());
            let due = Due::At {
                at: due_std,
                watch: &watched,
            };
            let action = strategy.answer_by(&owned, &there, due);
            if let (Some(share), Some(started)) = (&room.share, started) {
                let ended = Instant::now();
                share.charge(ended - started, ended);
            }
            // The place is freed before the answer is sent: the caller's next call finds it.
            drop(place);
            let _ = answer.send((action, note.into_inner()));
        });
        (answered, watch)
    }
}

/// The answer a call on the policy threads gave, or the failure the host answers for it with
/// (its thread ended; still spinning past its deadline; silent past its grace).
fn answer_of(waited: Waited<Answer>, deadline_ms: u64) -> Result<Answer, PolicyFailure> {
    match waited {
        Waited::Answered(Ok(answer)) => Ok(answer),
        Waited::Answered(Err(_)) => Err(PolicyFailure::new(
            PolicyFailureKind::Trap,
            "the policy's thread ended without an answer",
        )),
        Waited::Spinning(spent) => Err(PolicyFailure::new(
            PolicyFailureKind::Timeout,
            format!(
                "still running past the deadline of {deadline_ms} ms after {} µs of CPU; \
                 the host answered for it (the sandbox stops the call when its thread \
                 next runs)",
                spent.as_micros()
            ),
        )),
        Waited::Silent => Err(PolicyFailure::new(
            PolicyFailureKind::Timeout,
            format!(
                "no answer within the deadline of {deadline_ms} ms and its grace; the host answered for it"
            ),
        )),
    }
}

impl<V: IsolatedVersion> Isolated<'_, V> {
    /// The answer of `wasm`, this version's component, called on the deciding thread if the
    /// version is trusted and one of its places here is free; a call that overran makes it
    /// distrusted.
    fn on_this_thread(
        &self,
        wasm: &WasmStrategy,
        room: &CallRoom,
        request: &Request,
        context: &DecisionContext<'_>,
    ) -> Option<RetryAction> {
        let now = Instant::now();
        if !room.trust.trusted(now) {
            return None;
        }
        let entered = room.trust.enter(self.isolation.per_policy)?;
        let overruns = wasm.overruns();
        let action = wasm.answer(request, context);
        drop(entered);
        if wasm.overruns() > overruns {
            // What it overran by counts against its share, as on the policy threads.
            let ended = Instant::now();
            if let Some(share) = &room.share {
                share.charge(ended - now, ended);
            }
            let cooldown = room.trust.distrust(ended);
            tracing::warn!(policy = self.version.policy(), version = self.version.label(),
                deadline_ms = wasm.config().limits.deadline_ms, cooldown_s = cooldown.as_secs(),
                "a call ran past its deadline or out of fuel: this version's calls run on the isolation threads, under their limits, for the cooldown");
        }
        Some(action)
    }
}

/// How many times a trusted version's call finding its places on the deciding threads taken
/// yields to the runtime and asks again before it is handed to the policy threads.
const GIVE_WAY: usize = 3;

/// Ready at `at`, woken by whichever comes first: the epoch ticker's alarm (at that moment when
/// the machine runs the ticker's thread promptly) or tokio's timer (up to a millisecond later,
/// rounded up to its wheel, but served by the runtime's own threads should the ticker's
/// thread wait for a core).
async fn first_wake(runtime: &WasmRuntime, at: tokio::time::Instant) {
    let mut alarm = pin!(runtime.alarm(at.into_std()));
    let mut timer = pin!(tokio::time::sleep_until(at));
    std::future::poll_fn(|cx| {
        if alarm.as_mut().poll(cx).is_ready() || timer.as_mut().poll(cx).is_ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

/// How late after its instant a tokio timer may fire (its resolution is a millisecond, and it
/// rounds up).
const TIMER_LATENESS: Duration = Duration::from_millis(1);

/// When to set a tokio timer for a wait that must end by `due`: that much earlier, so that an
/// answer of `overloaded` comes by its due time, not a millisecond after it.
fn by(due: tokio::time::Instant) -> tokio::time::Instant {
    due.checked_sub(TIMER_LATENESS).unwrap_or(due)
}
