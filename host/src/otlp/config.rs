//! What an OTLP export is configured with: the `[telemetry]` table of a registry's
//! configuration, or a value the application builds. Whatever it leaves unset, the
//! OpenTelemetry SDK takes from the standard `OTEL_*` variables when the export starts
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT` and their per-signal forms, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`), then from the OTLP defaults.

use crate::field_error::FieldError;
use std::collections::BTreeMap;

use serde::Deserialize;

/// How the export reaches the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum OtlpProtocol {
    /// OTLP over gRPC (the collector's port 4317 by default).
    #[serde(rename = "grpc")]
    Grpc,
    /// OTLP over HTTP with protobuf bodies (port 4318 by default, paths `/v1/traces` and
    /// `/v1/metrics`).
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

impl OtlpProtocol {
    /// The protocol's name as `OTEL_EXPORTER_OTLP_PROTOCOL` writes it.
    pub const fn name(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
        }
    }
}

/// An OTLP export of the library's metrics and spans (`[telemetry]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct OtlpConfig {
    /// The collector's address: `http://host:4317` for gRPC, `http://host:4318` for
    /// HTTP/protobuf (the signal's path is added, as the OTLP specification says for
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`). Unset: the variables, then the protocol's default on
    /// localhost.
    pub endpoint: Option<String>,
    /// gRPC or HTTP/protobuf. Unset: `OTEL_EXPORTER_OTLP_PROTOCOL`, then HTTP/protobuf.
    pub protocol: Option<OtlpProtocol>,
    /// Headers sent with every export (an API key, a tenant), added to those of
    /// `OTEL_EXPORTER_OTLP_HEADERS`.
    pub headers: BTreeMap<String, String>,
    /// How long one export may take, in milliseconds. Unset: `OTEL_EXPORTER_OTLP_TIMEOUT`,
    /// then 10 s. 1 to 600 000.
    #[serde(deserialize_with = "crate::ranges::within_if_set::<_, _, 1, 600_000>")]
    pub timeout_ms: Option<u64>,
    /// How often metrics are exported, in milliseconds. Default: 60 000 (the SDK's); 1 to
    /// 86 400 000.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 86_400_000>")]
    pub metrics_interval_ms: u64,
    /// Spans held for export at most; a span ended while the queue is full is dropped and
    /// counted (the SDK logs the first drop and, at shutdown, how many). Default: 2048; 1 to
    /// 100 000.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 100_000>")]
    pub max_queued_spans: usize,
    /// The `service.name` resource attribute. Unset: `OTEL_SERVICE_NAME`, then `rebound`.
    pub service_name: Option<String>,
    /// Whether spans are exported.
    pub traces: bool,
    /// Whether metrics are exported.
    pub metrics: bool,
}

impl Default for OtlpConfig {
    fn default() -> Self {
        OtlpConfig {
            endpoint: None,
            protocol: None,
            headers: BTreeMap::new(),
            timeout_ms: None,
            metrics_interval_ms: 60_000,
            max_queued_spans: 2048,
            service_name: None,
            traces: true,
            metrics: true,
        }
    }
}

impl OtlpConfig {
    /// Whether the endpoint, if set, is one this build exports to: an `http://` address
    /// (plain text, to a collector on the host or beside it); if not, why.
    pub fn check_endpoint(&self) -> Result<(), FieldError> {
        match self.endpoint.as_deref() {
            Some(endpoint) if !endpoint.starts_with("http://") => Err(FieldError::new(
                "endpoint",
                format!("{endpoint:?}: expected an http:// address (this build exports in plain text, to a collector on the host or beside it)"),
            )),
            _ => Ok(()),
        }
    }

    /// The protocol: the configured one, else `OTEL_EXPORTER_OTLP_PROTOCOL` as `lookup`
    /// gives it (an application passes `|name| std::env::var(name).ok()`), else
    /// HTTP/protobuf, the OTLP specification's default. A protocol this host does not speak
    /// (`http/json`) is an error naming the variable.
    pub fn resolved_protocol(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<OtlpProtocol, FieldError> {
        if let Some(protocol) = self.protocol {
            return Ok(protocol);
        }
        const VARIABLE: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
        match lookup(VARIABLE).as_deref().map(str::trim) {
            None | Some("") => Ok(OtlpProtocol::HttpProtobuf),
            Some("grpc") => Ok(OtlpProtocol::Grpc),
            Some("http/protobuf") => Ok(OtlpProtocol::HttpProtobuf),
            Some(other) => Err(FieldError::new(
                VARIABLE,
                format!("{other:?}: expected \"grpc\" or \"http/protobuf\""),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OTLP exporter specification: the configured protocol first, then
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, then `http/protobuf`; other values are refused.
    #[test]
    fn the_protocol_is_the_configured_one_then_the_variable_then_http() {
        let config = OtlpConfig::default();
        assert_eq!(
            config.resolved_protocol(|_| None),
            Ok(OtlpProtocol::HttpProtobuf)
        );
        assert_eq!(
            config.resolved_protocol(|_| Some("grpc".into())),
            Ok(OtlpProtocol::Grpc)
        );
        let error = config
            .resolved_protocol(|_| Some("http/json".into()))
            .unwrap_err();
        assert_eq!(error.field, "OTEL_EXPORTER_OTLP_PROTOCOL", "{error}");
        let config = OtlpConfig {
            protocol: Some(OtlpProtocol::Grpc),
            ..OtlpConfig::default()
        };
        assert_eq!(
            config.resolved_protocol(|_| Some("http/protobuf".into())),
            Ok(OtlpProtocol::Grpc)
        );
    }

    /// `[telemetry]` as written: unknown fields are refused, the protocols have their OTLP
    /// names.
    #[cfg(feature = "registry")]
    #[test]
    fn the_table_reads_the_otlp_protocol_names_and_refuses_unknown_fields() {
        let config: OtlpConfig =
            toml::from_str("endpoint = \"http://collector:4317\"\nprotocol = \"grpc\"").unwrap();
        assert_eq!(config.protocol, Some(OtlpProtocol::Grpc));
        assert!(toml::from_str::<OtlpConfig>("endpont = \"x\"").is_err());
        assert!(toml::from_str::<OtlpConfig>("protocol = \"http/json\"").is_err());
    }
}
