//! Client-side adaptive throttling (Google SRE book, "Handling Overload"): over a window (two
//! minutes by default) the client counts the attempts it made (`requests`) and those the
//! backend accepted (`accepts`), and refuses a retry with probability
//! `max(0, (requests − K × accepts) / (requests + 1))`. A retry it refuses counts as a request,
//! as the book counts a request rejected locally, so the refusals rise while the backend keeps
//! failing and fall as soon as it accepts again.
//!
//! The window is [`SLOTS`] slots; each slot's two counts are one atomic word each, tagged with
//! the slot's period, so counting is one compare-and-swap and no lock. The draws come from a
//! seeded sequence, so a run with the same seed, clock and outcomes refuses the same retries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// How many slots the window is divided into.
pub const SLOTS: usize = 12;

/// One window of counts: per slot, a period tag (high 32 bits) and a count (low 32 bits).
#[derive(Debug)]
struct Window {
    slots: [AtomicU64; SLOTS],
}

impl Window {
    fn new() -> Self {
        Window {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one in `period`'s slot. A slot holding an older period starts again; an event
    /// older than the slot's period (a clock read before another thread's) is dropped.
    fn add(&self, period: u32) {
        let slot = &self.slots[period as usize % SLOTS];
        let _ = slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let (tag, count) = ((word >> 32) as u32, word as u32);
            if tag == period {
                Some(u64::from(period) << 32 | u64::from(count.saturating_add(1)))
            } else if (period.wrapping_sub(tag) as i32) > 0 {
                Some(u64::from(period) << 32 | 1)
            } else {
                None
            }
        });
    }

    /// The counts of the window ending with `period`.
    fn sum(&self, period: u32) -> u64 {
        self.slots
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .filter(|word| (period.wrapping_sub((word >> 32) as u32) as usize) < SLOTS)
            .map(|word| u64::from(word as u32))
            .sum()
    }
}

/// An adaptive throttle's parameters (`[throttles.NAME] kind = "adaptive"`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct AdaptiveConfig {
    /// `K`: how many requests per accepted one are let through before refusing (the book's 2).
    pub k: f64,
    /// The window, in milliseconds (at least [`SLOTS`]).
    pub window_ms: u64,
    /// The seed of the draws; `None` for a seed of the process's own.
    pub seed: Option<u64>,
}

impl Default for AdaptiveConfig {
    /// The book's values: `K` = 2 over two minutes.
    fn default() -> Self {
        AdaptiveConfig {
            k: 2.0,
            window_ms: 120_000,
            seed: None,
        }
    }
}

/// One adaptive throttle.
#[derive(Debug)]
pub struct AdaptiveThrottle {
    k: f64,
    origin: Instant,
    /// A slot's length, in nanoseconds.
    slot_nanos: u64,
    requests: Window,
    accepts: Window,
    seed: u64,
    draws: AtomicU64,
}

impl AdaptiveThrottle {
    /// A throttle with empty counts whose window starts at `origin`. The caller has checked
    /// `config` (`ThrottleConfig::validate`).
    pub fn new(config: AdaptiveConfig, origin: Instant) -> Self {
        AdaptiveThrottle {
            k: config.k,
            origin,
            slot_nanos: (config.window_ms.saturating_mul(1_000_000) / SLOTS as u64).max(1),
            requests: Window::new(),
            accepts: Window::new(),
            seed: config.seed.unwrap_or_else(|| fastrand::u64(..)),
            draws: AtomicU64::new(0),
        }
    }

