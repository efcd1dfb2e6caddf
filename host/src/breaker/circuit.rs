//! One node's circuit breaker, [`CircuitBreaker`], and what it says to an attempt
//! ([`Admission`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::BreakerConfig;

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Attempts go; outcomes are counted.
    Closed,
    /// Attempts are refused until the sleep window has passed.
    Open,
    /// One attempt went as a canary; the others are refused until it reports.
    HalfOpen,
}

/// What a breaker said to one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Admission {
    /// The breaker is closed (or the node has none): the attempt goes and its outcome counts.
    Admitted,
    /// The attempt goes as the canary of a half-open breaker: its outcome closes or reopens
    /// it.
    Canary,
    /// The breaker is open: the attempt fails with `CIRCUIT_BREAKER_OPEN` before dispatch.
    Refused,
}

impl Admission {
    /// Whether the attempt may be sent.
    pub fn allows(self) -> bool {
        self != Admission::Refused
    }
}

/// The state word: the state in the low two bits, the nanoseconds since the breaker's origin
/// when it began above them.
const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;

fn state_word(state: u64, since: u64) -> u64 {
    (since << 2) | state
}

/// The window word: the window's number (the rolling windows since the origin, modulo 2³²)
/// in the high half, attempts and failures in 16 bits each.
fn window_word(window: u64, attempts: u64, failures: u64) -> u64 {
    ((window & 0xffff_ffff) << 32) | (attempts << 16) | failures
}

/// The most attempts a window counts; past it both counts are halved, keeping their ratio.
const MOST_COUNTED: u64 = 0xffff;

/// One node's circuit breaker, evaluated lazily at each admission and each outcome as Couchbase
/// core-io's `LazyCircuitBreaker` is: closed, it counts the attempts and the failures of a
/// rolling window and opens once the window holds at least `volume_threshold` attempts of which
/// at least `error_percentage` % failed; open, it refuses every attempt until `sleep_window`
/// has passed; then one attempt goes as a canary (half open): its success closes the breaker
/// with an empty window, its failure opens it for another sleep window. A canary that never
/// reports (dropped, or sent nowhere) stops holding the node after a sleep window, and the next
/// attempt goes as a new canary.
///
/// Two atomic words, no lock: the state with the moment it began, and the window's number with
/// its two counts. Every moment is passed in, so tests and simulations drive it on their own
/// clock.
#[derive(Debug)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    origin: Instant,
    /// The windows in nanoseconds, worked out once.
    rolling_nanos: u64,
    sleep_nanos: u64,
    state: AtomicU64,
    window: AtomicU64,
}

/// `duration` in nanoseconds, saturating (a day is the longest window a configuration gives).
fn nanos_of(duration: Duration) -> u64 {
    (duration.as_secs())
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(duration.subsec_nanos()))
}

impl CircuitBreaker {
    /// A closed breaker with an empty window, its clock starting at `origin`.
    pub fn new(config: BreakerConfig, origin: Instant) -> Self {
        CircuitBreaker {
            config,
            origin,
            rolling_nanos: nanos_of(config.rolling_window).max(1),
            sleep_nanos: nanos_of(config.sleep_window),
            state: AtomicU64::new(state_word(CLOSED, 0)),
            window: AtomicU64::new(window_word(0, 0, 0)),
        }
    }

