//! Hedge delays from observed latency (docs/hedging.md "Delays from observed latency",
//! docs/decisions.md "Hedge delays from observed latency"): a policy's `speculative_execution =
//! { percentile, min_delay_ms, max_delay_ms }` sends a copy once an attempt has run longer than
//! that percentile of the attempts its authority answered, within the floor and the ceiling;
//! an authority not seen yet is hedged after the ceiling; bad settings are refused naming the
//! field. On tokio's paused clock: every latency is exact.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::config::RegistryConfig;
use rebound::executor::{Executor, Failure};
use rebound::registry::PolicyRegistry;
use rebound::{Request, RequestType};
use tokio::time::Instant;

const MS: fn(u64) -> Duration = Duration::from_millis;

fn config(speculative: &str) -> String {
    format!(
        "default_policy = \"reads\"\n[watch]\nenabled = false\n[policies.reads]\nbuiltin = \"best-effort\"\nspeculative_execution = {speculative}\n"
    )
}

fn parse(text: &str) -> Result<RegistryConfig, rebound::config::ConfigError> {
    RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new("."))
}

/// An idempotent request to `authority`, started now on tokio's (paused) clock.
fn get(authority: &str) -> Request {
    Request::new(1, RequestType::Http, MS(5_000))
        .unwrap()
        .with_method(rebound::HttpMethod::Get)
        .with_authority(authority)
        .with_start(Instant::now().into_std())
}

/// Runs 100 requests made by `request`, answered in 20, 21, … 29 ms in turn.
async fn answered_in_20_to_29_ms(
    executor: &Executor<Arc<PolicyRegistry>>,
    request: impl Fn() -> Request,
) {
    for i in 0..100u64 {
        executor
            .run(request(), move |_| async move {
                tokio::time::sleep(MS(20 + i % 10)).await;
                Ok::<_, Failure<&str>>(())
            })
            .await
            .unwrap();
    }
}

/// Runs a request to `authority` whose first copy never answers and whose later copies answer
/// at once: when each copy was sent, in ms from the start.
async fn copies_of_a_stalled_request(
    executor: &Executor<Arc<PolicyRegistry>>,
    authority: &str,
) -> Vec<u128> {
    copies_of_stalled(executor, get(authority)).await
}

/// Runs `request`, whose first copy never answers and whose later copies answer at once: when
/// each copy was sent, in ms from the start.
async fn copies_of_stalled(
    executor: &Executor<Arc<PolicyRegistry>>,
    request: Request,
) -> Vec<u128> {
    let start = Instant::now();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&sent);
    executor
        .run(request, move |attempt| {
            seen.lock().unwrap().push(start.elapsed().as_millis());
            async move {
                if attempt.copy() == 0 {
                    std::future::pending::<()>().await;
                }
                Ok::<_, Failure<&str>>(())
            }
        })
        .await
        .unwrap();
    let sent = sent.lock().unwrap().clone();
    sent
}

/// An authority whose attempts answered in 20–29 ms is hedged after its 95th percentile
/// (within a bucket's 6.25 % above it); one never seen after the ceiling; the status counts
/// the authorities kept.
#[tokio::test(start_paused = true)]
async fn a_copy_goes_after_the_authority_s_observed_percentile() {
    let speculative =
        "{ percentile = 95, min_delay_ms = 5, max_delay_ms = 400, max_executions = 2 }";
    let registry = Arc::new(PolicyRegistry::new(parse(&config(speculative)).unwrap()).unwrap());
    let executor = Executor::new(Arc::clone(&registry));
    answered_in_20_to_29_ms(&executor, || get("fast.example")).await;
    let fast = copies_of_a_stalled_request(&executor, "fast.example").await;
    assert_eq!(fast.len(), 2, "{fast:?}");
    assert!(
        (29..=31).contains(&fast[1]),
        "the copy went at {} ms",
        fast[1]
    );
    let unknown = copies_of_a_stalled_request(&executor, "new.example").await;
    assert_eq!(unknown, [0, 400]);
    let latencies = registry.status().latencies;
    assert_eq!(latencies.keys, 2, "{latencies:?}");
}