    fn period(&self, now: Instant) -> u32 {
        let since = now.saturating_duration_since(self.origin);
        let nanos = since
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(since.subsec_nanos()));
        (nanos / self.slot_nanos) as u32
    }

    /// An attempt ended at `now`; `accepted` when the backend took it (it succeeded, or failed
    /// for a reason that costs nothing).
    pub fn attempted_at(&self, accepted: bool, now: Instant) {
        let period = self.period(now);
        self.requests.add(period);
        if accepted {
            self.accepts.add(period);
        }
    }

    /// `max(0, (requests − K × accepts) / (requests + 1))` over the window at `now`.
    pub fn rejection_probability_at(&self, now: Instant) -> f64 {
        let period = self.period(now);
        let requests = self.requests.sum(period) as f64;
        let accepts = self.accepts.sum(period) as f64;
        ((requests - self.k * accepts) / (requests + 1.0)).max(0.0)
    }

    /// Whether a retry may go at `now`. One it refuses counts as a request.
    pub fn allows_retry_at(&self, now: Instant) -> bool {
        let refused = self.rejection_probability_at(now);
        if refused <= 0.0 || self.draw() >= refused {
            return true;
        }
        self.requests.add(self.period(now));
        false
    }

    /// The next draw of the seeded sequence, uniform in [0, 1) (splitmix64).
    fn draw(&self) -> f64 {
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        let mut z = self
            .seed
            .wrapping_add(n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn throttle(k: f64, seed: u64) -> (AdaptiveThrottle, Instant) {
        let origin = Instant::now();
        let config = AdaptiveConfig {
            k,
            window_ms: 120_000,
            seed: Some(seed),
        };
        (AdaptiveThrottle::new(config, origin), origin)
    }

    /// SRE "Handling Overload": while the backend accepts, nothing is refused; the
    /// probability is the formula's, read from the counts of the window.
    #[test]
    fn the_probability_is_the_formula_s() {
        let (t, at) = throttle(2.0, 1);
        for _ in 0..100 {
            t.attempted_at(true, at);
        }
        assert_eq!(t.rejection_probability_at(at), 0.0);
        assert!((0..1000).all(|_| t.allows_retry_at(at)));
        for _ in 0..400 {
            t.attempted_at(false, at);
        }
        // 500 requests, 100 accepts: (500 − 200) / 501.
        assert_eq!(t.rejection_probability_at(at), 300.0 / 501.0);
    }

    /// Counts leave the window: after a whole window without attempts nothing is refused.
    #[test]
    fn counts_older_than_the_window_are_forgotten() {
        let (t, at) = throttle(2.0, 1);
        for _ in 0..50 {
            t.attempted_at(false, at);
        }
        assert!(t.rejection_probability_at(at) > 0.9);
        let later = at + Duration::from_millis(120_000);
        assert_eq!(t.rejection_probability_at(later), 0.0);
        // Within the window, what is counted stays.
        let still = at + Duration::from_millis(100_000);
        assert!(t.rejection_probability_at(still) > 0.9);
    }

    /// The same seed, clock and outcomes refuse the same retries; another seed, others.
    #[test]
    fn the_same_seed_refuses_the_same_retries() {
        let run = |seed| {
            let (t, at) = throttle(1.5, seed);
            (0..2000)
                .map(|i| {
                    t.attempted_at(i % 3 == 0, at);
                    t.allows_retry_at(at)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// SRE "Handling Overload": over a long sequence the retries refused follow the
        /// formula. Against a model of the counts, the number refused stays within 5 standard
        /// deviations of the sum of the probabilities the formula gave at each draw.
        #[test]
        fn refusals_follow_the_formula(
            k in 1.0f64..3.0,
            accept_percent in 0u32..=100,
            seed in any::<u64>(),
        ) {
            let (t, at) = throttle(k, seed);
            let (mut requests, mut accepts) = (0.0f64, 0.0f64);
            let (mut expected, mut variance, mut refused) = (0.0, 0.0, 0u32);
            let mut outcomes = fastrand::Rng::with_seed(seed);
            for _ in 0..5000 {
                let accepted = outcomes.u32(0..100) < accept_percent;
                t.attempted_at(accepted, at);
                requests += 1.0;
                accepts += if accepted { 1.0 } else { 0.0 };
                let p = ((requests - k * accepts) / (requests + 1.0)).max(0.0);
                prop_assert!((t.rejection_probability_at(at) - p).abs() < 1e-9);
                expected += p;
                variance += p * (1.0 - p);
                if !t.allows_retry_at(at) {
                    refused += 1;
                    requests += 1.0;
                }
            }
            let bound = 5.0 * variance.sqrt() + 1.0;
            prop_assert!(
                (f64::from(refused) - expected).abs() <= bound,
                "refused {} against {:.1} ± {:.1}", refused, expected, bound
            );
        }
    }
}
