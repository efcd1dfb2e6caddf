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
