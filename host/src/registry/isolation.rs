//! Components' calls on threads of their own (`[engine] isolation`), so that a slow or
//! spinning policy holds neither the threads deciding with built-in policies nor those serving
//! requests: a bounded number of calls per policy version at once, a caller past it waiting
//! (in a tokio runtime, holding no thread) for a place at most the call's deadline before its
//! fail-safe answers as `overloaded`; the call itself ended by the sandbox's deadline (with its
//! grace for a preempted thread), and, in a tokio runtime, answered for by the host if even that
//! grace passes.

use std::sync::Arc;
use std::time::Duration;

use super::config::IsolationConfig;
use super::error::RegistryError;
use super::version::PolicyVersion;
use crate::action::{PolicyFailure, PolicyFailureKind};
use crate::context::{DecisionContext, FailureNote};
use crate::request::Request;
use crate::strategy::{RetryStrategy, StrategyFuture, SyncStrategy};
use crate::wasm::MOST_PAST_DEADLINE;

/// The threads components' calls run on, and how many calls of one version may run at once.
pub(super) struct Isolation {
    threads: rayon::ThreadPool,
    per_policy: usize,
}

impl Isolation {
    pub fn new(config: IsolationConfig) -> Result<Self, RegistryError> {
        let nice = config.nice.clamp(0, 19);
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads.max(1))
            .thread_name(|i| format!("rebound-policy-{i}"))
            .start_handler(move |_| lower_priority(nice))
            .build()
            .map_err(|e| RegistryError::Engine(format!("cannot start the policy threads: {e}")))?;
        Ok(Isolation {
            threads,
            per_policy: config.per_policy.max(1),
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

/// A component version's strategy, called on the isolation's threads.
pub(super) struct Isolated<'a> {
    pub isolation: &'a Isolation,
    pub version: &'a Arc<PolicyVersion>,
}

impl std::fmt::Debug for Isolated<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolated")
            .field("version", self.version)
            .finish_non_exhaustive()
    }
}

impl RetryStrategy for Isolated<'_> {
    fn name(&self) -> &str {
        self.version.strategy().name()
    }

    fn retry_after<'a>(
        &'a self,
        request: &'a Request,
        context: &'a DecisionContext<'a>,
    ) -> StrategyFuture<'a> {
        let Some(wasm) = self.version.wasm_shared() else {
            return self.version.strategy().retry_after(request, context);
        };
        let places = Arc::clone(self.version.call_places(self.isolation.per_policy));
        let deadline_ms = wasm.config().limits.deadline_ms;
        let deadline = Duration::from_millis(deadline_ms);
        let in_tokio = tokio::runtime::Handle::try_current().is_ok();
        StrategyFuture::pending(async move {
            // The caller's answer is due one deadline after it asked, waiting included.
            let due = tokio::time::Instant::now() + deadline;
            // A place for the call: at once, or, in a tokio runtime, as soon as one frees
            // before the answer is due (a caller waiting costs no thread).
            let place = match Arc::clone(&places).try_acquire_owned() {
                Ok(place) => Some(place),
                Err(_) if in_tokio => tokio::time::timeout_at(due, places.acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok),
                Err(_) => None,
            };
            let Some(place) = place else {
                wasm.count_overloaded();
                let failure = PolicyFailure::new(
                    PolicyFailureKind::Overloaded,
                    format!(
                        "{} calls of this policy were in progress for the whole deadline of {deadline_ms} ms",
                        self.isolation.per_policy
                    ),
                );
                return wasm.fail_safe(failure, request, context);
            };
            let (answer, answered) = tokio::sync::oneshot::channel();
            let (strategy, owned) = (Arc::clone(wasm), request.clone());
            let reason = context.reason().clone();
            let (spec, pushback, moment) = (
                context.error_map_spec().copied(),
                context.pushback(),
                context.moment(),
            );
            self.isolation.threads.spawn(move || {
                let note = FailureNote::default();
                let mut there = DecisionContext::new(&reason)
                    .with_error_map_spec(spec)
                    .with_pushback(pushback)
                    .with_failure_note(&note);
                if let Some(moment) = moment {
                    there = there.at(moment);
                }
                let action = strategy.decide(&owned, &there);
                // The place is freed before the answer is sent: the caller's next call finds it.
                drop(place);
                let _ = answer.send((action, note.into_inner()));
            });
            // Outside a tokio runtime there is no timer: the sandbox's deadline ends the call.
            let received = if in_tokio {
                // The sandbox ends a call by its own deadline, forgiving a thread the machine
                // preempted (docs: deadline grace); only a call it cannot end is answered for.
                let answer_due = tokio::time::Instant::now() + deadline + MOST_PAST_DEADLINE;
                tokio::time::timeout_at(answer_due, answered).await.ok()
            } else {
                Some(answered.await)
            };
            let failure = match received {
                Some(Ok((action, failure))) => {
                    if let Some(failure) = failure {
                        context.note_failure(failure);
                    }
                    return action;
                }
                Some(Err(_)) => PolicyFailure::new(
                    PolicyFailureKind::Trap,
                    "the policy's thread ended without an answer",
                ),
                None => PolicyFailure::new(
                    PolicyFailureKind::Timeout,
                    format!(
                        "no answer within the deadline of {deadline_ms} ms and its grace; the host answered for it"
                    ),
                ),
            };
            wasm.fail_safe(failure, request, context)
        })
    }
}
