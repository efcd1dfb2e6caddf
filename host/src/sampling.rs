//! Sampling a share of decisions (shadow trials, the decision log).

/// Whether this decision is in a sample of `rate` (1.0 and above: all; 0.0, below or NaN: none).
pub(crate) fn sampled(rate: f64) -> bool {
    rate >= 1.0 || (rate > 0.0 && fastrand::f64() < rate)
}
