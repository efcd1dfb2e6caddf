//! `loom` models of the budget's atomic protocol: every interleaving of two threads, and every
//! value loom's memory model lets a read return, for the three places where the module doc
//! says threads rely on each other's order (docs/decisions.md "Retry budget across cores"):
//! the window shared out when a period begins, a withdrawal that lands after the next period
//! was counted, and two withdrawals in an overdrawn period. In each, the retries granted never
//! exceed what the window holds.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p rebound-core --no-default-features --lib --release
//! loom_models` (the test command does).

use std::time::{Duration, Instant};

use loom::sync::Arc;
use loom::thread;

use super::{BudgetConfig, TrafficBudget};

/// At 50 % a retry costs two requests' deposits. One slot period is one second (`ttl` of ten
/// seconds over ten slots); no floor, so only requests pay.
fn half_of_requests() -> TrafficBudget {
    TrafficBudget::new(BudgetConfig {
        percent: 50.0,
        min_per_second: 0,
        ttl_ms: 10_000,
    })
    .expect("a valid budget")
}

/// The moment `seconds` after `start`: in slot period `seconds` rounded down.
fn at(start: Instant, seconds: f64) -> Instant {
    start + Duration::from_secs_f64(seconds)
}

/// Runs `model` over every interleaving with at most three preemptions (loom's usual bound:
/// the orders that break such protocols need one or two).
fn check(model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(model);
}

/// Two threads asking for a retry at once, at `moments`: how many were granted.
fn two_at_once(budget: &Arc<TrafficBudget>, moments: [Instant; 2]) -> usize {
    let threads: Vec<_> = moments
        .into_iter()
        .map(|moment| {
            let budget = Arc::clone(budget);
            thread::spawn(move || budget.try_withdraw_at(moment))
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|granted| *granted)
        .count()
}

/// Two requests in period 0 pay for one retry. Two threads ask for it in period 1 at once: the
/// window is counted once and shared out between the two stripes (half each); each thread
/// takes its own stripe's half and then the other's. At most one retry is granted (both are
/// refused when each took its own half first: never more generous than the window).
#[test]
fn a_period_s_window_shared_out_is_granted_once_at_most() {
    check(|| {
        let start = Instant::now();
        let budget = Arc::new(half_of_requests());
        budget.deposit_at(start);
        budget.deposit_at(start);
        let granted = two_at_once(&budget, [at(start, 1.5), at(start, 1.5)]);
        assert!(
            granted <= 1,
            "{granted} retries paid by one retry's deposits"
        );
    });
}

/// Two requests in period 0 pay for one retry. One thread asks in period 0 while another asks
/// in period 1 and so counts the window that period 0 ends: if the first's withdrawal lands
/// after that count, it sees the new period and gives back. At most one retry is granted
/// (both may be refused: never more generous than the window).
#[test]
fn a_withdrawal_landing_after_the_next_period_was_counted_is_given_back() {
    check(|| {
        let start = Instant::now();
        let budget = Arc::new(half_of_requests());
        budget.deposit_at(start);
        budget.deposit_at(start);
        let granted = two_at_once(&budget, [at(start, 0.5), at(start, 1.5)]);
        assert!(
            granted <= 1,
            "{granted} retries paid by one retry's deposits"
        );
    });
}

/// An overdrawn window: a retry in period 1 was paid by period 0's requests, which are
/// forgotten in period 10 while the retry is not, so the window before period 10 holds one
/// retry less than nothing. Four requests of period 10 bring it back to one retry. Two threads
/// on different stripes each withdraw and then read the other's stripe: at most one is
/// granted.
#[test]
fn two_withdrawals_in_an_overdrawn_window_never_both_pass() {
    check(|| {
        let start = Instant::now();
        let budget = Arc::new(half_of_requests());
        budget.deposit_at(start);
        budget.deposit_at(start);
        assert!(budget.try_withdraw_at(at(start, 1.5)));
        for _ in 0..4 {
            budget.deposit_at(at(start, 10.5));
        }
        let granted = two_at_once(&budget, [at(start, 10.5), at(start, 10.5)]);
        assert!(granted <= 1, "{granted} retries where the window holds one");
    });
}
