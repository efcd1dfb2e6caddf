//! Spec: backoff (reference 001 "Controlled Backoff for Always Retry", "Best Effort").

use std::time::Duration;

use rebound::backoff::{
    controlled_backoff, BackoffCalculator, BackoffConfigError, ExponentialBackoff,
};

/// Reference 001 "Controlled Backoff for Always Retry": the switch table.
#[test]
fn controlled_backoff_table() {
    let want = [1, 10, 50, 100, 500, 1000, 1000];
    for (attempt, ms) in want.iter().enumerate() {
        assert_eq!(
            controlled_backoff(attempt as u32),
            Duration::from_millis(*ms),
            "attempt {attempt}"
        );
    }
    assert_eq!(controlled_backoff(u32::MAX), Duration::from_millis(1000));
}

/// Reference 001 "Best Effort": min 1 ms, max 500 ms, factor 2: `min × 2^attempt` clamped.
#[test]
fn exponential_default_schedule() {
    let b = ExponentialBackoff::default();
    let got: Vec<u64> = (0..12).map(|a| b.backoff(a).as_millis() as u64).collect();
    assert_eq!(got, [1, 2, 4, 8, 16, 32, 64, 128, 256, 500, 500, 500]);
    assert_eq!(b.backoff(u32::MAX), Duration::from_millis(500));
}

/// The calculator is configurable.
#[test]
fn exponential_configurable() {
    let b =
        ExponentialBackoff::new(Duration::from_millis(10), Duration::from_secs(1), 3.0).unwrap();
    let got: Vec<u64> = (0..6).map(|a| b.backoff(a).as_millis() as u64).collect();
    assert_eq!(got, [10, 30, 90, 270, 810, 1000]);
}

/// Zero or impossible configuration gets a typed error naming what is wrong.
#[test]
fn exponential_bad_configuration_is_a_typed_error() {
    let ms = Duration::from_millis;
    assert_eq!(
        ExponentialBackoff::new(ms(0), ms(5), 2.0).unwrap_err(),
        BackoffConfigError::ZeroMin
    );
    assert!(matches!(
        ExponentialBackoff::new(ms(5), ms(1), 2.0).unwrap_err(),
        BackoffConfigError::MaxBelowMin { .. }
    ));
    for factor in [0.5, f64::NAN, f64::INFINITY, -2.0] {
        assert!(matches!(
            ExponentialBackoff::new(ms(1), ms(5), factor).unwrap_err(),
            BackoffConfigError::BadFactor(_)
        ));
    }
    assert!(matches!(
        ExponentialBackoff::default().with_jitter(1.5).unwrap_err(),
        BackoffConfigError::BadJitter(_)
    ));
    let err: serde_json::Error =
        serde_json::from_str::<ExponentialBackoff>(r#"{"min_ms":0}"#).unwrap_err();
    assert!(
        err.to_string().contains("min must be greater than zero"),
        "{err}"
    );
    let err = serde_json::from_str::<ExponentialBackoff>(r#"{"min_ms":1,"maxms":3}"#).unwrap_err();
    assert!(err.to_string().contains("maxms"), "{err}");
}

/// Jitter keeps each delay within `[nominal × (1 − jitter), nominal]` and within `[min, max]`.
#[test]
fn jitter_stays_in_bounds() {
    let b = ExponentialBackoff::default().with_jitter(0.5).unwrap();
    for attempt in 0..20 {
        let nominal = b.nominal(attempt);
        for _ in 0..200 {
            let d = b.backoff(attempt);
            assert!(
                d <= nominal && d >= nominal.mul_f64(0.5).max(b.min()),
                "attempt {attempt}: {d:?}"
            );
        }
    }
}

/// The lenient form used for policies' host calls never fails on bad input.
#[test]
fn lenient_exponential_sanitises() {
    use rebound::backoff::lenient_exponential_ms;
    assert_eq!(lenient_exponential_ms(3, 1, 500, 2.0), 8);
    assert_eq!(lenient_exponential_ms(3, 0, 0, f64::NAN), 1);
    assert_eq!(lenient_exponential_ms(40, 10, 5, 2.0), 10);
}

/// The token buckets behind a policy's `retry-budget` import: a bucket starts full, refills
/// at its rate, never exceeds its burst.
#[test]
fn retry_budget_token_bucket() {
    use rebound::TokenBuckets;
    let buckets = TokenBuckets::new();
    let t0 = std::time::Instant::now();
    let grants = (0..5)
        .filter(|_| buckets.try_acquire_at("kv", 10, 3, t0))
        .count();
    assert_eq!(grants, 3, "burst of 3");
    assert!(
        !buckets.try_acquire_at("kv", 10, 3, t0 + Duration::from_millis(50)),
        "half a token"
    );
    assert!(
        buckets.try_acquire_at("kv", 10, 3, t0 + Duration::from_millis(100)),
        "one token after 100 ms"
    );
    let later = t0 + Duration::from_secs(60);
    assert_eq!(
        (0..10)
            .filter(|_| buckets.try_acquire_at("kv", 10, 3, later))
            .count(),
        3,
        "capped at burst"
    );
    assert!(
        buckets.try_acquire_at("other", 1, 1, t0),
        "buckets are independent"
    );
    assert!(
        !buckets.try_acquire_at("zero", 100, 0, later),
        "burst 0 never grants"
    );
}
