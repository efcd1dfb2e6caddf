//! The metrics the library records through the [`metrics`] facade (docs/observability.md): one
//! set of names and labels, the same whether an embedding application installs its own
//! recorder (Prometheus, OpenTelemetry, StatsD exporters of the `metrics` ecosystem) or
//! `rebound serve` exposes them on `/metrics`. Recording starts when the application calls
//! [`enable`] (after installing its recorder); until then it costs one atomic load, not the
//! label set the facade would build for every decision. Label values are bounded sets (a
//! reason's kind, never a free-form name), so the series stay few.
//!
//! [`attempt_span`] is the span of an attempt and its decision; the `otlp` feature exports
//! spans and metrics to an OpenTelemetry collector.

mod spans;

pub use spans::{attempt_span, record_failure};

use std::sync::atomic::{AtomicBool, Ordering};

use std::time::Duration;

use metrics::{SharedString, Unit};

#[cfg(feature = "registry")]
use crate::decision::Decision;
#[cfg(feature = "registry")]
use crate::outcome::RetryError;
#[cfg(feature = "registry")]
use crate::reason::RetryReason;
use crate::request_outcome::Outcome;

/// Decisions made by a policy registry. Labels: `policy`, `version`, `decision` (`retry`,
/// `timeout`, `cancel`, `ignore`, `already_done`; `rebound serve` adds `not_retried` and
/// `success` for responses its classifier settles), `reason` (the reason's name; `OTHER` for
/// a name this host does not know) and `cancel_reason` (`NO_MORE_RETRIES`, … for a
/// RequestCanceled; the error's name for any other ending; empty otherwise).
pub const DECISIONS_TOTAL: &str = "rebound_decisions_total";

/// Requests the executor (and the tower layer) ran to their end. Labels: `outcome`
/// (`success`, `failure`, `timeout`) and `attempts` (`1` … `9`, then `10+`).
pub const REQUESTS_TOTAL: &str = "rebound_requests_total";

/// Copies of hedged requests (docs/hedging.md), counted by the executor and by layers that
/// send copies themselves ([`record_hedges`]). Label `event`: `sent` (a copy after the first
/// was sent), `won` (a copy after the first gave the answer the request returned),
/// `cancelled` (a copy was dropped because another answered or a fatal failure ended the
/// request).
pub const HEDGES_TOTAL: &str = "rebound_hedges_total";

/// Retries one request needed, recorded as it ends when it needed any (gRFC A96's
/// `grpc.client.call.retries`: a request without retries records nothing). A histogram;
/// label `outcome` as in [`REQUESTS_TOTAL`]. The executor records it; `rebound serve` records
/// it from outcome reports.
pub const REQUEST_RETRIES: &str = "rebound_request_retries";

/// Copies of one hedged request sent after the first, recorded as it ends when it sent any
/// (gRFC A96's `grpc.client.call.hedges`). A histogram; label `outcome`.
pub const REQUEST_HEDGES: &str = "rebound_request_hedges";

/// Time one request spent with no attempt running (its retry delays), in seconds, recorded as
/// it ends when it needed retries (gRFC A96's `grpc.client.call.retry_delay`). A histogram;
/// label `outcome`.
pub const REQUEST_RETRY_DELAY: &str = "rebound_request_retry_delay_seconds";

/// Requests that ended because the retry throttle refused their retry (gRFC A6 "Retry
/// Throttling", `RETRY_THROTTLED`), counted by the executor. No labels.
pub const RETRIES_THROTTLED_TOTAL: &str = "rebound_retries_throttled_total";

/// Telemetry dropped before export because its queue was full (the collector slow or
/// unreachable). Label `signal`: `spans`.
pub const TELEMETRY_DROPPED_TOTAL: &str = "rebound_telemetry_dropped_total";

/// What happened to copies of a hedged request ([`HEDGES_TOTAL`]'s `event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HedgeEvent {
    /// A copy after the first was sent.
    Sent,
    /// A copy after the first gave the answer the request returned.
    Won,
    /// A copy was dropped because another answered or a fatal failure ended the request.
    Cancelled,
}

/// Decision-log lines dropped: the log's buffer was full (its writer could not keep up), or a
/// line was longer than a log file may be. No labels.
#[cfg(feature = "registry")]
pub const DECISION_LOG_DROPPED_TOTAL: &str = "rebound_decision_log_dropped_total";

/// Whether the library records its metrics ([`enable`]).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Starts recording the library's metrics into the installed `metrics` recorder, and
/// describes them to it (their help texts). Call it once, after installing the recorder.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
    describe();
}

/// Describes the metrics to the installed recorder (their help texts).
fn describe() {
    metrics::describe_counter!(
        DECISIONS_TOTAL,
        "Decisions made, by policy, version, decision, reason and cancel reason"
    );
    metrics::describe_counter!(
        REQUESTS_TOTAL,
        "Requests run to their end under the executor, by outcome and attempts made"
    );
    metrics::describe_counter!(
        HEDGES_TOTAL,
        "Copies of hedged requests sent, won and cancelled, by event"
    );
    metrics::describe_counter!(
        RETRIES_THROTTLED_TOTAL,
        "Requests ended because the retry throttle refused their retry"
    );
    metrics::describe_counter!(
        TELEMETRY_DROPPED_TOTAL,
        "Telemetry dropped before export because its queue was full, by signal"
    );
    metrics::describe_histogram!(
        REQUEST_RETRIES,
        Unit::Count,
        "Retries a request needed, for requests that needed any, by outcome"
    );
    metrics::describe_histogram!(
        REQUEST_HEDGES,
        Unit::Count,
        "Copies of a hedged request sent after the first, for requests that sent any, by outcome"
    );
    metrics::describe_histogram!(
        REQUEST_RETRY_DELAY,
        Unit::Seconds,
        "Time a request that needed retries spent with no attempt running, by outcome"
    );
    #[cfg(feature = "registry")]
    metrics::describe_counter!(
        DECISION_LOG_DROPPED_TOTAL,
        "Decision-log lines dropped because the log's buffer was full or a line was too long"
    );
}

