//! Spec: per-node circuit breakers (docs/breakers.md), through the executor on tokio's paused
//! clock and through the registry's configuration (`[breakers.NAME]`, `[policies.X] breaker`).
//! Reference 001 "Retry Reasons": CIRCUIT_BREAKER_OPEN, the operation not sent.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::breaker::{BreakerConfig, BreakerOpen, BreakerState, NodeBreakers};
use rebound::config::RegistryConfig;
use rebound::executor::{ExecuteError, Executor, Failure};
use rebound::registry::PolicyRegistry;
use rebound::{
    reasons, CancelReason, DecisionContext, NodeChoice, Orchestrator, Request, RequestType,
    RetryAction, RetryError, RetryReason, SyncStrategy,
};

/// Retries every failure after 10 ms, on the node `node` says.
#[derive(Debug)]
struct Always {
    node: NodeChoice,
}

impl rebound::Strategy for Always {
    fn name(&self) -> &str {
        "always"
    }
}

impl SyncStrategy for Always {
    fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        RetryAction::RetryAfter {
            delay: Duration::from_millis(10),
            node: self.node,
            consistency: None,
            attempt_timeout: None,
        }
    }
}

/// The operation's error: the server's, or the breaker's refusal.
#[derive(Debug, PartialEq)]
enum CallError {
    Server,
    Open(BreakerOpen),
}

impl From<BreakerOpen> for CallError {
    fn from(open: BreakerOpen) -> Self {
        CallError::Open(open)
    }
}

fn breakers() -> Arc<NodeBreakers> {
    Arc::new(NodeBreakers::new(BreakerConfig::default(), 64).unwrap())
}

fn request(request_type: RequestType, timeout: Duration) -> Request {
    Request::new(1, request_type, timeout)
        .unwrap()
        .with_start(tokio::time::Instant::now().into_std())
}

/// The breaker's whole cycle through the executor, with Couchbase core-io's defaults: a node
/// failing every attempt opens its breaker at the 20th failure; attempts to it are then refused
/// before dispatch (CIRCUIT_BREAKER_OPEN) for the 5 s sleep window; the first attempt after it
/// is the canary, and its success closes the breaker.
#[tokio::test(start_paused = true)]
async fn a_node_s_breaker_opens_refuses_and_recovers() {
    let breakers = breakers();
    let orchestrator = Orchestrator::new(Arc::new(Always {
        node: NodeChoice::Same,
    }))
    .with_breakers(Arc::clone(&breakers));
    let executor = Executor::new(orchestrator);
    let failing = Arc::new(AtomicBool::new(true));
    let sent = Arc::new(AtomicU32::new(0));
    let run = |timeout: Duration| {
        let failing = Arc::clone(&failing);
        let sent = Arc::clone(&sent);
        let executor = &executor;
        async move {
            executor
                .run(request(RequestType::Get, timeout), |attempt| {
                    let failing = Arc::clone(&failing);
                    let sent = Arc::clone(&sent);
                    async move {
                        attempt.admit("a:11210")?;
                        sent.fetch_add(1, Ordering::Relaxed);
                        attempt.dispatched("a:11210");
                        if failing.load(Ordering::Relaxed) {
                            Err(Failure::reason(
                                CallError::Server,
                                RetryReason::HttpStatus(503),
                            ))
                        } else {
                            Ok(())
                        }
                    }
                })
                .await
        }
    };
    // One request retrying every 10 ms for 195 ms: 20 attempts are sent, the 20th failure
    // opens the breaker, and the attempts after it are refused until the deadline.
    let result = run(Duration::from_millis(300)).await;
    assert!(
        matches!(result, Err(ExecuteError::Ended { .. })),
        "{result:?}"
    );
    assert_eq!(sent.load(Ordering::Relaxed), 20);
    assert_eq!(breakers.state("a:11210"), Some(BreakerState::Open));
    assert_eq!(breakers.opened(), 1);
    // Within the sleep window nothing reaches the node.
    sent.store(0, Ordering::Relaxed);
    failing.store(false, Ordering::Relaxed);
    let result = run(Duration::from_secs(1)).await;
    assert!(result.is_err(), "refused for a whole second: {result:?}");
    assert_eq!(sent.load(Ordering::Relaxed), 0);
    // Past the sleep window the next attempt is the canary; the node answers, it closes.
    tokio::time::advance(Duration::from_secs(5)).await;
    let result = run(Duration::from_secs(1)).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(sent.load(Ordering::Relaxed), 1);
    assert_eq!(breakers.state("a:11210"), Some(BreakerState::Closed));
}

