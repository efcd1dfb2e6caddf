//! Wake-ups at a precise moment, rung by the epoch ticker's thread. tokio's timers fire on a
//! wheel of milliseconds and round up (a wait due at t ends up to a millisecond or more after
//! t, then waits for a worker to look at its timers), while the ticker's own sleeps end within
//! the kernel's timer slack of their moment: the ticker sleeps to the earlier of its next tick
//! and the earliest alarm set. The caller of an isolated call sets one at its answer's due
//! time, so that a spinning call is answered for at that moment rather than at the next
//! millisecond of tokio's wheel.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::Instant;

/// The alarms set and the thread that rings them.
#[derive(Debug, Default)]
pub(super) struct Alarms {
    set: Mutex<Plan>,
    next_id: AtomicU64,
    /// The ringing thread, woken early when an alarm is set before its planned wake.
    ringer: OnceLock<Thread>,
}

/// The alarms set, and when the ringing thread plans to wake next.
#[derive(Debug, Default)]
struct Plan {
    alarms: Vec<Set>,
    wake: Option<Instant>,
}

/// One alarm set: when, and the task to wake.
#[derive(Debug)]
struct Set {
    id: u64,
    at: Instant,
    waker: Waker,
}

impl Alarms {
    /// Names the thread that rings the alarms (once, as it starts).
    pub(super) fn rung_by(&self, thread: Thread) {
        let _ = self.ringer.set(thread);
    }

    /// When the ringing thread, due to wake at `next` on its own account, is to wake: then, or
    /// at the earliest alarm set if sooner.
    pub(super) fn plan_wake(&self, next: Instant) -> Instant {
        let mut plan = self.lock();
        let wake = plan
            .alarms
            .iter()
            .map(|set| set.at)
            .fold(next, Instant::min);
        plan.wake = Some(wake);
        wake
    }

    /// The earliest moment an alarm is set for.
    #[cfg(test)]
    pub(super) fn earliest(&self) -> Option<Instant> {
        self.lock().alarms.iter().map(|set| set.at).min()
    }

    /// Wakes the tasks whose alarms are due at `now`, and forgets those alarms.
    pub(super) fn ring(&self, now: Instant) {
        let mut due = Vec::new();
        self.lock().alarms.retain(|set| {
            if set.at <= now {
                due.push(set.waker.clone());
            }
            set.at > now
        });
        // Outside the lock: a woken task may set its next alarm at once.
        due.into_iter().for_each(Waker::wake);
    }

    /// Wakes the ringing thread (to look again at the alarms, or to stop).
    pub(super) fn rouse(&self) {
        if let Some(ringer) = self.ringer.get() {
            ringer.unpark();
        }
    }

    /// A future ready at `at`, woken by the ringing thread.
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    pub(super) fn at(&self, at: Instant) -> Alarm<'_> {
        Alarm {
            alarms: self,
            at,
            id: None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Plan> {
        // A panic under the lock leaves the list whole (a push, a retain, a removal).
        self.set.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets (or moves to another task) the alarm `id`; `None`: set a new one.
    fn set(&self, id: Option<u64>, at: Instant, waker: &Waker) -> u64 {
        let mut plan = self.lock();
        if let Some(known) = id.and_then(|id| plan.alarms.iter_mut().find(|set| set.id == id)) {
            known.waker.clone_from(waker);
            return known.id;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        plan.alarms.push(Set {
            id,
            at,
            waker: waker.clone(),
        });
        // The ringer wakes at its next tick at most, a millisecond away: it is roused only
        // for an alarm due before it plans to wake (rarely: a call's deadline is milliseconds).
        let sooner = plan.wake.is_none_or(|wake| at < wake);
        drop(plan);
        if sooner {
            self.rouse();
        }
        id
    }

    fn unset(&self, id: u64) {
        self.lock().alarms.retain(|set| set.id != id);
    }
}

/// A future ready at a moment, woken by the alarms' ringing thread (see the module doc).
#[derive(Debug)]
#[must_use = "an alarm does nothing unless awaited"]
pub(crate) struct Alarm<'a> {
    alarms: &'a Alarms,
    at: Instant,
    /// The alarm set for this future, once polled before its moment.
    id: Option<u64>,
}

impl Future for Alarm<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            if let Some(id) = self.id.take() {
                self.alarms.unset(id);
            }
            return Poll::Ready(());
        }
        self.id = Some(self.alarms.set(self.id, self.at, cx.waker()));
        Poll::Pending
    }
}

impl Drop for Alarm<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.alarms.unset(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn the_epoch_ticker_rings_an_alarm_at_its_moment_and_not_before() {
        let runtime = crate::wasm::WasmRuntime::new(1 << 20).unwrap();
        for after in [0, 1, 3, 7] {
            let at = Instant::now() + Duration::from_millis(after);
            runtime.alarm(at).await;
            assert!(Instant::now() >= at, "{after} ms");
        }
        // Every alarm rung is forgotten.
        assert_eq!(runtime.alarms().earliest(), None);
    }

    #[test]
    fn an_alarm_dropped_before_its_moment_is_unset() {
        let alarms = Alarms::default();
        let at = Instant::now() + Duration::from_secs(60);
        let mut alarm = Box::pin(alarms.at(at));
        let waker = Waker::noop();
        assert!(alarm
            .as_mut()
            .poll(&mut Context::from_waker(waker))
            .is_pending());
        // Polled again: still one alarm.
        assert!(alarm
            .as_mut()
            .poll(&mut Context::from_waker(waker))
            .is_pending());
        assert_eq!(alarms.lock().alarms.len(), 1);
        assert_eq!(alarms.earliest(), Some(at));
        drop(alarm);
        assert_eq!(alarms.earliest(), None);
    }

    #[test]
    fn the_ringer_plans_to_wake_at_its_tick_or_the_earliest_alarm_if_sooner() {
        let alarms = Alarms::default();
        let now = Instant::now();
        let tick = now + Duration::from_millis(1);
        assert_eq!(alarms.plan_wake(tick), tick);
        let mut later = Box::pin(alarms.at(now + Duration::from_secs(60)));
        let _ = later.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert_eq!(alarms.plan_wake(tick), tick);
        let soon = now + Duration::from_micros(300);
        let mut sooner = Box::pin(alarms.at(soon));
        let _ = sooner
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert_eq!(alarms.plan_wake(tick), soon);
    }

    #[test]
    fn ringing_wakes_only_the_alarms_due() {
        let alarms = Alarms::default();
        let now = Instant::now();
        let (soon, later) = (
            now + Duration::from_millis(1),
            now + Duration::from_secs(60),
        );
        let mut first = std::pin::pin!(alarms.at(soon));
        let mut second = std::pin::pin!(alarms.at(later));
        let waker = Waker::noop();
        let _ = first.as_mut().poll(&mut Context::from_waker(waker));
        let _ = second.as_mut().poll(&mut Context::from_waker(waker));
        alarms.ring(soon);
        assert_eq!(alarms.earliest(), Some(later));
    }
}
