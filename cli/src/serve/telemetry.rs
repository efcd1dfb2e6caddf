//! Whether and how `serve` exports spans and metrics over OTLP: the configuration's
//! `[telemetry]` table, or, without one, the standard variables (an
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, or its per-signal form, turns the export on with the
//! defaults); `OTEL_SDK_DISABLED=true` turns it off.

use rebound::config::RegistryConfig;
use rebound::otlp::OtlpConfig;

/// The variables whose presence turns the export on without a `[telemetry]` table.
const ENDPOINT_VARIABLES: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// The export `config` and the variables `lookup` gives ask for, if any.
pub fn wanted(
    config: &RegistryConfig,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<OtlpConfig> {
    if lookup("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    match &config.telemetry {
        Some(telemetry) => Some(telemetry.clone()),
        None => ENDPOINT_VARIABLES
            .iter()
            .any(|name| lookup(name).is_some_and(|v| !v.trim().is_empty()))
            .then(OtlpConfig::default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(telemetry: Option<OtlpConfig>) -> RegistryConfig {
        let mut config = RegistryConfig::parse(
            "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\n",
            std::path::Path::new("rebound.toml"),
            std::path::Path::new("."),
        )
        .unwrap();
        config.telemetry = telemetry;
        config
    }

    /// docs/observability.md "OpenTelemetry": the table turns the export on, else an endpoint
    /// variable does; `OTEL_SDK_DISABLED=true` (the OpenTelemetry SDK configuration's
    /// variable) turns it off either way.
    #[test]
    fn the_table_or_an_endpoint_variable_turns_the_export_on() {
        let none = |_: &str| None;
        assert_eq!(wanted(&config(None), none), None);
        let endpoint = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| "http://c:4318".to_owned())
        };
        assert_eq!(wanted(&config(None), endpoint), Some(OtlpConfig::default()));
        let mut table = OtlpConfig::default();
        table.metrics_interval_ms = 5;
        assert_eq!(
            wanted(&config(Some(table.clone())), none),
            Some(table.clone())
        );
        let disabled = |name: &str| (name == "OTEL_SDK_DISABLED").then(|| "true".to_owned());
        assert_eq!(wanted(&config(Some(table)), disabled), None);
    }
}
