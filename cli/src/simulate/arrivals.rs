//! The workload of a scenario as a list of arrivals: a Poisson process at the workload's rate,
//! each request picking its mix entry by weight and a key, all drawn from the scenario's seed so
//! that every policy meets the same requests at the same moments.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::scenario::Scenario;

/// A request of the workload.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// When it arrives, in microseconds from the start.
    pub t_us: u64,
    /// Its entry in the mix.
    pub mix: usize,
    /// Its document key.
    pub key: u64,
}

/// Draws the workload: Poisson arrivals over the scenario's duration, each of a mix entry
/// drawn by weight and a key drawn uniformly.
pub fn arrivals(scenario: &Scenario) -> Vec<Arrival> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(scenario.seed);
    let workload = &scenario.workload;
    let total_weight: f64 = workload.mix.iter().map(|m| m.weight).sum();
    let end_us = (scenario.duration_s * 1e6) as u64;
    let mean_gap_us = 1e6 / workload.rate_per_s;
    let mut arrivals = Vec::new();
    let mut t = 0.0;
    loop {
        t += exponential(&mut rng, mean_gap_us);
        if t >= end_us as f64 {
            return arrivals;
        }
        let mut pick = rng.random::<f64>() * total_weight;
        let mix = workload
            .mix
            .iter()
            .position(|m| {
                pick -= m.weight;
                pick < 0.0
            })
            .unwrap_or(workload.mix.len() - 1);
        arrivals.push(Arrival {
            t_us: t as u64,
            mix,
            key: rng.random_range(0..workload.keys),
        });
    }
}

/// An exponentially distributed draw with mean `mean`.
pub(super) fn exponential(rng: &mut Xoshiro256PlusPlus, mean: f64) -> f64 {
    -(1.0 - rng.random::<f64>()).ln() * mean
}
