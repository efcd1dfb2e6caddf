//! The library's spans and metrics exported to an OpenTelemetry collector over OTLP, gRPC or
//! HTTP/protobuf (docs/observability.md "OpenTelemetry"). Nothing starts on its own: the
//! application calls [`OtlpExport::start`] (inside its tokio runtime), then installs
//! [`OtlpExport::layer`] in its `tracing` subscriber and [`OtlpExport::recorder`] as (or beside)
//! its `metrics` recorder, and calls [`telemetry::enable`](crate::telemetry::enable).
//!
//! Exporting never waits in a decision: an ended span goes into a bounded queue (dropped,
//! counted and logged when it is full) that a thread of the SDK's exports in batches, and
//! metrics are aggregated in memory and exported by another of its threads every interval. An
//! export the collector does not take is logged, at most once a second.

mod config;
mod logged;
mod names;
mod plain_http;
mod recorder;
mod span_queue;

pub use config::{OtlpConfig, OtlpProtocol};
pub use recorder::OtlpRecorder;

use std::collections::HashMap;
use std::sync::Arc;

use crate::field_error::FieldError;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{
    MetricExporter, SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::{Level, Metadata};
use tracing_subscriber::filter::FilterFn;
use tracing_subscriber::Layer;

use logged::Logged;
use plain_http::PlainHttp;
use span_queue::{BoundedProcessor, Releasing, SpanQueue};

/// How long one export may take when neither the configuration nor the variables say (the
/// OTLP exporter specification's default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an export could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The configuration (or an `OTEL_*` variable) is not usable.
    #[error("telemetry: {0}")]
    Config(FieldError),
    /// The gRPC export must start inside a tokio runtime (its channel runs there).
    #[error("telemetry: the OTLP gRPC export must start inside a tokio runtime")]
    NoRuntime,
    /// The SDK refused to build an exporter.
    #[error("telemetry: the OTLP exporter could not be built")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// A running OTLP export: its tracer and meter providers. When it, its layer and its recorder
/// are all dropped, what is pending is exported and the export stops;
/// [`shutdown`](Self::shutdown) does so at once, whatever still holds them.
#[derive(Debug)]
pub struct OtlpExport {
    protocol: OtlpProtocol,
    queue: Option<Arc<SpanQueue>>,
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

/// The library's spans are at `DEBUG` under the `rebound` target; events (log lines) are not
/// exported.
fn rebound_spans(metadata: &Metadata<'_>) -> bool {
    metadata.is_span()
        && metadata.target().starts_with("rebound")
        && *metadata.level() <= Level::DEBUG
}

impl OtlpExport {
    /// Starts exporting as `config` says, the standard `OTEL_*` variables filling in what it
    /// leaves unset (`start` reads them, as the OpenTelemetry SDK does).
    pub fn start(config: &OtlpConfig) -> Result<Self, OtlpError> {
        let protocol = config
            .resolved_protocol(|name| std::env::var(name).ok())
            .map_err(OtlpError::Config)?;
        if protocol == OtlpProtocol::Grpc && tokio::runtime::Handle::try_current().is_err() {
            return Err(OtlpError::NoRuntime);
        }
        config.check_endpoint().map_err(OtlpError::Config)?;
        let mut resource = Resource::builder();
        if let Some(name) = &config.service_name {
            resource = resource.with_service_name(name.clone());
        } else if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("rebound");
        }
        let resource = resource.build();
        let max_queued = config.max_queued_spans.max(1);
        let queue = config.traces.then(|| SpanQueue::new(max_queued));
        let tracer = match &queue {
            None => None,
            Some(queue) => {
                let exporter = Releasing {
                    inner: Logged::new("spans", span_exporter(config, protocol)?),
                    queue: Arc::clone(queue),
                };
                let batch = BatchConfigBuilder::default()
                    .with_max_queue_size(max_queued)
                    .build();
                let processor = BoundedProcessor {
                    inner: BatchSpanProcessor::builder(exporter)
                        .with_batch_config(batch)
                        .build(),
                    queue: Arc::clone(queue),
                };
                Some(
                    SdkTracerProvider::builder()
                        .with_span_processor(processor)
                        .with_resource(resource.clone())
                        .build(),
                )
            }
        };
        let meter = match config.metrics {
            false => None,
            true => {
                let exporter = Logged::new("metrics", metric_exporter(config, protocol)?);
                let reader = PeriodicReader::builder(exporter)
                    .with_interval(Duration::from_millis(config.metrics_interval_ms.max(1)))
                    .build();
                Some(
                    SdkMeterProvider::builder()
                        .with_reader(reader)
                        .with_resource(resource)
                        .build(),
                )
            }
        };
        Ok(OtlpExport {
            protocol,
            queue,
            tracer,
            meter,
        })
    }

    /// The protocol the export speaks.
    pub fn protocol(&self) -> OtlpProtocol {
        self.protocol
    }

    /// Spans dropped so far because the export queue was full.
    pub fn dropped_spans(&self) -> u64 {
        self.queue.as_ref().map_or(0, |queue| queue.dropped())
    }

    /// A `tracing` layer exporting the library's spans (the request, its attempts and their
    /// decisions, at `DEBUG` under the `rebound` target) whatever the subscriber's other
    /// filters; `None` when spans are not exported.
    pub fn layer<S>(&self) -> Option<impl Layer<S> + 'static>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let tracer = self.tracer.as_ref()?.tracer("rebound");
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(FilterFn::new(rebound_spans)),
        )
    }

    /// A `metrics` recorder exporting what is recorded through the facade under the
    /// library's OpenTelemetry names; `None` when metrics are not exported.
    pub fn recorder(&self) -> Option<OtlpRecorder> {
        let meter = self.meter.as_ref()?.meter("rebound");
        Some(OtlpRecorder::new(meter))
    }

    /// Exports what is pending, then stops.
    pub fn shutdown(self) {
        if let Some(tracer) = self.tracer {
            let _ = tracer.shutdown();
        }
        if let Some(meter) = self.meter {
            let _ = meter.shutdown();
        }
    }
}

