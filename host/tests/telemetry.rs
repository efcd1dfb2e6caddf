//! The library records its metrics through the `metrics` facade, with one
//! set of names and labels (docs/observability.md) — a registry's decisions and the
//! executor's request ends, retries and retry delays, once an application enables them. The names and labels are a
//! contract with dashboards: this snapshot fails when they change.

use crate::common;

use std::path::Path;
use std::time::Duration;

use futures::FutureExt;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use rebound::config::RegistryConfig;
use rebound::executor::{Executor, Failure};
use rebound::registry::PolicyRegistry;
use rebound::{reasons, DecisionContext, Request, RequestType};

const CONFIG: &str = r#"
default_policy = "standard"
[policies.standard]
builtin = "best-effort"
[policies.strict]
builtin = "fail-fast"
"#;

#[test]
fn metric_names_and_labels_are_stable() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        rebound::telemetry::enable();
        let config =
            RegistryConfig::parse(CONFIG, Path::new("rebound.toml"), Path::new(".")).unwrap();
        let registry = std::sync::Arc::new(PolicyRegistry::new(config).unwrap());
        let decide = |request: &mut Request, reason| {
            registry
                .decide(request, &DecisionContext::new(reason))
                .now_or_never()
                .expect("built-ins decide at once")
                .unwrap()
        };
        let get = || Request::new(1, RequestType::Get, Duration::from_secs(10)).unwrap();
        let _ = decide(&mut get(), &reasons::KV_LOCKED);
        let _ = decide(&mut get(), &reasons::KV_LOCKED);
        let _ = decide(&mut get().with_policy("strict"), &reasons::KV_LOCKED);
        let mut upsert = Request::new(2, RequestType::Upsert, Duration::from_secs(10)).unwrap();
        upsert.mark_dispatched("node");
        let _ = decide(&mut upsert, &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT);

        common::paused_runtime().block_on(async {
            let executor = Executor::new(registry.clone());
            let started = || {
                Request::new(3, RequestType::Get, Duration::from_millis(100))
                    .unwrap()
                    .with_start(tokio::time::Instant::now().into_std())
            };
            let _ = executor
                .run(started(), |attempt| async move {
                    match attempt.number() {
                        0 => Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE)),
                        _ => Ok(()),
                    }
                })
                .await;
            let _ = executor
                .run(started(), |_| async {
                    Err::<(), _>(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE))
                })
                .await;
        });
    });
    let mut lines: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let (kind, key) = key.into_parts();
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let value = match value {
                DebugValue::Counter(n) => n.to_string(),
                other => format!("{other:?}"),
            };
            format!("{kind:?} {}{{{}}} {value}", key.name(), labels.join(","))
        })
        .collect();
    lines.sort();
    // On tokio's paused clock best effort's delays (1, 2, 4, … ms) are exact: the second
    // request makes 7 attempts in its 100 ms, the first succeeds at its second.
    assert_eq!(
        lines,
        [
            "Counter rebound_decisions_total{policy=standard,version=builtin:best-effort,decision=cancel,reason=SOCKET_CLOSED_WHILE_IN_FLIGHT,cancel_reason=NO_MORE_RETRIES} 1",
            "Counter rebound_decisions_total{policy=standard,version=builtin:best-effort,decision=retry,reason=KV_LOCKED,cancel_reason=} 2",
            "Counter rebound_decisions_total{policy=standard,version=builtin:best-effort,decision=retry,reason=SOCKET_NOT_AVAILABLE,cancel_reason=} 7",
            "Counter rebound_decisions_total{policy=standard,version=builtin:best-effort,decision=timeout,reason=SOCKET_NOT_AVAILABLE,cancel_reason=UnambiguousTimeout} 1",
            "Counter rebound_decisions_total{policy=strict,version=builtin:fail-fast,decision=cancel,reason=KV_LOCKED,cancel_reason=NO_MORE_RETRIES} 1",
            "Counter rebound_requests_total{outcome=success,attempts=2} 1",
            "Counter rebound_requests_total{outcome=timeout,attempts=7} 1",
            // gRFC A96: retries per request that needed any, and the time without an
            // attempt running (the timed-out one's delays, 63 ms, and its wait for the
            // deadline, 37 ms).
            "Histogram rebound_request_retries{outcome=success} Histogram([1.0])",
            "Histogram rebound_request_retries{outcome=timeout} Histogram([6.0])",
            "Histogram rebound_request_retry_delay_seconds{outcome=success} Histogram([0.001])",
            "Histogram rebound_request_retry_delay_seconds{outcome=timeout} Histogram([0.1])",
        ]
    );
}

