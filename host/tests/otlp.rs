//! The OTLP export (docs/observability.md "OpenTelemetry"), against receivers the test starts:
//! a gRPC collector (the OTLP `TraceService` and `MetricsService`) and an HTTP one (`POST
//! /v1/traces`, `/v1/metrics` with protobuf bodies), both decoding what they get. An executor
//! under a policy registry runs a request that fails twice, then one that fails once; the
//! receiver must get the attempts' spans with OpenTelemetry's semantic attributes and
//! Rebound's own, and the metrics under their OpenTelemetry names, units and values (gRFC A96's
//! histograms of retries and retry delay).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::{metric::Data, Metric};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use rebound::config::RegistryConfig;
use rebound::executor::{Executor, ExecutorListener, Failure};
use rebound::otlp::{OtlpConfig, OtlpExport, OtlpProtocol};
use rebound::registry::PolicyRegistry;
use rebound::{reasons, Outcome, Request, RequestType, RetryError, RetryReason};
use tracing_subscriber::layer::SubscriberExt;

/// What a receiver got.
#[derive(Debug, Default, Clone)]
struct Received {
    spans: Arc<Mutex<Vec<Span>>>,
    metrics: Arc<Mutex<Vec<Metric>>>,
}

impl Received {
    fn traces(&self, request: ExportTraceServiceRequest) {
        let spans = request.resource_spans.into_iter().flat_map(|r| {
            assert!(
                r.resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .any(|a| { a.key == "service.name" && text(&a.value) == Some("rebound-test") }),
                "the resource names the service"
            );
            r.scope_spans.into_iter().flat_map(|s| s.spans)
        });
        self.spans.lock().unwrap().extend(spans);
    }

    fn metrics(&self, request: ExportMetricsServiceRequest) {
        let metrics = request
            .resource_metrics
            .into_iter()
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics);
        self.metrics.lock().unwrap().extend(metrics);
    }
}

#[tonic::async_trait]
impl TraceService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        assert_eq!(
            request.metadata().get("x-tenant").unwrap(),
            "blue",
            "configured headers are sent"
        );
        self.traces(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.metrics(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// A gRPC collector on a free loopback port; its address.
async fn grpc_collector(received: Received) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(received.clone()))
            .add_service(MetricsServiceServer::new(received))
            .serve_with_incoming(incoming),
    );
    format!("http://{address}")
}

/// An OTLP/HTTP collector on a free loopback port; its base address.
async fn http_collector(received: Received) -> String {
    use axum::http::HeaderMap;
    use axum::routing::post;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let content_type = |headers: &HeaderMap| {
        assert_eq!(headers["content-type"], "application/x-protobuf");
        assert_eq!(headers["x-tenant"], "blue", "configured headers are sent");
    };
    let traces = received.clone();
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            post(move |headers: HeaderMap, body: Bytes| async move {
                content_type(&headers);
                traces.traces(ExportTraceServiceRequest::decode(body).unwrap());
                ExportTraceServiceResponse::default().encode_to_vec()
            }),
        )
        .route(
            "/v1/metrics",
            post(move |headers: HeaderMap, body: Bytes| async move {
                content_type(&headers);
                received.metrics(ExportMetricsServiceRequest::decode(body).unwrap());
                ExportMetricsServiceResponse::default().encode_to_vec()
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

fn text(value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> Option<&str> {
    match value.as_ref()?.value.as_ref()? {
        Value::StringValue(s) => Some(s),
        _ => None,
    }
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.value.as_ref())
}

fn string<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key)? {
        Value::StringValue(s) => Some(s),
        other => panic!("{key}: {other:?}"),
    }
}

fn int(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match attribute(attributes, key)? {
        Value::IntValue(n) => Some(*n),
        other => panic!("{key}: {other:?}"),
    }
}

/// The retry delays the executor slept, as its listener hears them.
#[derive(Debug, Default)]
struct Delays(Mutex<Vec<Duration>>);

impl ExecutorListener for Delays {
    fn on_retry(&self, _: &Request, _: &RetryReason, delay: Duration, _: u32) {
        self.0.lock().unwrap().push(delay);
    }
    fn on_give_up(&self, _: &Request, _: Outcome, _: Option<&RetryError>) {}
    fn on_success(&self, _: &Request, _: u32) {}
}

/// Runs requests that fail `failures` times (`KV_LOCKED`) then succeed, under the registry's
/// best-effort policy, exporting as `config` says; the delays slept, and the spans dropped.
fn run_and_export(
    background: &tokio::runtime::Runtime,
    config: OtlpConfig,
    failures: &[u32],
) -> (Vec<Duration>, u64) {
    let export = {
        let _inside = background.enter();
        OtlpExport::start(&config).unwrap()
    };
    let subscriber = tracing_subscriber::registry().with(export.layer());
    let recorder: Box<dyn metrics::Recorder> = match export.recorder() {
        Some(recorder) => Box::new(recorder),
        None => Box::new(metrics::NoopRecorder),
    };
    let registry = RegistryConfig::parse(
        "default_policy = \"standard\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.standard]\nbuiltin = \"best-effort\"\n",
        std::path::Path::new("rebound.toml"),
        std::path::Path::new("."),
    )
    .unwrap();
    let delays = Arc::new(Delays::default());
    let executor = Executor::new(PolicyRegistry::new(registry).unwrap())
        .with_listener(Arc::clone(&delays) as Arc<dyn ExecutorListener>);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rebound::telemetry::enable();
    metrics::with_local_recorder(&*recorder, || {
        tracing::subscriber::with_default(subscriber, || {
            for (id, &failures) in (1..).zip(failures) {
                let failures = AtomicU32::new(failures);
                let request = Request::new(id, RequestType::Get, Duration::from_secs(10)).unwrap();
                runtime
                    .block_on(executor.run(request, |_| {
                        let fail = failures
                            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                                n.checked_sub(1)
                            })
                            .is_ok();
                        async move {
                            match fail {
                                true => Err(Failure::reason("locked", reasons::KV_LOCKED)),
                                false => Ok(()),
                            }
                        }
                    }))
                    .unwrap();
            }
        })
    });
    let dropped = export.dropped_spans();
    export.shutdown();
    let delays = delays.0.lock().unwrap().clone();
    (delays, dropped)
}