/// The span exporter `config` asks for.
fn span_exporter(config: &OtlpConfig, protocol: OtlpProtocol) -> Result<SpanExporter, OtlpError> {
    Ok(match protocol {
        OtlpProtocol::Grpc => over_grpc(SpanExporter::builder().with_tonic(), config)?.build()?,
        OtlpProtocol::HttpProtobuf => {
            over_http(SpanExporter::builder().with_http(), config, "traces").build()?
        }
    })
}

/// The metric exporter `config` asks for.
fn metric_exporter(
    config: &OtlpConfig,
    protocol: OtlpProtocol,
) -> Result<MetricExporter, OtlpError> {
    Ok(match protocol {
        OtlpProtocol::Grpc => over_grpc(MetricExporter::builder().with_tonic(), config)?.build()?,
        OtlpProtocol::HttpProtobuf => {
            over_http(MetricExporter::builder().with_http(), config, "metrics").build()?
        }
    })
}

/// A gRPC exporter's builder with the configured endpoint, headers and timeout.
fn over_grpc<B: WithExportConfig + WithTonicConfig>(
    builder: B,
    config: &OtlpConfig,
) -> Result<B, OtlpError> {
    let builder = builder.with_metadata(metadata(config)?);
    let builder = match &config.endpoint {
        Some(endpoint) => builder.with_endpoint(endpoint.clone()),
        None => builder,
    };
    Ok(with_timeout(builder, config))
}

/// An HTTP/protobuf exporter's builder for `signal` (`traces`, `metrics`) with the plain-HTTP
/// client and the configured endpoint, headers and timeout.
fn over_http<B: WithExportConfig + WithHttpConfig>(
    builder: B,
    config: &OtlpConfig,
    signal: &str,
) -> B {
    let builder = builder
        .with_http_client(PlainHttp::new(http_timeout(config)))
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_headers(headers(config));
    let builder = match &config.endpoint {
        Some(endpoint) => builder.with_endpoint(signal_url(endpoint, signal)),
        None => builder,
    };
    with_timeout(builder, config)
}

/// A builder with the configured timeout.
fn with_timeout<B: WithExportConfig>(builder: B, config: &OtlpConfig) -> B {
    match config.timeout_ms {
        Some(ms) => builder.with_timeout(Duration::from_millis(ms)),
        None => builder,
    }
}

/// The plain-HTTP client's timeout: the configured one, else `OTEL_EXPORTER_OTLP_TIMEOUT`
/// (milliseconds), else the default.
fn http_timeout(config: &OtlpConfig) -> Duration {
    let variable = || {
        std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    config
        .timeout_ms
        .or_else(variable)
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
}

/// The OTLP/HTTP URL of `signal` under a base endpoint: the specification's rule for
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces`, `/v1/metrics` appended), which the SDK applies
/// to the variable but not to a configured endpoint.
fn signal_url(endpoint: &str, signal: &str) -> String {
    format!("{}/v1/{signal}", endpoint.trim_end_matches('/'))
}

/// The configured headers, for HTTP.
fn headers(config: &OtlpConfig) -> HashMap<String, String> {
    config
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// The configured headers as gRPC metadata; a name or value gRPC cannot carry is an error.
fn metadata(config: &OtlpConfig) -> Result<tonic::metadata::MetadataMap, OtlpError> {
    let mut map = http::HeaderMap::new();
    for (name, value) in &config.headers {
        let bad = || {
            OtlpError::Config(FieldError::new(
                format!("headers.{name}"),
                "not a valid header",
            ))
        };
        let header = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let value = http::HeaderValue::from_str(value).map_err(|_| bad())?;
        map.insert(header, value);
    }
    Ok(tonic::metadata::MetadataMap::from_headers(map))
}