/// The `cancel_reason` label of `decision`.
#[cfg(feature = "registry")]
fn cancel_reason_label(decision: &Decision) -> &'static str {
    match decision {
        Decision::Fail(RetryError::RequestCanceled { reason, .. }) => reason.name(),
        Decision::Fail(error) | Decision::Timeout { error, .. } => error.name(),
        Decision::Retry(_) | Decision::Ignore | Decision::AlreadyDone => "",
    }
}

/// Counts a decision for a failure of `reason`, made by the policy and version `labels`
/// names (asked for only when recording).
#[cfg(feature = "registry")]
pub(crate) fn record_decision(
    labels: impl FnOnce() -> [SharedString; 2],
    decision: &Decision,
    reason: &RetryReason,
) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let [policy, version] = labels();
    record_answer(
        policy,
        version,
        decision.name(),
        reason.kind().name(),
        cancel_reason_label(decision),
    );
}

/// Counts an answer `decision` of `policy` at `version` for a failure of `reason` (a reason's
/// name, empty for none), ended as `cancel_reason` (empty if it did not end) in
/// [`DECISIONS_TOTAL`]: for a caller that answers without the registry deciding (a
/// classifier's settled response).
pub fn record_answer(
    policy: SharedString,
    version: SharedString,
    decision: &'static str,
    reason: &'static str,
    cancel_reason: &'static str,
) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    metrics::counter!(
        DECISIONS_TOTAL,
        "policy" => policy,
        "version" => version,
        "decision" => decision,
        "reason" => reason,
        "cancel_reason" => cancel_reason,
    )
    .increment(1);
}

/// Counts `n` dropped decision-log lines.
#[cfg(feature = "registry")]
pub(crate) fn record_log_dropped(n: u64) {
    if ENABLED.load(Ordering::Relaxed) {
        metrics::counter!(DECISION_LOG_DROPPED_TOTAL).increment(n);
    }
}

/// What one request did besides its attempts, recorded as it ends.
#[cfg(feature = "executor")]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestTally {
    /// Copies of hedged attempts sent after each attempt's first.
    pub hedges: u32,
    /// Time slept between attempts.
    pub retry_delay: Duration,
    /// Whether the retry throttle ended it.
    pub throttled: bool,
}

/// The `outcome` label of `outcome`, and its attempts.
fn outcome_label(outcome: Outcome) -> (&'static str, u32) {
    match outcome {
        Outcome::Succeeded { attempts } => ("success", attempts),
        Outcome::Failed { attempts } => ("failure", attempts),
        Outcome::TimedOut { attempts } => ("timeout", attempts),
    }
}

/// Counts a request's end, with what it did besides its attempts.
#[cfg(feature = "executor")]
pub(crate) fn record_request_end(outcome: Outcome, tally: RequestTally) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    const ATTEMPTS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    let (label, attempts) = outcome_label(outcome);
    let attempts_label = ATTEMPTS.get(attempts as usize).copied().unwrap_or("10+");
    metrics::counter!(REQUESTS_TOTAL, "outcome" => label, "attempts" => attempts_label)
        .increment(1);
    record_retries(outcome, Some(tally.retry_delay));
    if tally.hedges > 0 {
        metrics::histogram!(REQUEST_HEDGES, "outcome" => label).record(f64::from(tally.hedges));
    }
    if tally.throttled {
        metrics::counter!(RETRIES_THROTTLED_TOTAL).increment(1);
    }
}

/// Records the retries of a request that ended as `outcome` in [`REQUEST_RETRIES`] and, when
/// the caller slept its delays, their total in [`REQUEST_RETRY_DELAY`] (when [`enable`]d and
/// it needed retries): for a caller that runs its own retries, as the tonic layer does, or is
/// told of requests' ends, as `rebound serve` is by outcome reports.
pub fn record_retries(outcome: Outcome, retry_delay: Option<Duration>) {
    let (label, attempts) = outcome_label(outcome);
    if attempts <= 1 || !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    metrics::histogram!(REQUEST_RETRIES, "outcome" => label).record(f64::from(attempts - 1));
    if let Some(delay) = retry_delay {
        metrics::histogram!(REQUEST_RETRY_DELAY, "outcome" => label).record(delay.as_secs_f64());
    }
}

/// Counts `n` items of `signal` dropped before export.
#[cfg(feature = "otlp")]
pub(crate) fn record_export_dropped(signal: &'static str, n: u64) {
    if ENABLED.load(Ordering::Relaxed) {
        metrics::counter!(TELEMETRY_DROPPED_TOTAL, "signal" => signal).increment(n);
    }
}

/// Counts `n` copies to which `event` happened, in [`HEDGES_TOTAL`] (when [`enable`]d): for a
/// layer that sends the copies of hedged requests itself.
pub fn record_hedges(event: HedgeEvent, n: u64) {
    if n > 0 && ENABLED.load(Ordering::Relaxed) {
        let event = match event {
            HedgeEvent::Sent => "sent",
            HedgeEvent::Won => "won",
            HedgeEvent::Cancelled => "cancelled",
        };
        metrics::counter!(HEDGES_TOTAL, "event" => event).increment(n);
    }
}