/// A refused attempt ends as CIRCUIT_BREAKER_OPEN when the strategy gives up: the error the
/// operation returned for it (the breaker's, naming the node) is the request's last.
#[tokio::test(start_paused = true)]
async fn a_refusal_is_circuit_breaker_open_before_dispatch() {
    let breakers = breakers();
    for _ in 0..20 {
        let now = tokio::time::Instant::now().into_std();
        let admission = breakers.admit_at("a:11210", now);
        breakers.record_at("a:11210", admission, true, now);
    }
    let executor = Executor::new(Orchestrator::default().with_breakers(Arc::clone(&breakers)));
    let result: Result<(), _> = executor
        .run(
            request(RequestType::Get, Duration::from_millis(50)),
            |attempt| async move {
                attempt.admit("a:11210")?;
                unreachable!("an open breaker admits nothing");
            },
        )
        .await;
    match result {
        Err(ExecuteError::Ended {
            error: RetryError::UnambiguousTimeout { context },
            last: Some(CallError::Open(open)),
        }) => {
            assert_eq!(open.node, "a:11210");
            assert!(context
                .retry_reasons
                .contains(&reasons::CIRCUIT_BREAKER_OPEN.to_string()));
        }
        other => panic!("a timeout after CIRCUIT_BREAKER_OPEN refusals, got {other:?}"),
    }
}

/// Reference 003 "retry on the next host": an attempt to the next node skips the nodes whose
/// breaker is open, and they are never sent to.
#[tokio::test(start_paused = true)]
async fn a_next_node_retry_skips_open_nodes() {
    let breakers = breakers();
    let now = tokio::time::Instant::now().into_std();
    for _ in 0..20 {
        let admission = breakers.admit_at("b:9042", now);
        breakers.record_at("b:9042", admission, true, now);
    }
    let executor = Executor::new(
        Orchestrator::new(Arc::new(Always {
            node: NodeChoice::Next,
        }))
        .with_breakers(breakers),
    );
    let plan = ["a:9042", "b:9042", "c:9042"];
    let sent_to = Arc::new(Mutex::new(Vec::new()));
    let result = executor
        .run(
            request(RequestType::Get, Duration::from_secs(1)),
            |attempt| {
                let sent_to = Arc::clone(&sent_to);
                async move {
                    // The query plan from the node to try next: the first node, then the others.
                    let from = plan.len().min(attempt.number() as usize);
                    let node = attempt
                        .first_admitted(&plan[from..])
                        .expect("a node left")?;
                    sent_to.lock().unwrap().push(*node);
                    attempt.dispatched(*node);
                    match *node {
                        "c:9042" => Ok(()),
                        _ => Err(Failure::reason(
                            CallError::Server,
                            reasons::SOCKET_NOT_AVAILABLE,
                        )),
                    }
                }
            },
        )
        .await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(*sent_to.lock().unwrap(), ["a:9042", "c:9042"]);
}

