//! Timing shared by the bench binaries.

use std::time::{Duration, Instant};

/// Median over `rounds` of the mean time per call of `f` over `iters` calls, after `iters`
/// warm-up calls.
pub fn measure(rounds: usize, iters: u32, mut f: impl FnMut()) -> Duration {
    for _ in 0..iters {
        f();
    }
    let mut samples: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            start.elapsed() / iters
        })
        .collect();
    samples.sort();
    samples[rounds / 2]
}
