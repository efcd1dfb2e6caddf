//! `rebound serve` exporting over OTLP (docs/observability.md "OpenTelemetry"): turned on by
//! the standard `OTEL_*` variables alone, its decision spans and metrics reach an OTLP/HTTP
//! receiver the test runs (decoding the protobuf bodies); an unreachable collector is logged
//! at most once a second and never holds a decision; a `[telemetry]` endpoint the build cannot
//! reach is refused at start with the file, line and field.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message;
use serde_json::json;

use crate::support::server::Server;

/// What the receiver got: trace and metric export requests.
#[derive(Default, Clone)]
struct Received {
    traces: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
    metrics: Arc<Mutex<Vec<ExportMetricsServiceRequest>>>,
}

/// An OTLP/HTTP receiver on a free loopback port, one request per connection; its address.
fn receiver(received: Received) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
            let mut length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                let (name, value) = header.split_once(':').unwrap();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            match path.as_str() {
                "/v1/traces" => received
                    .traces
                    .lock()
                    .unwrap()
                    .push(ExportTraceServiceRequest::decode(&body[..]).unwrap()),
                "/v1/metrics" => received
                    .metrics
                    .lock()
                    .unwrap()
                    .push(ExportMetricsServiceRequest::decode(&body[..]).unwrap()),
                other => panic!("an OTLP/HTTP export to {other}"),
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    address
}

fn value<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.value.as_ref())
}

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match value(attributes, key)? {
        Any::StringValue(s) => Some(s),
        other => panic!("{key}: {other:?}"),
    }
}

fn config(dir: &std::path::Path, telemetry: &str) -> std::path::PathBuf {
    let path = dir.join("rebound.toml");
    std::fs::write(
        &path,
        format!(
            "default_policy = \"standard\"\ncache_dir = false\n{telemetry}\n\
             [policies.standard]\nbuiltin = \"best-effort\"\n"
        ),
    )
    .unwrap();
    path
}

/// The OTLP exporter specification's variables alone turn the export on
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`); a
/// decision's span carries `http.request.resend_count`, `error.type` and Rebound's attributes;
/// an outcome report's retries reach `rebound.request.retries` (gRFC A96); what is pending is
/// exported at SIGTERM; `/metrics` still shows the same decisions.
#[test]
fn serve_exports_decision_spans_and_metrics_to_an_otlp_http_collector() {
    let received = Received::default();
    let endpoint = receiver(received.clone());
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "");
    let endpoint_path = std::path::PathBuf::from(&endpoint);
    let protocol = std::path::PathBuf::from("http/protobuf");
    let service = std::path::PathBuf::from("edge-rebound");
    let server = Server::start_with_env(
        &config,
        "127.0.0.1:0",
        None,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint_path),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", &protocol),
            ("OTEL_SERVICE_NAME", &service),
        ],
    );
    let (status, answer) = server.post(
        "/v1/decide",
        json!({"request": {"type": "get", "retry_attempts": 1}, "reason": "KV_LOCKED"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"], "retry");
    let decision_id = answer["decision_id"].as_str().unwrap().to_owned();
    let (status, answer) = server.post(
        "/v1/outcome",
        json!({"outcome": "success", "attempts": 3, "request": {"type": "get"}}),
    );
    assert_eq!(status, 200, "{answer}");
    let (_, metrics) = server.call("GET", "/metrics", "", None);
    assert!(
        metrics
            .as_str()
            .unwrap()
            .contains("rebound_decisions_total{"),
        "{metrics}"
    );
    let (stopped, log) = server.terminate();
    assert!(stopped, "{log}");
    assert!(
        log.contains("exporting spans and metrics over OTLP"),
        "{log}"
    );

    let traces = received.traces.lock().unwrap();
    let resource = &traces[0].resource_spans[0]
        .resource
        .as_ref()
        .unwrap()
        .attributes;
    assert_eq!(text(resource, "service.name"), Some("edge-rebound"));
    let spans: Vec<_> = traces
        .iter()
        .flat_map(|t| &t.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .filter(|s| s.name == "rebound.attempt")
        .collect();
    assert_eq!(spans.len(), 1, "one decision, one span: {traces:#?}");
    let a = &spans[0].attributes;
    assert_eq!(
        value(a, "http.request.resend_count"),
        Some(&Any::IntValue(1))
    );
    assert_eq!(text(a, "error.type"), Some("KV_LOCKED"));
    assert_eq!(text(a, "rebound.policy"), Some("standard"));
    assert_eq!(
        text(a, "rebound.policy.version"),
        Some("builtin:best-effort")
    );
    assert_eq!(text(a, "rebound.decision"), Some("retry"));
    assert_eq!(text(a, "rebound.decision_id"), Some(decision_id.as_str()));

    let metrics = received.metrics.lock().unwrap();
    let all: Vec<_> = metrics
        .iter()
        .flat_map(|m| &m.resource_metrics)
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .collect();
    let retries = all
        .iter()
        .find(|m| m.name == "rebound.request.retries")
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!(retries.unit, "{retry}");
    let Some(Data::Histogram(histogram)) = &retries.data else {
        panic!("{retries:?}")
    };
    assert_eq!(
        histogram.data_points[0].sum,
        Some(2.0),
        "3 attempts, 2 retries"
    );
    let decisions = all
        .iter()
        .find(|m| m.name == "rebound.decisions")
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!(decisions.unit, "{decision}");
}

/// An unreachable collector: every decision is answered at once, and the failed exports are
/// logged at most once a second.
#[test]
fn an_unreachable_collector_is_logged_at_most_once_a_second_and_holds_no_decision() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        &format!(
            "[telemetry]\nendpoint = \"{endpoint}\"\nprotocol = \"grpc\"\nmetrics_interval_ms = 50\n"
        ),
    );
    let server = Server::start(&config, "127.0.0.1:0", None);
    let started = Instant::now();
    for _ in 0..20 {
        let (status, answer) = server.post(
            "/v1/decide",
            json!({"request": {"type": "get"}, "reason": "KV_LOCKED"}),
        );
        assert_eq!(status, 200, "{answer}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, log) = server.terminate();
    let elapsed = started.elapsed();
    let lines = log
        .lines()
        .filter(|l| l.contains("the OpenTelemetry collector did not take an export"))
        .count();
    assert!(lines >= 1, "{log}");
    assert!(
        lines as u64 <= elapsed.as_secs() + 2,
        "{lines} lines in {elapsed:?}:\n{log}"
    );
}

/// A `[telemetry]` endpoint this build cannot export to is refused at start, naming the file,
/// the table's line and the field.
#[test]
fn a_telemetry_endpoint_the_build_cannot_reach_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[telemetry]\nendpoint = \"https://collector:4317\"\n",
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rebound"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("rebound.toml:3"), "{error}");
    assert!(error.contains("telemetry.endpoint"), "{error}");
    assert!(error.contains("http://"), "{error}");
}