/// Decision-log lines dropped because the log's buffer was full are counted under
/// `rebound_decision_log_dropped_total` (no labels), as many as the log itself counts.
#[test]
fn dropped_decision_log_lines_are_counted() {
    use rebound::decision_log::{DecisionLog, DecisionLogConfig};
    use std::sync::mpsc;

    /// Takes nothing until the test ends (its sender is dropped).
    struct Stuck(mpsc::Receiver<()>);
    impl std::io::Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            let _ = self.0.recv();
            Ok(())
        }
    }

    const DECISIONS: u64 = 200;
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (release, stuck) = mpsc::channel::<()>();
    let config = RegistryConfig::parse(CONFIG, Path::new("rebound.toml"), Path::new(".")).unwrap();
    let registry = PolicyRegistry::new(config).unwrap();
    let mut log_config = DecisionLogConfig::default();
    log_config.buffer = 1;
    registry.set_decision_log(Some(DecisionLog::to_writer(&log_config, Stuck(stuck))));
    // Bound after the registry, so dropped before it should an assertion fail: the writer is
    // released before the log waits for it.
    let release = release;
    metrics::with_local_recorder(&recorder, || {
        rebound::telemetry::enable();
        for _ in 0..DECISIONS {
            let mut request = Request::new(1, RequestType::Get, Duration::from_secs(10)).unwrap();
            let _ = registry
                .decide(&mut request, &DecisionContext::new(&reasons::KV_LOCKED))
                .now_or_never()
                .unwrap()
                .unwrap();
        }
    });
    let dropped = registry.decision_log_stats().unwrap().dropped;
    // The buffer holds one line, the writer what fits its 8 KiB output buffer (lines are
    // over 300 bytes) and the line stuck in the sink; the rest is dropped.
    assert!(dropped >= DECISIONS - 1 - 8192 / 300 - 1, "{dropped}");
    let counted: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| match value {
            DebugValue::Counter(n) if key.key().name().contains("decision_log") => {
                let labels = key.key().labels().count();
                assert_eq!(labels, 0, "{key:?}");
                Some((key.key().name().to_owned(), n))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        counted,
        [("rebound_decision_log_dropped_total".to_owned(), dropped)]
    );
    drop(release);
}

/// gRFC A96's `grpc.client.call.hedges` and A6's retry throttling, as the executor records
/// them: a hedged call whose third copy answers records 2 copies sent after the first (and
/// `rebound_hedges_total` their events); a request whose retry the throttle refuses
/// (`RETRY_THROTTLED`) counts in `rebound_retries_throttled_total`.
#[test]
fn hedges_per_request_and_throttled_retries_are_recorded() {
    use rebound::grpc::{ServiceConfig, DEFAULT_MAX_ATTEMPTS_LIMIT};
    use rebound::throttle::{ScopedThrottle, ThrottleConfig, ThrottleKind};
    use rebound::{GrpcRetry, Orchestrator, RetryReason};
    use std::sync::Arc;

    let config = serde_json::json!({"methodConfig": [{
        "name": [{"service": "shop.Inventory"}],
        "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.1s"}
    }]});
    let config = ServiceConfig::parse(&config, DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap();
    let hedged = Executor::new(Orchestrator::new(Arc::new(GrpcRetry::new(config))));
    let throttle = ScopedThrottle::new(
        ThrottleConfig::new(ThrottleKind::Tokens {
            max_tokens: 4.0,
            token_ratio: 1.0,
        }),
        "policy".parse().unwrap(),
        16,
        std::time::Instant::now(),
    )
    .unwrap();
    let retries = serde_json::json!({"methodConfig": [{
        "name": [{"service": "shop.Inventory"}],
        "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
    }]});
    let retries = ServiceConfig::parse(&retries, DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap();
    let throttled = Executor::new(
        Orchestrator::new(Arc::new(GrpcRetry::new(retries))).with_throttle(Arc::new(throttle)),
    );
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        rebound::telemetry::enable();
        common::paused_runtime().block_on(async {
            let call = || {
                Request::new(1, RequestType::Grpc, Duration::from_secs(5))
                    .unwrap()
                    .with_route("/shop.Inventory/Get")
                    .with_idempotent(true)
                    .with_start(tokio::time::Instant::now().into_std())
            };
            hedged
                .run(call(), |attempt| async move {
                    match attempt.copy() {
                        2 => Ok(()),
                        _ => std::future::pending::<Result<(), Failure<&str>>>().await,
                    }
                })
                .await
                .unwrap();
            // Each failure takes a token from 4; at 2 (half) the retry is refused.
            let unavailable = RetryReason::GrpcStatus(rebound::grpc::GrpcCode::Unavailable);
            let result = throttled
                .run(call(), |_| {
                    let unavailable = unavailable.clone();
                    async move { Err::<(), _>(Failure::reason("down", unavailable)) }
                })
                .await;
            assert!(result.is_err());
        });
    });
    let mut lines: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| {
            let name = key.key().name();
            name.contains("hedges") || name.contains("throttled")
        })
        .map(|(key, _, _, value)| {
            let (kind, key) = key.into_parts();
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            format!("{kind:?} {}{{{}}} {value:?}", key.name(), labels.join(","))
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "Counter rebound_hedges_total{event=cancelled} Counter(2)",
            "Counter rebound_hedges_total{event=sent} Counter(2)",
            "Counter rebound_hedges_total{event=won} Counter(1)",
            "Counter rebound_retries_throttled_total{} Counter(1)",
            "Histogram rebound_request_hedges{outcome=success} Histogram([2.0])",
        ]
    );
}