/// The safety guard still holds with a breaker: a non-idempotent write that failed in flight
/// is not retried (its node's breaker counts the failure), while one the breaker refused was
/// never sent, so retrying it cannot apply it twice.
#[tokio::test(start_paused = true)]
async fn a_breaker_never_makes_an_unsafe_retry() {
    let breakers = breakers();
    let executor = Executor::new(
        Orchestrator::new(Arc::new(Always {
            node: NodeChoice::Same,
        }))
        .with_breakers(Arc::clone(&breakers)),
    );
    let writes = Arc::new(AtomicU32::new(0));
    let write = |node: &'static str| {
        let writes = Arc::clone(&writes);
        let executor = &executor;
        async move {
            executor
                .run(
                    request(RequestType::Upsert, Duration::from_millis(500)),
                    |attempt| {
                        let writes = Arc::clone(&writes);
                        async move {
                            attempt.admit(node)?;
                            writes.fetch_add(1, Ordering::Relaxed);
                            attempt.dispatched(node);
                            Err::<(), _>(Failure::reason(
                                CallError::Server,
                                reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
                            ))
                        }
                    },
                )
                .await
        }
    };
    let result = write("a:11210").await;
    assert!(
        matches!(
            result,
            Err(ExecuteError::Ended {
                error: RetryError::RequestCanceled {
                    reason: CancelReason::UnsafeRetryRefused(_),
                    ..
                },
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(
        writes.load(Ordering::Relaxed),
        1,
        "written once, not retried"
    );
    let (attempts, failures) = breakers.each()[0]
        .1
        .window_at(tokio::time::Instant::now().into_std());
    assert_eq!((attempts, failures), (1, 1));
    // An open breaker: the write is refused before dispatch, retried (nothing was sent), and
    // never written.
    let now = tokio::time::Instant::now().into_std();
    for _ in 0..20 {
        let admission = breakers.admit_at("b:11210", now);
        breakers.record_at("b:11210", admission, true, now);
    }
    writes.store(0, Ordering::Relaxed);
    let result = write("b:11210").await;
    assert!(result.is_err());
    assert_eq!(writes.load(Ordering::Relaxed), 0);
}

const CONFIG: &str = r#"
default_policy = "kv"
[watch]
enabled = false
[breakers.nodes]
volume_threshold = 4
error_percentage = 75
sleep_window_ms = 1000
[policies.kv]
builtin = "best-effort"
breaker = "nodes"
[policies.other]
builtin = "best-effort"
"#;

fn parse(text: &str) -> Result<RegistryConfig, rebound::config::ConfigError> {
    RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new("."))
}

/// docs/registry.md "Circuit breakers": a policy's requests are admitted by the breakers it
/// names, other policies' are not; a reload with the same parameters keeps their state; the
/// status shows the open nodes.
#[test]
fn a_policy_s_breakers_come_from_the_registry() {
    let registry = PolicyRegistry::new(parse(CONFIG).unwrap()).unwrap();
    let kv = Request::new(1, RequestType::Get, Duration::from_secs(1)).unwrap();
    let other = kv.clone().with_policy("other");
    assert!(registry.controls(&other).breakers().cloned().is_none());
    let breakers = registry
        .controls(&kv)
        .breakers()
        .cloned()
        .expect("kv names `nodes`");
    assert_eq!(breakers.made_with().0.volume_threshold, 4);
    let now = std::time::Instant::now();
    for _ in 0..4 {
        let admission = breakers.admit_at("a:11210", now);
        breakers.record_at("a:11210", admission, true, now);
    }
    registry.apply(parse(CONFIG).unwrap()).unwrap();
    let kept = registry.controls(&kv).breakers().cloned().unwrap();
    assert_eq!(
        kept.state("a:11210"),
        Some(BreakerState::Open),
        "kept across a reload"
    );
    let status = registry.status();
    let nodes = &status.breakers[0];
    assert_eq!((nodes.name.as_str(), nodes.opened), ("nodes", 1));
    assert_eq!(nodes.policies, ["kv"]);
    assert_eq!(nodes.nodes[0].node, "a:11210");
    assert_eq!(nodes.nodes[0].state, BreakerState::Open);
    let json = serde_json::to_value(&status.breakers).unwrap();
    assert_eq!(json[0]["nodes"][0]["state"], "open");
}

/// docs/registry.md "Circuit breakers": out-of-range parameters, an unknown field and an
/// unknown breaker name are refused, each naming its field.
#[test]
fn bad_breakers_are_refused_naming_the_field() {
    let with = |table: &str| {
        format!("default_policy = \"p\"\n[breakers.b]\n{table}\n[policies.p]\nbuiltin = \"best-effort\"\nbreaker = \"b\"\n")
    };
    let refused = |text: String| parse(&text).unwrap_err();
    let e = refused(with("volume_threshold = 0"));
    assert_eq!(
        (e.line, e.field.as_str()),
        (2, "breakers.b.volume_threshold"),
        "{e}"
    );
    assert!(e.message.contains("expected 1 to 65535"), "{e}");
    let e = refused(with("error_percentage = 120"));
    assert_eq!(e.field, "breakers.b.error_percentage", "{e}");
    let e = refused(with("sleep_window_ms = 0"));
    assert_eq!(e.field, "breakers.b.sleep_window_ms", "{e}");
    let e = refused(with("max_nodes = 0"));
    assert_eq!(e.field, "breakers.b.max_nodes", "{e}");
    let e = refused(with("canary_timeout_ms = 10"));
    assert!(e.message.contains("canary_timeout_ms"), "{e}");
    let e = refused(
        "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\nbreaker = \"b\"\n".into(),
    );
    assert_eq!((e.line, e.field.as_str()), (4, "policies.p.breaker"), "{e}");
    assert!(parse(&with("rolling_window_ms = 10_000\nmax_nodes = 8")).is_ok());
}

/// docs/breakers.md "Configuration": the example parses, and its values are the defaults it
/// says they are.
#[test]
fn the_documented_example_is_the_defaults() {
    let block =
        super::common::toml_block_after(include_str!("../../docs/breakers.md"), "## Configuration");
    let config =
        parse(&format!("default_policy = \"kv\"\n{block}")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.policy_controls["kv"].breaker.as_deref(),
        Some("kv-nodes")
    );
    let nodes = config.breakers["kv-nodes"];
    assert_eq!(nodes.config, BreakerConfig::default());
    assert_eq!(nodes.max_nodes, NodeBreakers::DEFAULT_MAX_NODES);
}
