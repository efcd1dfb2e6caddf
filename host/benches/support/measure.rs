//! Timing shared by the bench binaries.

use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Median over `rounds` of the mean time per call of `f` over `iters` calls, after `iters`
/// warm-up calls.
#[allow(dead_code)] // each bench binary uses one of the two
pub(crate) fn measure(rounds: usize, iters: u32, mut f: impl FnMut()) -> Duration {
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

/// Medians over `rounds` of the mean time per call of each of `fs` over `iters` calls, the
/// functions taking turns round by round (after one warm-up round each), so that a slow
/// spell of a noisy machine falls on all of them alike and their ratios stay meaningful.
#[allow(dead_code)] // each bench binary uses one of the two
pub(crate) fn measure_interleaved(
    rounds: usize,
    iters: u32,
    fs: &mut [&mut dyn FnMut()],
) -> Vec<Duration> {
    for f in fs.iter_mut() {
        for _ in 0..iters {
            f();
        }
    }
    let mut samples = vec![Vec::with_capacity(rounds); fs.len()];
    for _ in 0..rounds {
        for (f, samples) in fs.iter_mut().zip(&mut samples) {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            samples.push(start.elapsed() / iters);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort();
            s[rounds / 2]
        })
        .collect()
}

/// Mean time per call of `f` on each of `threads` threads running it `iters` times at once.
#[allow(dead_code)] // the benches with rows of two threads
pub(crate) fn contended(threads: usize, iters: u32, f: impl Fn() + Sync) -> Duration {
    let start = Barrier::new(threads);
    let took: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    let began = Instant::now();
                    for _ in 0..iters {
                        f();
                    }
                    began.elapsed() / iters
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    took.iter().sum::<Duration>() / threads as u32
}
