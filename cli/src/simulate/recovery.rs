//! Whether a run recovered from its faults, and when: the one operational definition a sweep's
//! map, its assertions and the tuning share (docs/simulate.md "Recovery"). After the last fault
//! ends, the run has recovered at the first bar from which, for `hold_s` seconds, the requests
//! that succeeded number at least `goodput_share` of those that arrived; it recovered within
//! the stated time when that bar starts no later than `within_s` after the last fault ends.

use super::results::Run;
use super::scenario::Scenario;

/// When the last fault of `scenario` ends, in seconds (0 without faults).
pub fn faults_end_s(scenario: &Scenario) -> f64 {
    (scenario.faults.iter())
        .map(|f| f.window().until_s)
        .fold(0.0, f64::max)
}

/// Seconds from the end of the last fault to the start of the first window that holds the
/// recovery condition, if one starts within the stated time (and ends before the arrivals do).
pub fn recovered_after_s(run: &Run, scenario: &Scenario) -> Option<f64> {
    let recovery = &scenario.recovery;
    let bucket_s = scenario.bucket_s;
    let end_s = faults_end_s(scenario);
    let hold = ((recovery.hold_s / bucket_s).ceil() as usize).max(1);
    // Windows end by the end of the arrivals: after it, nothing arrives to compare with.
    let arrivals_end = ((scenario.duration_s / bucket_s).floor() as usize).min(run.buckets.len());
    let first = (end_s / bucket_s).ceil() as usize;
    let within_s = recovery.within_s.unwrap_or(f64::INFINITY);
    (first..arrivals_end.saturating_sub(hold) + 1)
        .take_while(|b| *b as f64 * bucket_s - end_s <= within_s)
        .find(|b| {
            let window = &run.buckets[*b..*b + hold];
            let arrived: u64 = window.iter().map(|w| w.arrivals).sum();
            let succeeded: u64 = window.iter().map(|w| w.ended.succeeded).sum();
            arrived > 0 && succeeded as f64 >= recovery.goodput_share * arrived as f64
        })
        .map(|b| (b as f64 * bucket_s - end_s).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::results::Bucket;

    fn scenario(within_s: Option<f64>) -> Scenario {
        let text = "duration_s = 20\n[compare]\nconfig = \"x.toml\"\npolicies = [\"p\"]\n\
            [workload]\nrate_per_s = 10\n[[workload.mix]]\ntype = \"get\"\nweight = 1\n\
            [recovery]\nhold_s = 3\n\
            [[fault]]\nkind = \"capacity\"\ncut = 0.5\nfrom_s = 2\nuntil_s = 5\n";
        let mut scenario: Scenario = toml::from_str(text).unwrap();
        scenario.recovery.within_s = within_s;
        scenario
    }

    /// A run whose bars each had 10 arrivals and `succeeded[i]` successes.
    fn run(succeeded: &[u64]) -> Run {
        let mut run = Run::new("p", 0);
        run.buckets = (succeeded.iter())
            .map(|s| {
                let mut bucket = Bucket {
                    arrivals: 10,
                    ..Bucket::default()
                };
                bucket.ended.succeeded = *s;
                bucket
            })
            .collect();
        run
    }

    /// docs/simulate.md "Recovery": the first window after the last fault in which successes
    /// are at least 95 % of the arrivals for `hold_s`, counted from the fault's end.
    #[test]
    fn recovery_is_the_first_window_after_the_faults_that_holds_its_goodput() {
        let mut bars = vec![10; 20];
        // Failing until 9 s, bar 9 at 9.5 of 10: windows from 9 s hold (29 of 30 ≥ 28.5).
        for bar in &mut bars[5..9] {
            *bar = 2;
        }
        bars[9] = 9;
        assert_eq!(recovered_after_s(&run(&bars), &scenario(None)), Some(4.0));
        // A window of 10, 10, 8 (28 of 30) does not hold: one bar later.
        bars[11] = 8;
        assert_eq!(recovered_after_s(&run(&bars), &scenario(None)), Some(7.0));
        // Allowed 6 s: not recovered within it.
        assert_eq!(recovered_after_s(&run(&bars), &scenario(Some(6.0))), None);
    }

    /// docs/simulate.md "Recovery": a run still failing when the arrivals end has not
    /// recovered, whatever its last bars hold.
    #[test]
    fn a_run_failing_until_the_arrivals_end_has_not_recovered() {
        let mut bars = vec![2; 20];
        bars[18] = 10;
        bars[19] = 10;
        assert_eq!(recovered_after_s(&run(&bars), &scenario(None)), None);
        assert_eq!(
            recovered_after_s(&run(&[10; 20]), &scenario(None)),
            Some(0.0)
        );
    }
}
