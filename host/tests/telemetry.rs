//! Issue 16, point 3: the library records its metrics through the `metrics` facade, with one
//! set of names and labels (docs/observability.md) — a registry's decisions and the
//! executor's request ends, once an application enables them. The names and labels are a
//! contract with dashboards: this snapshot fails when they change.

mod common;

use std::path::Path;
use std::time::Duration;

use futures::FutureExt;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use rebound::executor::{Executor, Failure};
use rebound::registry::{PolicyRegistry, RegistryConfig};
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
        let _ = decide(&mut get().policy("strict"), &reasons::KV_LOCKED);
        let mut upsert = Request::new(2, RequestType::Upsert, Duration::from_secs(10)).unwrap();
        upsert.mark_dispatched("node");
        let _ = decide(&mut upsert, &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT);

        common::paused_runtime().block_on(async {
            let executor = Executor::new(registry.clone());
            let started = || {
                Request::new(3, RequestType::Get, Duration::from_millis(100))
                    .unwrap()
                    .started_at(tokio::time::Instant::now().into_std())
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
        ]
    );
}
