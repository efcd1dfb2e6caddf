//! The OpenTelemetry names of the library's metrics: each `metrics` facade name
//! (`rebound_decisions_total`, Prometheus style) has a dotted name, a UCUM unit and, for a
//! histogram, its bucket boundaries (gRFC A96's for retries and hedges, A66's latency buckets
//! for delays); each label becomes a `rebound.` attribute. A name not in the table (an
//! application's own metric through the same recorder) keeps its name and labels.

use crate::telemetry;

/// One metric's name, unit and buckets in OpenTelemetry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct OtelName {
    pub name: &'static str,
    pub unit: &'static str,
    pub boundaries: Option<&'static [f64]>,
}

/// gRFC A96's boundaries for counts of retries and hedges per call.
const COUNT_BOUNDARIES: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0];

/// gRFC A66's latency boundaries, in seconds (A96 names them for the retry delay).
const LATENCY_BOUNDARIES: &[f64] = &[
    0.0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
    0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16,
    0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
];

/// The facade names and what they are called in OpenTelemetry.
const NAMES: &[(&str, OtelName)] = &[
    (
        telemetry::DECISIONS_TOTAL,
        counter("rebound.decisions", "{decision}"),
    ),
    (
        telemetry::REQUESTS_TOTAL,
        counter("rebound.requests", "{request}"),
    ),
    (
        telemetry::HEDGES_TOTAL,
        counter("rebound.hedges", "{hedge}"),
    ),
    (
        telemetry::RETRIES_THROTTLED_TOTAL,
        counter("rebound.retries.throttled", "{request}"),
    ),
    (
        telemetry::TELEMETRY_DROPPED_TOTAL,
        counter("rebound.telemetry.dropped", "{item}"),
    ),
    (
        "rebound_decision_log_dropped_total",
        counter("rebound.decision_log.dropped", "{line}"),
    ),
    (
        telemetry::REQUEST_RETRIES,
        histogram("rebound.request.retries", "{retry}", COUNT_BOUNDARIES),
    ),
    (
        telemetry::REQUEST_HEDGES,
        histogram("rebound.request.hedges", "{hedge}", COUNT_BOUNDARIES),
    ),
    (
        telemetry::REQUEST_RETRY_DELAY,
        histogram("rebound.request.retry_delay", "s", LATENCY_BOUNDARIES),
    ),
];

const fn counter(name: &'static str, unit: &'static str) -> OtelName {
    OtelName {
        name,
        unit,
        boundaries: None,
    }
}

const fn histogram(name: &'static str, unit: &'static str, boundaries: &'static [f64]) -> OtelName {
    OtelName {
        name,
        unit,
        boundaries: Some(boundaries),
    }
}

/// The OpenTelemetry name of the facade's metric `facade`, if it is one of the library's.
pub(super) fn otel_name(facade: &str) -> Option<OtelName> {
    NAMES
        .iter()
        .find(|(name, _)| *name == facade)
        .map(|(_, otel)| *otel)
}

/// The attribute a label of one of the library's metrics becomes: `rebound.` and the label,
/// but `rebound.policy.version` for `version`.
pub(super) fn attribute(label: &str) -> String {
    match label {
        "version" => "rebound.policy.version".to_owned(),
        label => format!("rebound.{label}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/observability.md "OpenTelemetry names": every name is under `rebound.` and
    /// unique, every histogram has increasing boundaries.
    #[test]
    fn every_metric_has_one_dotted_name_and_increasing_buckets() {
        for (facade, otel) in NAMES {
            assert!(otel.name.starts_with("rebound."), "{facade}");
            assert_eq!(NAMES.iter().filter(|(_, o)| o.name == otel.name).count(), 1);
            if let Some(b) = otel.boundaries {
                assert!(b.windows(2).all(|w| w[0] < w[1]), "{facade}");
            }
        }
        assert_eq!(
            otel_name("rebound_request_retries").unwrap().unit,
            "{retry}"
        );
        assert_eq!(otel_name("an_application_metric"), None);
        assert_eq!(attribute("version"), "rebound.policy.version");
        assert_eq!(attribute("outcome"), "rebound.outcome");
    }
}