/// The export's configuration for a collector at `endpoint`.
fn to(protocol: OtlpProtocol, endpoint: String) -> OtlpConfig {
    let mut config = OtlpConfig::default();
    config.endpoint = Some(endpoint);
    config.protocol = Some(protocol);
    config.headers = [("x-tenant".to_owned(), "blue".to_owned())].into();
    config.service_name = Some("rebound-test".to_owned());
    config
}

/// Checks what `received` got for the run of [`run_and_export`] that slept `delays`.
fn check(received: &Received, delays: &[Duration]) {
    let spans = received.spans.lock().unwrap();
    let attempts: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "rebound.attempt")
        .collect();
    assert_eq!(attempts.len(), 5, "three attempts, then two: {spans:#?}");
    let failed: Vec<&&Span> = attempts
        .iter()
        .filter(|s| string(&s.attributes, "error.type").is_some())
        .collect();
    assert_eq!(failed.len(), 3, "three attempts failed");
    for span in &failed {
        let a = &span.attributes;
        // OpenTelemetry semantic conventions: `error.type` names the failure.
        assert_eq!(string(a, "error.type"), Some("KV_LOCKED"));
        assert_eq!(string(a, "rebound.policy"), Some("standard"));
        assert_eq!(
            string(a, "rebound.policy.version"),
            Some("builtin:best-effort")
        );
        assert_eq!(string(a, "rebound.decision"), Some("retry"));
        let id = string(a, "rebound.decision_id").unwrap();
        assert_eq!(id.len(), 36, "a UUID: {id}");
        assert_eq!(string(a, "rebound.request_type"), Some("get"));
    }
    // `http.request.resend_count`: set on resent attempts only, their ordinal.
    let mut resends: Vec<Option<i64>> = attempts
        .iter()
        .map(|s| int(&s.attributes, "http.request.resend_count"))
        .collect();
    resends.sort();
    assert_eq!(resends, [None, None, Some(1), Some(1), Some(2)]);
    // Each attempt's parent is its request's span.
    let requests: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "rebound.request")
        .collect();
    assert_eq!(requests.len(), 2);
    for attempt in &attempts {
        assert!(
            requests
                .iter()
                .any(|r| r.span_id == attempt.parent_span_id && r.trace_id == attempt.trace_id),
            "an attempt's parent is its request"
        );
    }

    let metrics = received.metrics.lock().unwrap();
    let metric = |name: &str| -> &Metric {
        metrics
            .iter()
            .rev()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} not exported: {metrics:#?}"))
    };
    // gRFC A96 `grpc.client.call.retries`: a histogram in `{retry}`, buckets [1,2,3,4,5],
    // one point per request that needed retries (0 is not recorded).
    let retries = metric("rebound.request.retries");
    assert_eq!(retries.unit, "{retry}");
    let Some(Data::Histogram(histogram)) = &retries.data else {
        panic!("{retries:?}")
    };
    let point = &histogram.data_points[0];
    assert_eq!(
        string(&point.attributes, "rebound.outcome"),
        Some("success")
    );
    assert_eq!((point.count, point.sum), (2, Some(3.0)), "2 and 1 retries");
    assert_eq!(point.explicit_bounds, [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(
        point.bucket_counts[..3],
        [1, 1, 0],
        "one ≤ 1, one in (1, 2]"
    );
    // A96 `grpc.client.call.retry_delay`: seconds without an attempt running, per request.
    let delay = metric("rebound.request.retry_delay");
    assert_eq!(delay.unit, "s");
    let Some(Data::Histogram(histogram)) = &delay.data else {
        panic!("{delay:?}")
    };
    let point = &histogram.data_points[0];
    let slept: f64 = delays.iter().map(Duration::as_secs_f64).sum();
    assert_eq!(delays.len(), 3);
    assert_eq!(point.count, 2);
    assert!(
        (point.sum.unwrap() - slept).abs() < 1e-9,
        "{point:?} vs {slept}"
    );
    assert_eq!(point.explicit_bounds.len(), 41, "A66's latency buckets");
    // The decisions counter, with the policy's attributes.
    let decisions = metric("rebound.decisions");
    assert_eq!(decisions.unit, "{decision}");
    let Some(Data::Sum(sum)) = &decisions.data else {
        panic!("{decisions:?}")
    };
    assert!(sum.is_monotonic);
    let retried: i64 = sum
        .data_points
        .iter()
        .filter(|p| string(&p.attributes, "rebound.decision") == Some("retry"))
        .map(|p| {
            assert_eq!(string(&p.attributes, "rebound.policy"), Some("standard"));
            assert_eq!(string(&p.attributes, "rebound.reason"), Some("KV_LOCKED"));
            match p.value {
                Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(
                    n,
                )) => n,
                other => panic!("{other:?}"),
            }
        })
        .sum();
    assert_eq!(retried, 3);
    assert_eq!(metric("rebound.requests").unit, "{request}");
}

