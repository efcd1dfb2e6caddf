//! What a sweep measured: one sample per run (a cell, a policy, a seed) and, per cell and
//! policy, the statistics its map, its report and its assertions read — the probability of not
//! recovering with its Wilson score interval, and the median recovery time.

use serde::Serialize;

use super::recovery::{faults_end_s, recovered_after_s};
use super::results::Run;
use super::scenario::Scenario;

/// One run's measures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Seconds from the end of the faults to recovery, if it recovered within the stated time.
    pub recovered_after_s: Option<f64>,
    /// Successes per second from the end of the faults to the end of the arrivals.
    pub goodput_after_faults: f64,
    /// Successes per second while the faults lasted (from the first's start to the last's
    /// end).
    pub goodput_during_faults: f64,
    /// Requests cancelled by the policy or the guard.
    pub cancelled: u64,
    /// Attempts that reached a node per request offered.
    pub load_amplification: f64,
    /// Attempts abandoned by the client while their node served them.
    pub abandoned: u64,
    /// Attempts simulated (first attempts, retries and hedged copies).
    pub attempts: u64,
}

/// Successes per second in the bars from `from_s` to `until_s`.
fn goodput(run: &Run, scenario: &Scenario, from_s: f64, until_s: f64) -> f64 {
    let first = (from_s / scenario.bucket_s).ceil() as usize;
    let until = ((until_s / scenario.bucket_s).floor() as usize).min(run.buckets.len());
    let bars = run.buckets.get(first..until).unwrap_or_default();
    let succeeded: u64 = bars.iter().map(|b| b.ended.succeeded).sum();
    succeeded as f64 / (bars.len().max(1) as f64 * scenario.bucket_s)
}

impl Sample {
    /// The measures of `run`, a run of `scenario`.
    pub fn of(run: &Run, scenario: &Scenario) -> Self {
        let end_s = faults_end_s(scenario);
        let start_s = (scenario.faults.iter())
            .map(|f| f.window().from_s)
            .fold(end_s, f64::min);
        Sample {
            recovered_after_s: recovered_after_s(run, scenario),
            goodput_after_faults: goodput(run, scenario, end_s, scenario.duration_s),
            goodput_during_faults: goodput(run, scenario, start_s, end_s),
            cancelled: run.outcomes.cancelled,
            load_amplification: run.cluster_attempts as f64 / run.requests.max(1) as f64,
            abandoned: run.abandoned,
            attempts: run.attempts,
        }
    }
}

/// A proportion's Wilson score interval at 95 % confidence: `successes` of `n`.
pub fn wilson(successes: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    const Z: f64 = 1.959_963_984_540_054;
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// One policy's statistics over a cell's seeds.
#[derive(Debug, Clone, Serialize)]
pub struct CellStats {
    /// The policy.
    pub policy: String,
    /// Runs (seeds).
    pub seeds: u64,
    /// Runs that did not recover within the stated time.
    pub not_recovered: u64,
    /// Their share.
    pub p_no_recovery: f64,
    /// The share's 95 % Wilson score interval.
    pub p_no_recovery_low: f64,
    /// Its upper end.
    pub p_no_recovery_high: f64,
    /// The median seconds to recover, a run that did not recover counting as never (`None`
    /// when half or more did not).
    pub median_recovery_s: Option<f64>,
    /// Mean successes per second after the faults.
    pub goodput_after_faults: f64,
    /// Mean successes per second during the faults.
    pub goodput_during_faults: f64,
    /// Mean requests cancelled per run.
    pub cancelled: f64,
    /// Mean attempts that reached a node per request.
    pub load_amplification: f64,
    /// Mean attempts abandoned while their node served them, per run.
    pub abandoned: f64,
}

impl CellStats {
    /// The statistics of `policy`'s `samples`.
    pub fn of(policy: &str, samples: &[Sample]) -> Self {
        let n = samples.len() as u64;
        let mut times: Vec<f64> = (samples.iter())
            .map(|s| s.recovered_after_s.unwrap_or(f64::INFINITY))
            .collect();
        times.sort_by(f64::total_cmp);
        let not_recovered = times.iter().filter(|t| t.is_infinite()).count() as u64;
        let (low, high) = wilson(not_recovered, n);
        let mean = |f: fn(&Sample) -> f64| samples.iter().map(f).sum::<f64>() / n.max(1) as f64;
        let median = times.get(times.len().saturating_sub(1) / 2).copied();
        CellStats {
            policy: policy.to_owned(),
            seeds: n,
            not_recovered,
            p_no_recovery: not_recovered as f64 / n.max(1) as f64,
            p_no_recovery_low: low,
            p_no_recovery_high: high,
            median_recovery_s: median.filter(|m| m.is_finite()),
            goodput_after_faults: mean(|s| s.goodput_after_faults),
            goodput_during_faults: mean(|s| s.goodput_during_faults),
            cancelled: mean(|s| s.cancelled as f64),
            load_amplification: mean(|s| s.load_amplification),
            abandoned: mean(|s| s.abandoned as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/simulate.md "Sweeps": the interval is Wilson's score interval at 95 % (values
    /// from Newcombe 1998, table I: 0 of 10, 1 of 29, 81 of 263).
    #[test]
    fn the_interval_is_wilson_s_score_interval() {
        let close = |(a, b): (f64, f64), (x, y): (f64, f64)| {
            assert!((a - x).abs() < 5e-4 && (b - y).abs() < 5e-4, "{a} {b}")
        };
        close(wilson(0, 10), (0.0, 0.2775));
        close(wilson(1, 29), (0.0061, 0.1718));
        close(wilson(81, 263), (0.2553, 0.3662));
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    /// docs/simulate.md "Sweeps": a run that did not recover counts as never in the median.
    #[test]
    fn the_median_counts_a_run_that_did_not_recover_as_never() {
        let sample = |after| Sample {
            recovered_after_s: after,
            ..Sample::default()
        };
        let stats = CellStats::of("p", &[sample(Some(3.0)), sample(None), sample(Some(1.0))]);
        assert_eq!(
            (stats.not_recovered, stats.median_recovery_s),
            (1, Some(3.0))
        );
        let stats = CellStats::of("p", &[sample(Some(3.0)), sample(None)]);
        assert_eq!(stats.median_recovery_s, Some(3.0));
        let stats = CellStats::of("p", &[sample(None), sample(None), sample(Some(1.0))]);
        assert_eq!(stats.median_recovery_s, None);
    }
}
