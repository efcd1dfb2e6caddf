//! A policy's health: calls answered and failed by kind, the last failure, and the quarantine
//! that a run of consecutive failures starts. Counters only: the deciding path writes nothing
//! shared while the policy is healthy.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::policy_label::PolicyLabel;
use super::settings::{FailSafe, PolicyStats, QuarantineConfig};
use crate::action::PolicyFailureKind;
use crate::log_rate_limit::LogRateLimit;
use crate::reason::RetryReason;
use crate::request::Request;

const FAILURE_KINDS: [PolicyFailureKind; 9] = [
    PolicyFailureKind::Trap,
    PolicyFailureKind::Panic,
    PolicyFailureKind::Timeout,
    PolicyFailureKind::FuelExhausted,
    PolicyFailureKind::MemoryLimitExceeded,
    PolicyFailureKind::StackOverflow,
    PolicyFailureKind::InvalidAnswer,
    PolicyFailureKind::Quarantined,
    PolicyFailureKind::Overloaded,
];

/// The health counters and quarantine state of one policy.
pub(super) struct Health {
    label: PolicyLabel,
    quarantine: QuarantineConfig,
    fail_safe: FailSafe,
    base: Instant,
    /// Nanoseconds after `base` until which the policy is quarantined; 0 when it is not.
    quarantined_until: AtomicU64,
    consecutive_failures: AtomicU32,
    decisions: AtomicU64,
    failures: [AtomicU64; FAILURE_KINDS.len()],
    quarantines: AtomicU64,
    last_failure: Mutex<Option<String>>,
    /// At most one "policy call failed" line a second: a policy failing on every decision
    /// would otherwise write a line per decision. The lines left out are counted in the next
    /// one (`suppressed`); every failure is still counted in the status.
    failure_lines: LogRateLimit,
}

impl Health {
    pub(super) fn new(
        label: PolicyLabel,
        quarantine: QuarantineConfig,
        fail_safe: FailSafe,
    ) -> Self {
        Health {
            label,
            quarantine,
            fail_safe,
            base: Instant::now(),
            quarantined_until: AtomicU64::new(0),
            consecutive_failures: AtomicU32::new(0),
            decisions: AtomicU64::new(0),
            failures: Default::default(),
            quarantines: AtomicU64::new(0),
            last_failure: Mutex::new(None),
            failure_lines: LogRateLimit::new(1),
        }
    }

    fn now_nanos(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Whether the policy is quarantined now; a skipped call is counted as such.
    pub(super) fn skips_call(&self) -> bool {
        let until = self.quarantined_until.load(Ordering::Relaxed);
        if until != 0 && self.now_nanos() < until {
            self.record(PolicyFailureKind::Quarantined);
            return true;
        }
        false
    }

    /// A call was not made for `kind` (`overloaded`): counted.
    #[cfg(feature = "registry")]
    pub(super) fn skipped(&self, kind: PolicyFailureKind) {
        self.record(kind);
    }

    /// Calls that ran past their deadline or out of fuel, so far.
    #[cfg(feature = "registry")]
    pub(super) fn overruns(&self) -> u64 {
        [PolicyFailureKind::Timeout, PolicyFailureKind::FuelExhausted]
            .iter()
            .filter_map(|kind| FAILURE_KINDS.iter().position(|k| k == kind))
            .map(|index| self.failures[index].load(Ordering::Relaxed))
            .sum()
    }

    fn record(&self, kind: PolicyFailureKind) {
        let index = FAILURE_KINDS.iter().position(|k| *k == kind).unwrap_or(0);
        self.failures[index].fetch_add(1, Ordering::Relaxed);
    }

    /// The policy answered: a quarantine whose probe call succeeded is lifted.
    pub(super) fn on_success(&self) {
        self.decisions.fetch_add(1, Ordering::Relaxed);
        // Load first: the common healthy case then writes nothing shared.
        if self.consecutive_failures.load(Ordering::Relaxed) > 0
            && self.consecutive_failures.swap(0, Ordering::Relaxed) > 0
            && self.quarantined_until.swap(0, Ordering::Relaxed) != 0
        {
            tracing::info!(
                policy = &*self.label.name,
                version = &*self.label.version,
                "policy recovered: quarantine lifted"
            );
        }
    }

    /// A call failed with `kind` (`detail` says how): counted, logged, and the policy
    /// quarantined once the consecutive failures reach the threshold.
    pub(super) fn on_failure(
        &self,
        kind: PolicyFailureKind,
        detail: &str,
        request: &Request,
        reason: &RetryReason,
    ) {
        self.record(kind);
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(format!("{kind}: {detail}"));
        let failures = self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(suppressed) = self.failure_lines.allow() {
            tracing::warn!(policy = &*self.label.name, version = &*self.label.version,
                failure = %kind, detail = %detail, request_id = request.id(), reason = %reason,
                consecutive_failures = failures, suppressed,
                "policy call failed; fail-safe applied, instance discarded");
        }
        let threshold = self.quarantine.after_failures;
        if threshold > 0 && failures >= threshold {
            let cooldown = Duration::from_millis(self.quarantine.cooldown_ms);
            let until = self
                .now_nanos()
                .saturating_add(u64::try_from(cooldown.as_nanos()).unwrap_or(u64::MAX));
            self.quarantined_until.store(until, Ordering::Relaxed);
            self.quarantines.fetch_add(1, Ordering::Relaxed);
            tracing::error!(policy = &*self.label.name, version = &*self.label.version,
                consecutive_failures = failures, cooldown_ms = self.quarantine.cooldown_ms,
                fail_safe = ?self.fail_safe, "policy quarantined");
        }
    }

    /// A snapshot of the counters; the retry-budget fields are the strategy's to fill.
    pub(super) fn stats(&self) -> PolicyStats {
        PolicyStats {
            decisions: self.decisions.load(Ordering::Relaxed),
            failures: FAILURE_KINDS
                .iter()
                .zip(&self.failures)
                .map(|(k, n)| (k.name(), n.load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            quarantines: self.quarantines.load(Ordering::Relaxed),
            quarantined: self.quarantined_until.load(Ordering::Relaxed) != 0,
            consecutive_failures: self.consecutive_failures.load(Ordering::Relaxed),
            last_failure: self
                .last_failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            budget_buckets: 0,
            budget_refusals: 0,
        }
    }
}
