//! Property tests of the invariants the orchestrator must keep whatever the strategy answers.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rebound::backoff::{controlled_backoff, BackoffCalculator, ExponentialBackoff};
use rebound::DecisionContext;
use rebound::{
    Decision, NodeChoice, Orchestrator, ReasonKind, Request, RequestType, RetryAction, RetryReason,
    SyncStrategy,
};

/// A strategy that answers whatever the property test chose.
#[derive(Debug)]
struct Scripted(RetryAction);
impl rebound::Strategy for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
}

impl SyncStrategy for Scripted {
    fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        self.0
    }
}

fn any_reason() -> impl Strategy<Value = RetryReason> {
    prop::sample::select(
        ReasonKind::ALL
            .iter()
            .filter_map(|k| RetryReason::simple(*k))
            .collect::<Vec<_>>(),
    )
}

fn any_action() -> impl Strategy<Value = RetryAction> {
    prop_oneof![
        Just(RetryAction::NoRetry),
        Just(RetryAction::Ignore),
        Just(RetryAction::Rethrow),
        (0u64..5_000, any::<bool>()).prop_map(|(ms, next)| RetryAction::RetryAfter {
            delay: Duration::from_millis(ms),
            node: if next {
                NodeChoice::Next
            } else {
                NodeChoice::Same
            },
            consistency: None,
            attempt_timeout: None,
        }),
    ]
}

proptest! {
    /// No unsafe non-idempotent retry ever: whatever a (non-exempt) strategy answers, a
    /// non-idempotent request is retried only for a reason that allows it (reference 001
    /// "Network Time"), and never for a never-retried reason.
    #[test]
    fn no_unsafe_non_idempotent_retry(
        reason in any_reason(), action in any_action(), idempotent in any::<bool>(),
        attempts in 0u32..12, elapsed in 0u64..3_000, timeout in 1u64..3_000,
    ) {
        let orchestrator = Orchestrator::new(Arc::new(Scripted(action)));
        let mut req = common::request(RequestType::Upsert, timeout, Instant::now())
            .with_idempotent(idempotent).with_retry_attempts(attempts);
        req.mark_dispatched("n1");
        let decision = common::decide_at(&orchestrator, &mut req, &reason, elapsed);
        if matches!(decision, Decision::Retry(_)) {
            prop_assert!(idempotent || reason.allows_non_idempotent_retry());
            prop_assert!(!reason.never_retry());
        }
    }

    /// A capped delay never passes the deadline (reference 001 "Capping the Retry Duration"):
    /// a retry is scheduled strictly before it; a timeout waits exactly the time left.
    #[test]
    fn capped_delay_never_passes_deadline(
        reason in any_reason(), action in any_action(), attempts in 0u32..12,
        elapsed in 0u64..6_000, timeout in 1u64..3_000,
    ) {
        let orchestrator = Orchestrator::new(Arc::new(Scripted(action)));
        let start = Instant::now();
        let mut req = common::request(RequestType::Get, timeout, start).with_retry_attempts(attempts);
        let now = start + Duration::from_millis(elapsed);
        let remaining = req.remaining_at(now);
        match common::decide_at(&orchestrator, &mut req, &reason, elapsed) {
            Decision::Retry(plan) => prop_assert!(plan.delay < remaining),
            Decision::Timeout { after, error } => {
                prop_assert_eq!(after, remaining);
                prop_assert!(error.is_timeout());
                // The request ends at its deadline, or now if that has already passed.
                prop_assert_eq!(error.context().timings.total_micros, elapsed.max(timeout) * 1000);
            }
            _ => {}
        }
    }

    /// Backoffs are bounded: exponential within [min, max] and monotone without jitter;
    /// controlled within [1 ms, 1 s] and monotone.
    #[test]
    fn backoffs_bounded_and_monotone(
        min in 1u64..1_000, span in 0u64..10_000, factor in 1.0f64..10.0, attempt in 0u32..200,
    ) {
        let b = ExponentialBackoff::new(Duration::from_millis(min), Duration::from_millis(min + span), factor).unwrap();
        let d = b.backoff(attempt);
        prop_assert!(d >= b.min() && d <= b.max());
        prop_assert!(b.backoff(attempt + 1) >= d);
        let c = controlled_backoff(attempt);
        prop_assert!(c >= Duration::from_millis(1) && c <= Duration::from_secs(1));
        prop_assert!(controlled_backoff(attempt + 1) >= c);
    }

    /// Reference 001 "Best Effort": the delay is `min × factor^attempt` clamped to
    /// `[min, max]`. A whole factor is computed in integers; it gives the delays of the
    /// floating-point formula.
    #[test]
    fn whole_factor_backoff_is_the_formula(
        min_us in 1u64..2_000_000, span_us in 0u64..100_000_000, factor in 1u32..12,
        attempt in 0u32..80,
    ) {
        let (min, max) = (Duration::from_micros(min_us), Duration::from_micros(min_us + span_us));
        let b = ExponentialBackoff::new(min, max, f64::from(factor)).unwrap();
        let secs = min.as_secs_f64() * f64::from(factor).powi(attempt as i32);
        let formula = if secs >= max.as_secs_f64() {
            max
        } else {
            Duration::from_secs_f64(secs).clamp(min, max)
        };
        prop_assert_eq!(b.nominal(attempt), formula);
    }

    /// Reason names parse back to the same reason, whatever alias is used.
    #[test]
    fn reason_names_round_trip(reason in any_reason()) {
        prop_assert_eq!(reason.name().parse::<RetryReason>().unwrap(), reason.clone());
        for alias in reason.kind().aliases() {
            prop_assert_eq!(alias.parse::<RetryReason>().unwrap(), reason.clone());
        }
    }
}
