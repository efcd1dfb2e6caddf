//! One attempt of a hedged request: its copies run side by side, each a call of the operation
//! told its copy number, sent when the [`HedgeSchedule`] says; the first success wins and the
//! copies still running are dropped (cancelled); a fatal failure, or the last copy's failure
//! with none due, is the attempt's failure; the attempt timeout (at the latest the deadline)
//! bounds them all.

use std::future::{poll_fn, Future};
use std::ops::ControlFlow;
use std::task::Poll;

use tokio::time::error::Elapsed;
use tokio::time::Instant;
use tracing::{Instrument, Span};

use super::attempt::Attempt;
use super::failure::Failure;
use super::settle::{settle, settle_dropped};
use crate::action::NodeChoice;
use crate::controls::PolicyControls;
use crate::hedge::{CopyEnd, HedgeSchedule};
use crate::retry_loop::{NextAttempt, RetryLoop};
use crate::telemetry::{self, HedgeEvent};

/// What every copy of one attempt shares.
pub(super) struct Copies<'a> {
    pub next: &'a NextAttempt,
    pub deadline: Instant,
    /// When the attempt (every copy of it) is cut: its attempt timeout, at the latest the
    /// deadline.
    pub cut_at: Instant,
    pub controls: &'a PolicyControls,
    pub span: &'a Span,
}

/// What happened while the copies ran.
enum Event<R> {
    /// Copy `.0` ended with `.1`.
    Ended(u32, R),
    /// The next copy is due.
    Due,
}

impl Copies<'_> {
    /// The call of copy `copy`, sent to `node`.
    fn attempt(&self, copy: u32, node: NodeChoice) -> Attempt {
        Attempt::new(
            self.next.number,
            copy,
            node,
            self.next.consistency,
            (self.deadline, self.cut_at),
            self.controls.breakers().cloned(),
        )
    }

    /// Runs the copies as `schedule` (started as the first is sent) says, until one succeeds,
    /// the attempt fails or the deadline passes; with how many copies were sent after the
    /// first.
    pub(super) async fn run<T, E, F, Fut>(
        &self,
        mut schedule: HedgeSchedule,
        retry: &mut RetryLoop,
        operation: &mut F,
    ) -> (Result<Result<T, Failure<E>>, Elapsed>, u32)
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        let mut attempts = vec![self.attempt(0, self.next.node)];
        let copy_span = |copy: u32| tracing::debug_span!(parent: self.span, "rebound.copy", copy);
        // At most `MAX_COPIES` calls, each boxed: only hedged requests pay for it.
        let mut running = vec![(
            0,
            Box::pin(operation(attempts[0].clone()).instrument(copy_span(0))),
        )];
        let copies = async {
            let mut last_failure = None;
            let mut timer = Box::pin(tokio::time::sleep_until(self.cut_at));
            loop {
                let due = schedule.next_due();
                if running.is_empty() && due.is_none() {
                    return last_failure.expect("a copy failed before none was left");
                }
                if let Some((at, _)) = due {
                    timer.as_mut().reset(Instant::from_std(at));
                }
                let event = poll_fn(|cx| {
                    for at in 0..running.len() {
                        if let Poll::Ready(result) = running[at].1.as_mut().poll(cx) {
                            let (copy, _) = running.swap_remove(at);
                            return Poll::Ready(Event::Ended(copy, result));
                        }
                    }
                    if due.is_some() && timer.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Event::Due);
                    }
                    Poll::Pending
                })
                .await;
                match event {
                    Event::Ended(copy, result) => {
                        let attempt = &attempts[copy as usize];
                        let still_running = running.len();
                        match self.copy_ended(&mut schedule, retry, attempt, result, still_running)
                        {
                            ControlFlow::Break(end) => return end,
                            ControlFlow::Continue(failure) => last_failure = Some(Err(failure)),
                        }
                    }
                    Event::Due => {
                        let now = Instant::now().into_std();
                        if let Some(node) = schedule.send_due(retry.request(), now) {
                            let copy = schedule.copies() - 1;
                            let attempt = self.attempt(copy, node);
                            attempts.push(attempt.clone());
                            running.push((
                                copy,
                                Box::pin(operation(attempt).instrument(copy_span(copy))),
                            ));
                            telemetry::record_hedges(HedgeEvent::Sent, 1);
                        }
                    }
                }
            }
        };
        let ended = tokio::time::timeout_at(self.cut_at, copies).await;
        for attempt in &attempts {
            settle_dropped(retry, attempt);
        }
        (ended, attempts.len() as u32 - 1)
    }

    /// A copy (made as `attempt`) ended with `result` while `still_running` others run:
    /// settled in its breaker; the attempt's end when it ends it (a success, or a failure that
    /// ends the request: the others are cancelled), else the failure to keep as the last.
    fn copy_ended<T, E>(
        &self,
        schedule: &mut HedgeSchedule,
        retry: &mut RetryLoop,
        attempt: &Attempt,
        result: Result<T, Failure<E>>,
        still_running: usize,
    ) -> ControlFlow<Result<T, Failure<E>>, Failure<E>> {
        settle(retry, self.controls, Some(&result), attempt);
        let copy = attempt.copy();
        let end = match &result {
            Ok(_) => CopyEnd::End,
            Err(failure) => match failure.cause.reason() {
                Some(reason) => {
                    let now = Instant::now().into_std();
                    schedule.failed(
                        retry.request(),
                        reason,
                        failure.pushback,
                        failure.progress,
                        now,
                    )
                }
                // Final, or an answer that is not retried: it ends the request.
                None => CopyEnd::End,
            },
        };
        let cancelled = still_running as u64;
        match result {
            Ok(value) => {
                telemetry::record_hedges(HedgeEvent::Won, u64::from(copy > 0));
                telemetry::record_hedges(HedgeEvent::Cancelled, cancelled);
                tracing::debug!(copy, cancelled, "copy answered first");
                ControlFlow::Break(Ok(value))
            }
            Err(failure) if end == CopyEnd::End => {
                telemetry::record_hedges(HedgeEvent::Cancelled, cancelled);
                ControlFlow::Break(Err(failure))
            }
            Err(failure) => ControlFlow::Continue(failure),
        }
    }
}