    /// Its parameters.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    fn nanos(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.origin).as_nanos())
            .unwrap_or(u64::MAX >> 2)
    }

    /// Where it stands: an open breaker whose sleep window has passed still reads open until
    /// an attempt goes as its canary.
    pub fn state(&self) -> BreakerState {
        match self.state.load(Ordering::Acquire) & 3 {
            CLOSED => BreakerState::Closed,
            OPEN => BreakerState::Open,
            _ => BreakerState::HalfOpen,
        }
    }

    /// The attempts and failures its current window counts at `now`.
    pub fn window_at(&self, now: Instant) -> (u32, u32) {
        let word = self.window.load(Ordering::Acquire);
        if word >> 32 != self.window_number(self.nanos(now)) {
            return (0, 0);
        }
        (((word >> 16) & 0xffff) as u32, (word & 0xffff) as u32)
    }

    /// The number of the window the moment `at` (nanoseconds since the origin) falls in.
    fn window_number(&self, at: u64) -> u64 {
        (at / self.rolling_nanos) & 0xffff_ffff
    }

    /// Whether an attempt may go at `now` (see [`Admission`]).
    pub fn admit_at(&self, now: Instant) -> Admission {
        let sleep = self.sleep_nanos;
        loop {
            let word = self.state.load(Ordering::Acquire);
            let state = word & 3;
            if state == CLOSED {
                return Admission::Admitted;
            }
            let at = self.nanos(now);
            if at.saturating_sub(word >> 2) < sleep {
                return Admission::Refused;
            }
            // The sleep window has passed (or the canary went silent): this attempt is the
            // canary, and only one attempt wins the exchange.
            let canary = state_word(HALF_OPEN, at);
            if (self.state)
                .compare_exchange(word, canary, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                tracing::debug!("circuit breaker half open: a canary goes");
                return Admission::Canary;
            }
        }
    }

    /// An attempt admitted as `admission` ended at `now`, `failed` or not: a canary closes or
    /// reopens the breaker; any other attempt is counted in the window, and a failure may open
    /// a closed breaker. Returns the state it moved to, if it moved.
    pub fn record_at(
        &self,
        admission: Admission,
        failed: bool,
        now: Instant,
    ) -> Option<BreakerState> {
        let at = self.nanos(now);
        if admission == Admission::Canary {
            let word = self.state.load(Ordering::Acquire);
            if word & 3 == HALF_OPEN {
                let (to, state) = if failed {
                    (state_word(OPEN, at), BreakerState::Open)
                } else {
                    (state_word(CLOSED, at), BreakerState::Closed)
                };
                if (self.state)
                    .compare_exchange(word, to, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    if !failed {
                        let number = self.window_number(at);
                        self.window
                            .store(window_word(number, 0, 0), Ordering::Release);
                    }
                    return Some(state);
                }
            }
        }
        let (attempts, failures) = self.count(failed, at);
        if !failed || self.state.load(Ordering::Acquire) & 3 != CLOSED {
            return None;
        }
        let trips = attempts >= u64::from(self.config.volume_threshold)
            && failures * 100 >= u64::from(self.config.error_percentage) * attempts;
        if !trips {
            return None;
        }
        let closed = self.state.load(Ordering::Acquire);
        (closed & 3 == CLOSED
            && (self.state)
                .compare_exchange(
                    closed,
                    state_word(OPEN, at),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok())
        .then_some(BreakerState::Open)
    }

    /// Counts one attempt in the window of `at`; returns the window's counts after it.
    fn count(&self, failed: bool, at: u64) -> (u64, u64) {
        let number = self.window_number(at);
        let mut word = self.window.load(Ordering::Acquire);
        loop {
            let (mut attempts, mut failures) = if word >> 32 == number {
                ((word >> 16) & 0xffff, word & 0xffff)
            } else {
                (0, 0)
            };
            if attempts == MOST_COUNTED {
                attempts /= 2;
                failures /= 2;
            }
            attempts += 1;
            failures += u64::from(failed);
            let next = window_word(number, attempts, failures);
            match (self.window).compare_exchange_weak(
                word,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return (attempts, failures),
                Err(now_word) => word = now_word,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(start: Instant) -> CircuitBreaker {
        CircuitBreaker::new(BreakerConfig::default(), start)
    }

    fn fail(b: &CircuitBreaker, n: u32, at: Instant) -> Option<BreakerState> {
        (0..n).fold(None, |moved, _| {
            b.record_at(Admission::Admitted, true, at).or(moved)
        })
    }

    /// Couchbase core-io's defaults (docs/decisions.md "Breaker defaults"): 19 failures do not
    /// open it (below the volume threshold); the 20th does, at 100 % failed.
    #[test]
    fn it_opens_at_the_volume_threshold_and_error_percentage() {
        let t0 = Instant::now();
        let b = breaker(t0);
        assert_eq!(fail(&b, 19, t0), None);
        assert_eq!(b.admit_at(t0), Admission::Admitted);
        assert_eq!(fail(&b, 1, t0), Some(BreakerState::Open));
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.admit_at(t0), Admission::Refused);
    }

    /// Below the error percentage it stays closed however many attempts: 49 % failed of 100.
    #[test]
    fn a_window_below_the_error_percentage_stays_closed() {
        let t0 = Instant::now();
        let b = breaker(t0);
        for n in 0..100 {
            assert_eq!(b.record_at(Admission::Admitted, n >= 51, t0), None);
        }
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.window_at(t0), (100, 49));
        // The 50th failure of 101 attempts is 49.5 %: still closed; at 51 of 102, 50 %: open.
        assert_eq!(b.record_at(Admission::Admitted, true, t0), None);
        assert_eq!(
            b.record_at(Admission::Admitted, true, t0),
            Some(BreakerState::Open)
        );
    }

    /// The rolling window forgets: 19 failures, then a minute later 19 more, never open it.
    #[test]
    fn the_rolling_window_starts_afresh() {
        let t0 = Instant::now();
        let b = breaker(t0);
        assert_eq!(fail(&b, 19, t0), None);
        let later = t0 + Duration::from_secs(60);
        assert_eq!(b.window_at(later), (0, 0));
        assert_eq!(fail(&b, 19, later), None);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    /// Open → (sleep window) → half open with exactly one canary → closed on its success, with
    /// an empty window.
    #[test]
    fn a_canary_s_success_closes_it() {
        let t0 = Instant::now();
        let b = breaker(t0);
        fail(&b, 20, t0);
        let almost = t0 + Duration::from_millis(4_999);
        assert_eq!(
            b.admit_at(almost),
            Admission::Refused,
            "within the sleep window"
        );
        let after = t0 + Duration::from_secs(5) + Duration::from_nanos(1);
        assert_eq!(b.admit_at(after), Admission::Canary);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert_eq!(
            b.admit_at(after),
            Admission::Refused,
            "one canary at a time"
        );
        assert_eq!(
            b.record_at(Admission::Canary, false, after),
            Some(BreakerState::Closed)
        );
        assert_eq!(b.window_at(after), (0, 0));
        assert_eq!(b.admit_at(after), Admission::Admitted);
    }

    /// A canary's failure reopens it for a whole new sleep window.
    #[test]
    fn a_canary_s_failure_reopens_it() {
        let t0 = Instant::now();
        let b = breaker(t0);
        fail(&b, 20, t0);
        let t1 = t0 + Duration::from_secs(6);
        assert_eq!(b.admit_at(t1), Admission::Canary);
        assert_eq!(
            b.record_at(Admission::Canary, true, t1),
            Some(BreakerState::Open)
        );
        assert_eq!(b.admit_at(t1 + Duration::from_secs(4)), Admission::Refused);
        assert_eq!(b.admit_at(t1 + Duration::from_secs(6)), Admission::Canary);
    }

    /// A late answer of an attempt admitted before the breaker opened is counted, never taken
    /// for the canary's.
    #[test]
    fn only_the_canary_moves_a_half_open_breaker() {
        let t0 = Instant::now();
        let b = breaker(t0);
        fail(&b, 20, t0);
        let t1 = t0 + Duration::from_secs(6);
        assert_eq!(b.admit_at(t1), Admission::Canary);
        assert_eq!(b.record_at(Admission::Admitted, false, t1), None);
        assert_eq!(b.state(), BreakerState::HalfOpen);
    }

    /// A canary that never reports holds the node one sleep window at most.
    #[test]
    fn a_silent_canary_is_replaced_after_a_sleep_window() {
        let t0 = Instant::now();
        let b = breaker(t0);
        fail(&b, 20, t0);
        let t1 = t0 + Duration::from_secs(6);
        assert_eq!(b.admit_at(t1), Admission::Canary);
        assert_eq!(b.admit_at(t1 + Duration::from_secs(4)), Admission::Refused);
        assert_eq!(b.admit_at(t1 + Duration::from_secs(6)), Admission::Canary);
    }

    /// Saturated counts are halved, keeping the failure ratio.
    #[test]
    fn saturated_counts_keep_their_ratio() {
        let t0 = Instant::now();
        let config = BreakerConfig {
            error_percentage: 100,
            ..BreakerConfig::default()
        };
        let b = CircuitBreaker::new(config, t0);
        for n in 0..=MOST_COUNTED {
            b.record_at(Admission::Admitted, n % 2 == 0, t0);
        }
        let (attempts, failures) = b.window_at(t0);
        assert_eq!(u64::from(attempts), MOST_COUNTED / 2 + 1);
        assert!((f64::from(failures) / f64::from(attempts) - 0.5).abs() < 0.001);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Over any sequence of outcomes and admissions on one clock, a closed breaker
            /// opens only when its window reaches both thresholds, an open one admits nothing
            /// within its sleep window, and at most one canary is out at a time.
            #[test]
            fn transitions_follow_the_thresholds(
                steps in proptest::collection::vec((0u8..4, 0u64..3_000), 1..400)
            ) {
                let t0 = Instant::now();
                let config = BreakerConfig {
                    volume_threshold: 5,
                    error_percentage: 60,
                    ..BreakerConfig::default()
                };
                let b = CircuitBreaker::new(config, t0);
                let mut now = t0;
                let mut opened_at: Option<Instant> = None;
                let mut canaries = 0;
                for (kind, advance_ms) in steps {
                    now += Duration::from_millis(advance_ms);
                    match kind {
                        0 => match b.admit_at(now) {
                            Admission::Refused => {
                                let since = opened_at.expect("refused only once opened");
                                prop_assert!(b.state() != BreakerState::Closed);
                                prop_assert!(now - since < config.sleep_window);
                            }
                            Admission::Canary => {
                                canaries += 1;
                                prop_assert_eq!(b.state(), BreakerState::HalfOpen);
                                opened_at = Some(now);
                            }
                            Admission::Admitted => {
                                prop_assert_eq!(b.state(), BreakerState::Closed)
                            }
                        },
                        3 if canaries > 0 => {
                            canaries = 0;
                            let moved = b.record_at(Admission::Canary, advance_ms % 2 == 0, now);
                            if moved == Some(BreakerState::Open) {
                                opened_at = Some(now);
                            }
                        }
                        _ => {
                            let before = b.state();
                            let failed = kind == 1;
                            let moved = b.record_at(Admission::Admitted, failed, now);
                            if moved == Some(BreakerState::Open) {
                                let (attempts, failures) = b.window_at(now);
                                prop_assert_eq!(before, BreakerState::Closed);
                                prop_assert!(attempts >= 5 && failures * 100 >= 60 * attempts);
                                opened_at = Some(now);
                            } else {
                                prop_assert_eq!(moved, None);
                            }
                        }
                    }
                }
            }
        }
    }
}