/// Bad settings are refused naming the field: a percentile outside (0, 100), a floor above the
/// ceiling, a quantile delay without its ceiling, both kinds of delay, neither.
#[test]
fn bad_quantile_delays_are_refused_naming_the_field() {
    for (speculative, field, says) in [
        (
            "{ percentile = 100, max_delay_ms = 9, max_executions = 2 }",
            "percentile",
            "above 0 and below 100",
        ),
        (
            "{ percentile = 0, max_delay_ms = 9, max_executions = 2 }",
            "percentile",
            "above 0 and below 100",
        ),
        (
            "{ percentile = 95, min_delay_ms = 10, max_delay_ms = 9, max_executions = 2 }",
            "min_delay_ms",
            "above max_delay_ms",
        ),
        (
            "{ percentile = 95, max_executions = 2 }",
            "max_delay_ms",
            "missing",
        ),
        (
            "{ delay_ms = 5, percentile = 95, max_delay_ms = 9, max_executions = 2 }",
            "delay_ms",
            "one kind of delay",
        ),
        ("{ max_executions = 2 }", "delay_ms", "missing"),
        (
            "{ percentile = 95, max_delay_ms = 9, max_executions = 7 }",
            "max_executions",
            "expected 1 to 5",
        ),
    ] {
        let error = parse(&config(speculative)).unwrap_err();
        assert_eq!(
            error.field,
            format!("policies.reads.speculative_execution.{field}"),
            "{speculative}: {error}"
        );
        assert!(error.message.contains(says), "{speculative}: {error}");
        assert_eq!(error.line, 6, "{error}");
    }
}

/// `host.observed-latency-ms` (`wit/policy.wit` 0.6.0): a WebAssembly policy deciding a hedge
/// reads the percentile the host observed for the request's authority when its policy records
/// latencies (`record_latencies`): `hedge_echo` with `percentile = 95` sends its copy after
/// that, rounded up to whole milliseconds; without `record_latencies` it reads none and waits
/// its own `delay_ms`, 4 s.
#[tokio::test(start_paused = true)]
async fn a_webassembly_policy_reads_the_observed_percentile_while_deciding_a_hedge() {
    for record in [true, false] {
        let ws = crate::registry_support::Workspace::new();
        ws.install("policy.wasm", "hedge_echo");
        ws.config(&format!(
            "default_policy = \"p\"\n[watch]\nenabled = false\n[policies.p]\n\
             component = \"policy.wasm\"\nrecord_latencies = {record}\n\
             params = {{ percentile = \"95\", delay_ms = \"4000\", copies = \"2\" }}\n"
        ));
        let registry = Arc::new(ws.registry());
        let executor = Executor::new(Arc::clone(&registry));
        answered_in_20_to_29_ms(&executor, || get("fast.example")).await;
        let sent = copies_of_a_stalled_request(&executor, "fast.example").await;
        match record {
            true => assert!((29..=32).contains(&sent[1]), "the copy went at {sent:?}"),
            false => assert_eq!(sent, [0, 4_000]),
        }
    }
}

/// The `grpc` built-in's `hedging_delay` (docs/http-and-grpc.md): its `hedgingPolicy` copies go
/// after the authority's observed percentile instead of the config's `hedgingDelay` (here
/// 10 s), its other rules kept (`maxAttempts` 2: one copy); a bad one is refused naming the
/// field.
#[tokio::test(start_paused = true)]
async fn the_grpc_built_in_hedges_after_the_observed_percentile() {
    let policy = |delay: &str| {
        format!(
            "default_policy = \"p\"\n[watch]\nenabled = false\n[policies.p]\nbuiltin = \"grpc\"\n\
             params.hedging_delay = {delay}\n\
             params.service_config = '''{{\"methodConfig\": [{{\"name\": [{{\"service\": \"shop.Inventory\"}}], \
             \"hedgingPolicy\": {{\"maxAttempts\": 2, \"hedgingDelay\": \"10s\"}}}}]}}'''\n"
        )
    };
    let good = "{ percentile = 95, min_delay_ms = 5, max_delay_ms = 4000 }";
    let registry = Arc::new(PolicyRegistry::new(parse(&policy(good)).unwrap()).unwrap());
    let executor = Executor::new(Arc::clone(&registry));
    let call = || {
        Request::new(1, RequestType::Grpc, MS(5_000))
            .unwrap()
            .with_route("/shop.Inventory/Get")
            .with_authority("inventory:443")
            .with_idempotent(true)
            .with_start(Instant::now().into_std())
    };
    answered_in_20_to_29_ms(&executor, call).await;
    let sent = copies_of_stalled(&executor, call()).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!((29..=31).contains(&sent[1]), "the copy went at {sent:?}");
    let bad = "{ percentile = 100, max_delay_ms = 9 }";
    let error = parse(&policy(bad)).unwrap_err();
    assert!(error.field.ends_with("hedging_delay.percentile"), "{error}");
}
