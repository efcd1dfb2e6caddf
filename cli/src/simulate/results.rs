//! What a run of a scenario measured: how requests ended, per bar of the chart and overall,
//! and their latencies. Apart from the engine that fills it, so that the chart and the report
//! read results without the simulation's machinery.

use std::collections::BTreeMap;

/// How requests ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Completed (a success, or a Cassandra IGNORE).
    pub succeeded: u64,
    /// Ended before the deadline by the policy or the guard (RequestCanceled, a terminal
    /// error, rethrow).
    pub cancelled: u64,
    /// Timed out after being dispatched, not idempotent: the outcome is unknown.
    pub ambiguous_timeouts: u64,
    /// Timed out, idempotent or never dispatched.
    pub unambiguous_timeouts: u64,
}

impl Outcomes {
    /// Counts one request ended with `error` (`None`: succeeded).
    pub(super) fn count(&mut self, error: Option<&str>) {
        match error {
            None => self.succeeded += 1,
            Some("AmbiguousTimeout") => self.ambiguous_timeouts += 1,
            Some("UnambiguousTimeout") => self.unambiguous_timeouts += 1,
            Some(_) => self.cancelled += 1,
        }
    }
}

/// What happened during one bar of the chart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Requests that arrived.
    pub arrivals: u64,
    /// Attempts started (first attempts and retries).
    pub attempts: u64,
    /// Attempts that reached a node.
    pub cluster_attempts: u64,
    /// Attempts the client stopped waiting for (cut by their attempt timeout or the deadline)
    /// while their node served them: wasted work.
    pub abandoned: u64,
    /// Requests that ended, by outcome.
    pub ended: Outcomes,
}

/// One policy's run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The policy.
    pub policy: String,
    /// Requests.
    pub requests: u64,
    /// How they ended.
    pub outcomes: Outcomes,
    /// End-to-end latency of the requests that succeeded, in microseconds, sorted.
    pub latencies_us: Vec<u64>,
    /// Attempts started.
    pub attempts: u64,
    /// Attempts that reached a node.
    pub cluster_attempts: u64,
    /// Attempts the client abandoned while their node served them.
    pub abandoned: u64,
    /// The errors requests ended with, by name.
    pub errors: BTreeMap<String, u64>,
    /// The timeline, one bucket per `bucket_s`.
    pub buckets: Vec<Bucket>,
    /// The end-to-end latencies of the requests that succeeded in each bucket, in
    /// microseconds, unsorted.
    pub bucket_latencies_us: Vec<Vec<u64>>,
}

impl Run {
    /// A run of `policy` over `requests` requests, nothing measured yet.
    pub(super) fn new(policy: &str, requests: u64) -> Self {
        Run {
            policy: policy.to_owned(),
            requests,
            outcomes: Outcomes::default(),
            latencies_us: Vec::new(),
            attempts: 0,
            cluster_attempts: 0,
            abandoned: 0,
            errors: BTreeMap::new(),
            buckets: Vec::new(),
            bucket_latencies_us: Vec::new(),
        }
    }

    /// The 99th percentile latency, in milliseconds, of the requests that succeeded in each
    /// bucket (`None` where none did).
    pub fn bucket_p99_ms(&self) -> Vec<Option<f64>> {
        (self.bucket_latencies_us.iter())
            .map(|latencies| {
                let mut sorted = latencies.clone();
                sorted.sort_unstable();
                super::percentile_ms(&sorted, 0.99)
            })
            .collect()
    }
}
