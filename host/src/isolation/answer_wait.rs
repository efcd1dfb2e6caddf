//! How the caller of an isolated call waits for its answer: the sandbox ends a call by its own
//! deadline, forgiving a thread the machine preempted, so its verdict is awaited; but a call
//! past due that has spent CPU is spinning, and its caller is answered at once, whether or not
//! the machine is running the call's thread; and no call is waited for past the grace. The
//! looks are timed by the caller's choice of timer: in the isolation, the epoch ticker's
//! alarms or tokio's timers, whichever wakes first (tokio's round up to a millisecond); in
//! tests, tokio's paused clock.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use crate::wasm::{CallWatch, MOST_PAST_DEADLINE};

/// CPU time a call past its deadline has spent after which its caller is answered for it:
/// far more than an honest decision takes (tens of microseconds in the slowest languages,
/// docs/performance.md "Policies per language"), far less than a call spinning to a deadline
/// of milliseconds has spent.
const SPINNING_CPU: Duration = Duration::from_micros(200);

/// How often a caller past its answer's due time looks at the call's CPU time while the call's
/// thread spends none (waiting for a core).
const LOOK_EVERY: Duration = Duration::from_millis(1);

/// The soonest a caller looks again at a call whose thread is spending CPU.
const LOOK_SOONEST: Duration = Duration::from_micros(50);

/// How a caller's wait for its call's answer ended.
pub(super) enum Waited<T> {
    /// The call's thread answered (or dropped the channel).
    Answered(Result<T, tokio::sync::oneshot::error::RecvError>),
    /// The call was past due and had spent this much CPU: spinning.
    Spinning(Duration),
    /// No answer even within the deadline's grace.
    Silent,
}

/// Waits for `answered`, due at `due`, looking at it at the moments `sleep_until` wakes. The
/// sandbox ends a call by its own deadline, forgiving a thread the machine preempted (docs:
/// deadline grace), so its verdict is awaited; but a call past due that has spent
/// [`SPINNING_CPU`] is spinning, and its caller is answered at once rather than when the
/// machine next runs the call's thread. A call that has spent nothing is waiting for the CPU,
/// and is waited for up to the grace.
pub(super) async fn wait_for_answer<T, S: Future<Output = ()>>(
    mut answered: tokio::sync::oneshot::Receiver<T>,
    watch: &CallWatch,
    due: tokio::time::Instant,
    sleep_until: impl Fn(tokio::time::Instant) -> S,
) -> Waited<T> {
    let last = due + MOST_PAST_DEADLINE;
    let mut look = due;
    let mut before = Duration::ZERO;
    loop {
        let mut sleep = pin!(sleep_until(look.min(last)));
        let answer = std::future::poll_fn(|cx| {
            if let Poll::Ready(answer) = std::pin::Pin::new(&mut answered).poll(cx) {
                return Poll::Ready(Some(answer));
            }
            sleep.as_mut().poll(cx).map(|()| None)
        })
        .await;
        match answer {
            Some(answer) => return Waited::Answered(answer),
            None if look >= last => return Waited::Silent,
            None => {}
        }
        let spent = watch.cpu_spent();
        if let Some(spent) = spent.filter(|spent| *spent >= SPINNING_CPU) {
            // The answer may have come as the CPU time was read.
            return match answered.try_recv() {
                Ok(answer) => Waited::Answered(Ok(answer)),
                Err(_) => Waited::Spinning(spent),
            };
        }
        look += next_look(spent, before);
        before = spent.unwrap_or_default();
    }
}

/// How long after a look at a call past due, which had spent `spent` of CPU (`before` at the
/// look before), its caller looks again: when a thread running since could have spent
/// [`SPINNING_CPU`] if it spent any since (a call that started with little of its deadline
/// left is past due before it has spent that much; it is answered for as soon as it has, not
/// a [`LOOK_EVERY`] later), and a [`LOOK_EVERY`] later if its thread is waiting for a core.
fn next_look(spent: Option<Duration>, before: Duration) -> Duration {
    match spent {
        Some(spent) if spent > before => SPINNING_CPU
            .saturating_sub(spent)
            .clamp(LOOK_SOONEST, LOOK_EVERY),
        _ => LOOK_EVERY,
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::sync::{mpsc, Arc};

    use super::*;

    /// A watched "call" on a thread of its own that spends `cpu` and then blocks (as a spinning
    /// call's thread does while the machine runs others) until the returned sender is dropped.
    fn blocked_call_after(cpu: Duration) -> (Arc<CallWatch>, mpsc::Sender<()>) {
        let watch = Arc::new(CallWatch::default());
        let (started, ready) = mpsc::channel();
        let (release, blocked) = mpsc::channel::<()>();
        let watched = Arc::clone(&watch);
        std::thread::spawn(move || {
            watched.start();
            let own = || cpu_time::ThreadTime::now().as_duration();
            let from = own();
            while own() - from < cpu {}
            started.send(()).unwrap();
            let _ = blocked.recv();
        });
        ready.recv().unwrap();
        (watch, release)
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_due_that_spent_cpu_is_answered_for_at_once() {
        let (watch, _release) = blocked_call_after(SPINNING_CPU);
        let (_answer, answered) = tokio::sync::oneshot::channel::<()>();
        let due = tokio::time::Instant::now() + Duration::from_millis(10);
        let waited = wait_for_answer(answered, &watch, due, tokio::time::sleep_until).await;
        assert!(matches!(waited, Waited::Spinning(spent) if spent >= SPINNING_CPU));
        // At the first look, at its due time: not a grace later.
        assert!(tokio::time::Instant::now() < due + LOOK_EVERY);
    }

    #[test]
    fn a_call_spending_cpu_is_looked_at_again_when_it_could_have_spent_the_spinning_cpu() {
        let us = Duration::from_micros;
        // Running since the look before: looked at again when it could have spent enough.
        assert_eq!(next_look(Some(us(40)), us(0)), us(160));
        assert_eq!(next_look(Some(us(190)), us(40)), LOOK_SOONEST);
        // Spending nothing (its thread waits for a core), or unreadable: a whole look later.
        assert_eq!(next_look(Some(us(40)), us(40)), LOOK_EVERY);
        assert_eq!(next_look(Some(Duration::ZERO), Duration::ZERO), LOOK_EVERY);
        assert_eq!(next_look(None, Duration::ZERO), LOOK_EVERY);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_due_that_spent_nothing_is_waited_for_through_the_grace() {
        let (watch, _release) = blocked_call_after(Duration::ZERO);
        let (_answer, answered) = tokio::sync::oneshot::channel::<()>();
        let due = tokio::time::Instant::now() + Duration::from_millis(10);
        let waited = wait_for_answer(answered, &watch, due, tokio::time::sleep_until).await;
        assert!(matches!(waited, Waited::Silent));
        assert!(tokio::time::Instant::now() >= due + MOST_PAST_DEADLINE);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_past_due_is_taken_even_from_a_call_that_spent_cpu() {
        let (watch, _release) = blocked_call_after(SPINNING_CPU);
        let (answer, answered) = tokio::sync::oneshot::channel();
        answer.send(7).unwrap();
        let due = tokio::time::Instant::now();
        assert!(matches!(
            wait_for_answer(answered, &watch, due, tokio::time::sleep_until).await,
            Waited::Answered(Ok(7))
        ));
    }
}