/// The export over OTLP/gRPC.
#[test]
fn spans_and_metrics_reach_a_grpc_collector_with_their_names_units_and_values() {
    let background = tokio::runtime::Runtime::new().unwrap();
    let received = Received::default();
    let endpoint = background.block_on(grpc_collector(received.clone()));
    let (delays, dropped) = run_and_export(&background, to(OtlpProtocol::Grpc, endpoint), &[2, 1]);
    check(&received, &delays);
    assert_eq!(dropped, 0);
}

/// The export over OTLP/HTTP with protobuf bodies, the paths `/v1/traces` and `/v1/metrics`
/// under the configured base address.
#[test]
fn spans_and_metrics_reach_an_http_collector_with_their_names_units_and_values() {
    let background = tokio::runtime::Runtime::new().unwrap();
    let received = Received::default();
    let endpoint = background.block_on(http_collector(received.clone()));
    let config = to(OtlpProtocol::HttpProtobuf, endpoint);
    let (delays, dropped) = run_and_export(&background, config, &[2, 1]);
    check(&received, &delays);
    assert_eq!(dropped, 0);
}

/// An unreachable collector: every request runs to its end, the exports failing on the SDK's
/// threads, and shutting down returns.
#[test]
fn an_unreachable_collector_leaves_the_requests_to_run_to_their_end() {
    let background = tokio::runtime::Runtime::new().unwrap();
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (delays, _) = run_and_export(&background, to(OtlpProtocol::Grpc, endpoint), &[2, 1]);
    assert_eq!(delays.len(), 3, "both requests ran to their end");
}

/// A collector that takes the connection and never answers holds the first export until its
/// timeout: the spans ended meanwhile beyond `max_queued_spans` are dropped and counted,
/// and the requests do not wait.
#[test]
fn spans_beyond_the_queue_are_dropped_and_counted_while_the_collector_stalls() {
    let background = tokio::runtime::Runtime::new().unwrap();
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", stalled.local_addr().unwrap());
    let mut config = to(OtlpProtocol::HttpProtobuf, endpoint);
    config.max_queued_spans = 4;
    config.timeout_ms = Some(2_000);
    config.metrics = false;
    // 40 requests of two attempts: 120 spans.
    let (delays, dropped) = run_and_export(&background, config, &[1; 40]);
    assert_eq!(delays.len(), 40, "every request ran to its end");
    assert!(
        dropped >= 100,
        "at most 4 spans held, then 4 more after the stall: {dropped}"
    );
    drop(stalled);
}
