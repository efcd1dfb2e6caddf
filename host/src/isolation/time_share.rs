//! A policy version's share of the policy threads' time (`[engine.isolation]
//! busy_per_second_ms`): its calls may keep those threads busy at most so many milliseconds per
//! second, averaged over [`WINDOW`], so that a slow or spinning policy cannot take the machine
//! from the requests and built-in decisions however many callers ask it.
//!
//! A generic cell rate algorithm over busy time: each call, once it has ended, moves the
//! version's theoretical busy-until forward by its time divided by the share; a call may start
//! while busy-until lies at most [`WINDOW`] ahead. (Rate-limiter crates charge a cost known
//! before the work; a call's cost is known only after it.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The span a share is averaged over: how far ahead of the clock a version's busy-until may
/// run before its next call waits.
pub(super) const WINDOW: Duration = Duration::from_millis(100);

/// One version's account of the time its calls took.
#[derive(Debug)]
pub(super) struct TimeShare {
    /// Milliseconds of busy time allowed per second (not 0).
    per_second_ms: u64,
    /// The origin of `busy_until`.
    base: Instant,
    /// The theoretical busy-until, in nanoseconds since `base`.
    busy_until: AtomicU64,
}

impl TimeShare {
    /// A share of `per_second_ms` milliseconds per second; `None` for 0 (no limit).
    pub(super) fn new(per_second_ms: u64) -> Option<Self> {
        (per_second_ms > 0).then(|| TimeShare {
            per_second_ms,
            base: Instant::now(),
            busy_until: AtomicU64::new(0),
        })
    }

    /// The allowance, in milliseconds per second.
    pub(super) fn per_second_ms(&self) -> u64 {
        self.per_second_ms
    }

    /// The earliest moment, `now` or later, at which a call may start.
    pub(super) fn starts_at(&self, now: Instant) -> Instant {
        let until = self.base + Duration::from_nanos(self.busy_until.load(Ordering::Acquire));
        until
            .checked_sub(WINDOW)
            .map_or(now, |earliest| earliest.max(now))
    }

    /// Counts a call that kept a thread busy for `busy`, ending at `now`.
    pub(super) fn charge(&self, busy: Duration, now: Instant) {
        let cost = busy.as_nanos().saturating_mul(1000) / u128::from(self.per_second_ms);
        let cost = u64::try_from(cost).unwrap_or(u64::MAX);
        let now =
            u64::try_from(now.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX);
        // A version idle for a while starts again from now: unused time is not saved up.
        let _ = self
            .busy_until
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |until| {
                Some(until.max(now).saturating_add(cost))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn no_allowance_is_no_limit() {
        assert!(TimeShare::new(0).is_none());
    }

    #[test]
    fn calls_start_at_once_while_the_window_holds_their_time() {
        // 250 ms per second: 100 ms of wall time buys 25 ms of calls.
        let share = TimeShare::new(250).unwrap();
        let now = share.base + Duration::from_secs(1);
        for _ in 0..25 {
            assert_eq!(share.starts_at(now), now);
            share.charge(MS, now);
        }
        // The window is exactly full: one more may start, and once it has been charged the
        // next waits for the time its share buys back.
        assert_eq!(share.starts_at(now), now);
        share.charge(MS, now);
        assert_eq!(share.starts_at(now), now + 4 * MS);
    }

    #[test]
    fn a_long_call_makes_the_next_wait_for_its_share() {
        let share = TimeShare::new(250).unwrap();
        let now = share.base + Duration::from_secs(1);
        share.charge(10 * MS, now);
        // 10 ms at a quarter of a thread is 40 ms of wall time: inside the window.
        assert_eq!(share.starts_at(now), now);
        share.charge(30 * MS, now);
        // 160 ms of wall time owed, of which the window forgives 100.
        assert_eq!(share.starts_at(now), now + 60 * MS);
        assert_eq!(share.starts_at(now + 60 * MS), now + 60 * MS);
    }

    #[test]
    fn idle_time_is_not_saved_up() {
        let share = TimeShare::new(500).unwrap();
        let start = share.base + Duration::from_secs(1);
        share.charge(MS, start);
        // A minute later the account starts from that moment, not from a minute of credit.
        let later = start + Duration::from_secs(60);
        share.charge(60 * MS, later);
        assert_eq!(share.starts_at(later), later + 20 * MS);
    }

    #[test]
    fn more_than_one_core_may_be_allowed() {
        // 2 000 ms per second: two threads' worth.
        let share = TimeShare::new(2000).unwrap();
        let now = share.base + Duration::from_secs(1);
        share.charge(200 * MS, now);
        assert_eq!(share.starts_at(now), now);
        share.charge(2 * MS, now);
        assert_eq!(share.starts_at(now), now + MS);
    }
}
