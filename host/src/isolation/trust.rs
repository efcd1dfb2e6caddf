//! Whether a component version's calls may run on the deciding thread, skipping the isolation
//! threads' hand-off: a version is trusted until one of its calls runs past its deadline or out
//! of fuel, then distrusted — its calls isolated, under the per-policy limits — for a cooldown
//! that doubles with each offence (10 s, 20 s, … up to 640 s). An honest policy pays no
//! isolation tax; a spinning one holds deciding threads (its places, as many as it may hold of
//! the policy threads) for one call each per cooldown at most.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The first cooldown.
pub(super) const FIRST_COOLDOWN: Duration = Duration::from_secs(10);

/// Offences past which the cooldown stops doubling.
const MOST_DOUBLINGS: u32 = 6;

/// One version's trust.
#[derive(Debug)]
pub(super) struct Trust {
    base: Instant,
    /// Until when its calls are isolated, in nanoseconds since `base`; 0: trusted.
    distrusted_until: AtomicU64,
    offences: AtomicU32,
    /// Calls on deciding threads holding one of its places.
    placed: AtomicUsize,
}

/// A call on a deciding thread, admitted by [`Trust::enter`].
#[derive(Debug)]
pub(super) struct Entered<'a> {
    trust: &'a Trust,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.trust.placed.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Trust {
    pub(super) fn new() -> Self {
        Trust {
            base: Instant::now(),
            distrusted_until: AtomicU64::new(0),
            offences: AtomicU32::new(0),
            placed: AtomicUsize::new(0),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether a call asked at `now` may run on the deciding thread.
    pub(super) fn trusted(&self, now: Instant) -> bool {
        self.nanos(now) >= self.distrusted_until.load(Ordering::Relaxed)
    }

    /// A call on a deciding thread, if it may be made there: one of `places` is free. The
    /// place is held until the returned guard is dropped.
    pub(super) fn enter(&self, places: usize) -> Option<Entered<'_>> {
        if self.placed.fetch_add(1, Ordering::AcqRel) < places {
            return Some(Entered { trust: self });
        }
        self.placed.fetch_sub(1, Ordering::AcqRel);
        None
    }

    /// One of its calls overran, ending at `now`: its calls are isolated for the cooldown,
    /// which is returned.
    pub(super) fn distrust(&self, now: Instant) -> Duration {
        let offences = self.offences.fetch_add(1, Ordering::Relaxed);
        let cooldown = FIRST_COOLDOWN * (1 << offences.min(MOST_DOUBLINGS));
        self.distrusted_until
            .fetch_max(self.nanos(now + cooldown), Ordering::Relaxed);
        cooldown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/decisions.md "Isolation for the misbehaving": a version is trusted until a call
    /// overruns; then isolated for 10 s, after the next overrun for 20 s, doubling up to 640 s;
    /// trust returns when the cooldown ends.
    #[test]
    fn an_overrun_isolates_its_version_for_a_doubling_cooldown() {
        let trust = Trust::new();
        let mut now = Instant::now();
        assert!(trust.trusted(now));
        for offence in 0..9 {
            let cooldown = trust.distrust(now);
            assert_eq!(cooldown, FIRST_COOLDOWN * (1 << offence.min(6)));
            assert!(!trust.trusted(now + cooldown - Duration::from_millis(1)));
            now += cooldown;
            assert!(trust.trusted(now));
        }
    }

    /// A call takes a free place; another finds none until it is freed.
    #[test]
    fn a_call_on_a_deciding_thread_takes_a_place() {
        let trust = Trust::new();
        let first = trust.enter(1).expect("a free place");
        assert!(trust.enter(1).is_none());
        drop(first);
        assert!(trust.enter(1).is_some());
    }
}
