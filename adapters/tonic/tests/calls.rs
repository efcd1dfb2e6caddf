//! The tonic layer end to end (docs/http-and-grpc.md "The tonic layer", gRFC A6): a real tonic
//! server the test starts answers a scripted list per method, reached through a TCP relay the
//! test can cut; the client is tonic's own `client::Grpc` over a channel with the layer.

mod bodies;
mod client_context;
mod support;
#[path = "../../test_support.rs"]
mod test_support;
mod xds_routes;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::uri::PathAndQuery;
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_tonic::ReboundLayer;
use support::{start, start_refusing, Answer, Raw, Running, Script};
use tonic::{Code, Status};

/// A registry whose default policy is the `grpc` built-in for `shop.Inventory`: 4 attempts,
/// 10 ms doubling, UNAVAILABLE and RESOURCE_EXHAUSTED retried.
fn registry() -> Arc<PolicyRegistry> {
    registry_with("builtin = \"grpc\"\nparams.service_config = '''{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Inventory\"}], \"retryPolicy\": {\"maxAttempts\": 4, \"initialBackoff\": \"0.01s\", \"maxBackoff\": \"0.05s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\", \"RESOURCE_EXHAUSTED\"]}}]}'''\n")
}

fn registry_with(policy: &str) -> Arc<PolicyRegistry> {
    Arc::new(PolicyRegistry::new(config(policy)).unwrap())
}

fn config(policy: &str) -> RegistryConfig {
    let text = format!(
        "default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = false\n[policies.p]\n{policy}"
    );
    RegistryConfig::parse(&text, Path::new("rebound.toml"), Path::new(".")).unwrap()
}

/// A client over a channel to `running`'s relay, with `layer`.
fn client(
    running: &Running,
    layer: ReboundLayer,
) -> tonic::client::Grpc<rebound_tonic::Rebound<tonic::transport::Channel>> {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", running.relay))
        .unwrap()
        .connect_lazy();
    let channel = tower_layer::Layer::layer(&layer, endpoint);
    tonic::client::Grpc::new(channel)
}

async fn unary(
    client: &mut tonic::client::Grpc<rebound_tonic::Rebound<tonic::transport::Channel>>,
    method: &'static str,
    timeout: Option<Duration>,
) -> Result<Vec<u8>, Status> {
    client
        .ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let mut request = tonic::Request::new(b"order-17".to_vec());
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    let path = PathAndQuery::from_static(method);
    client
        .unary(request, path, Raw)
        .await
        .map(|r| r.into_inner())
}

fn previous_attempts(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get("grpc-previous-rpc-attempts")
        .map(|v| v.to_str().unwrap().to_owned())
}

/// A6 "Retry Policy Capabilities", "Exposed Retry Metadata": UNAVAILABLE then OK on a method
/// declared idempotent is retried once and answers OK; the retry carries
/// `grpc-previous-rpc-attempts: 1`, the first none.
#[tokio::test]
async fn unavailable_then_ok_is_retried_with_the_attempt_count() {
    let running = start(Script::new([Answer::Fail(Code::Unavailable, None)])).await;
    let layer = ReboundLayer::new(registry()).idempotent(["/shop.Inventory/*"]);
    let answer = unary(&mut client(&running, layer), "/shop.Inventory/Get", None).await;
    assert_eq!(answer.unwrap(), b"order-17");
    let seen = running.script.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(previous_attempts(&seen[0].1), None);
    assert_eq!(previous_attempts(&seen[1].1).as_deref(), Some("1"));
}

/// gRFC A96 `grpc.client.call.retries` and `grpc.client.call.retry_delay` through the layer:
/// a call answered UNAVAILABLE twice, then OK, records 2 retries and the time it waited: the
/// nominal 10 + 20 ms, each times A6's jitter `random(0.8, 1.2)` (docs/observability.md).
#[tokio::test]
async fn a_retried_call_records_its_retries_and_their_delay() {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // This test's thread only: the current-thread runtime runs the call on it.
    let _local = metrics::set_default_local_recorder(&recorder);
    rebound::telemetry::enable();
    let unavailable = Answer::Fail(Code::Unavailable, None);
    let running = start(Script::new([unavailable, unavailable])).await;
    let layer = ReboundLayer::new(registry()).idempotent(["/shop.Inventory/*"]);
    let answer = unary(&mut client(&running, layer), "/shop.Inventory/Get", None).await;
    assert_eq!(answer.unwrap(), b"order-17");
    let mut recorded: Vec<(String, Vec<f64>)> = (snapshotter.snapshot().into_vec().into_iter())
        .filter_map(|(key, _, _, value)| match value {
            metrics_util::debugging::DebugValue::Histogram(values) => Some((
                key.key().name().to_owned(),
                values.into_iter().map(|v| v.into_inner()).collect(),
            )),
            _ => None,
        })
        .collect();
    recorded.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(
        recorded[0],
        (rebound::telemetry::REQUEST_RETRIES.to_owned(), vec![2.0])
    );
    assert_eq!(recorded[1].0, rebound::telemetry::REQUEST_RETRY_DELAY);
    let [delay] = recorded[1].1[..] else {
        panic!("{recorded:?}")
    };
    assert!((0.024..=0.036).contains(&delay), "{delay}");
}

/// A6 "Pushback": RESOURCE_EXHAUSTED with `grpc-retry-pushback-ms: 200` is retried after
/// 200 ms (the policy's own backoff is 10 ms); with `-1` it is not retried and the status comes
/// back to the caller.
#[tokio::test]
async fn a_pushback_is_waited_and_a_negative_one_ends_retries() {
    let running = start(Script::new([
        Answer::Fail(Code::ResourceExhausted, Some("200")),
        Answer::Ok,
        Answer::Fail(Code::ResourceExhausted, Some("-1")),
    ]))
    .await;
    let layer = ReboundLayer::new(registry()).idempotent(["/shop.Inventory/Get"]);
    let mut client = client(&running, layer);
    let started = Instant::now();
    assert!(unary(&mut client, "/shop.Inventory/Get", None)
        .await
        .is_ok());
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
    let stopped = unary(&mut client, "/shop.Inventory/Get", None)
        .await
        .unwrap_err();
    assert_eq!(stopped.code(), Code::ResourceExhausted);
    assert_eq!(running.script.seen().len(), 3);
}

/// docs/decisions.md "Retries of HTTP requests and gRPC calls": a call not declared idempotent
/// whose connection is cut after it was written is never sent again (the server saw it once);
/// the same cut on a method declared idempotent is retried and answered.
#[tokio::test]
async fn a_call_cut_off_in_flight_is_sent_again_only_if_idempotent() {
    let running = start(Script::new([Answer::Hang, Answer::Hang, Answer::Ok])).await;
    let answer = cut_while_in_flight(&running, "/shop.Inventory/Reserve").await;
    // The call has ended: any attempt the layer made was made before it did.
    assert!(answer.is_err(), "{answer:?}");
    let sent = running.script.seen().len();
    assert_eq!(sent, 1, "a non-idempotent call sent again");
    let answer = cut_while_in_flight(&running, "/shop.Inventory/Get").await;
    assert_eq!(answer.unwrap(), b"order-17");
    let seen = running.script.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(previous_attempts(&seen[2].1).as_deref(), Some("1"));
}

/// gRFC A6 "When Retries are Valid": a call whose response headers arrived is committed, and a
/// failure after them (UNAVAILABLE in the trailers, no message) is never retried, though the
/// policy retries UNAVAILABLE and the method is declared idempotent.
#[tokio::test]
async fn a_call_that_fails_after_its_headers_is_committed_and_not_retried() {
    let answers = [Answer::FailAfterHeaders(Code::Unavailable), Answer::Ok];
    let running = start(Script::new(answers)).await;
    let layer = ReboundLayer::new(registry()).idempotent(["/shop.Inventory/*"]);
    let answer = unary(&mut client(&running, layer), "/shop.Inventory/Get", None).await;
    assert_eq!(answer.unwrap_err().code(), Code::Unavailable);
    assert_eq!(
        running.script.seen().len(),
        1,
        "a committed call sent again"
    );
}

/// gRFC A6 "Transparent Retries": a stream the server's transport refused (`RST_STREAM` with
/// `REFUSED_STREAM`) never reached its application, so it is sent again once, at once, even for
/// a call not declared idempotent under a service config with no retry policy; a second refusal
/// is the policy's to decide (none: the call ends).
#[tokio::test]
async fn a_refused_stream_is_sent_again_once_whatever_the_policy() {
    let no_retry_policy = "builtin = \"grpc\"\nparams.service_config = '''{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Inventory\"}]}]}'''\n";
    for refusals in [1, 2] {
        let (address, seen) = start_refusing(refusals, Code::Unavailable).await;
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
            .unwrap()
            .connect_lazy();
        let layer = ReboundLayer::new(registry_with(no_retry_policy));
        let channel = tower_layer::Layer::layer(&layer, endpoint);
        let mut client = tonic::client::Grpc::new(channel);
        let answer = unary(&mut client, "/shop.Inventory/Reserve", None).await;
        assert_eq!(
            answer.unwrap_err().code(),
            Code::Unavailable,
            "{refusals} refused"
        );
        let seen = seen.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(seen, 2, "{refusals} refused");
    }
}

/// A6 "Maximum Number of Retries": the call's deadline applies across all attempts. A call
/// with a 10 s deadline answered UNAVAILABLE every time ends UNAVAILABLE after its 4 attempts;
/// the first carries the caller's `grpc-timeout`, each retry the time left, below the one
/// before.
#[tokio::test]
async fn the_deadline_is_kept_and_shrunk_on_each_retry() {
    let running = start(Script::new(
        [Answer::Fail(Code::Unavailable, None); 4].to_vec(),
    ))
    .await;
    let layer = ReboundLayer::new(registry()).idempotent(["/shop.Inventory/*"]);
    let answer = unary(
        &mut client(&running, layer),
        "/shop.Inventory/Get",
        Some(Duration::from_secs(10)),
    )
    .await;
    assert_eq!(answer.unwrap_err().code(), Code::Unavailable);
    let timeouts: Vec<u64> = running
        .script
        .seen()
        .iter()
        .map(|(_, headers)| millis(headers["grpc-timeout"].to_str().unwrap()))
        .collect();
    assert_eq!(timeouts.len(), 4);
    assert!(timeouts[0] <= 10_000, "{timeouts:?}");
    assert!(timeouts.windows(2).all(|w| w[1] < w[0]), "{timeouts:?}");
}

/// A call of `method` over a new channel (`/shop.Inventory/Get` declared idempotent), the
/// relay cut once the server has it: what the call ends with.
async fn cut_while_in_flight(running: &Running, method: &'static str) -> Result<Vec<u8>, Status> {
    let layer = ReboundLayer::new(registry()).idempotent(["/shop.Inventory/Get"]);
    let mut client = client(running, layer);
    let call = unary(&mut client, method, None);
    let cut = async {
        running.script.arrived.notified().await;
        running.cut.notify_waiters();
    };
    tokio::join!(call, cut).0
}

/// A `grpc-timeout` value in milliseconds (gRPC over HTTP/2: digits and a unit).
fn millis(value: &str) -> u64 {
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().unwrap_or_else(|_| panic!("{value}"));
    match unit {
        "S" => n * 1000,
        "m" => n,
        "u" => n / 1000,
        "n" => n / 1_000_000,
        other => panic!("unit {other} in {value}"),
    }
}

/// The layer follows the registry's swaps: with fail-fast applied, an UNAVAILABLE comes back
/// at once; once the `grpc` built-in is applied while the same client is in use, the next call
/// is retried to its OK.
#[tokio::test]
async fn a_policy_swapped_while_calls_flow_decides_the_next_call() {
    let running = start(Script::new([
        Answer::Fail(Code::Unavailable, None),
        Answer::Fail(Code::Unavailable, None),
        Answer::Ok,
    ]))
    .await;
    let swapped = registry_with("builtin = \"fail-fast\"\n");
    let layer = ReboundLayer::new(Arc::clone(&swapped)).idempotent(["/shop.Inventory/*"]);
    let mut client = client(&running, layer);
    let failed = unary(&mut client, "/shop.Inventory/Get", None).await;
    assert_eq!(failed.unwrap_err().code(), Code::Unavailable);
    swapped.apply(registry().config()).unwrap();
    assert_eq!(
        unary(&mut client, "/shop.Inventory/Get", None)
            .await
            .unwrap(),
        b"order-17"
    );
    assert_eq!(running.script.seen().len(), 3);
}

/// A6 "Throttling Retry Attempts and Hedged RPCs" through the layer, with `retryThrottling
/// {maxTokens: 4, tokenRatio: 1}`: a burst of UNAVAILABLE takes the count to the threshold
/// and the second call is not retried at all; three calls answered OK give the tokens back
/// (the layer reports them) and the next UNAVAILABLE is retried to its OK.
#[tokio::test]
async fn throttling_engages_after_a_burst_of_failures_and_releases_after_successes() {
    let unavailable = Answer::Fail(Code::Unavailable, None);
    let running = start(Script::new([
        unavailable,
        unavailable,
        unavailable,
        Answer::Ok,
        Answer::Ok,
        Answer::Ok,
        unavailable,
        Answer::Ok,
    ]))
    .await;
    let registry = registry_with("builtin = \"grpc\"\nparams.service_config = '''{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Inventory\"}], \"retryPolicy\": {\"maxAttempts\": 5, \"initialBackoff\": \"0.01s\", \"maxBackoff\": \"0.05s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}], \"retryThrottling\": {\"maxTokens\": 4, \"tokenRatio\": 1}}'''\n");
    let layer = ReboundLayer::new(registry).idempotent(["/shop.Inventory/*"]);
    let mut client = client(&running, layer);
    let get = "/shop.Inventory/Get";
    let seen = || running.script.seen().len();
    assert_eq!(
        unary(&mut client, get, None).await.unwrap_err().code(),
        Code::Unavailable
    );
    assert_eq!(seen(), 2, "retried once, then throttled at 2 tokens");
    assert_eq!(
        unary(&mut client, get, None).await.unwrap_err().code(),
        Code::Unavailable
    );
    assert_eq!(seen(), 3, "throttled: not retried");
    for _ in 0..3 {
        assert!(unary(&mut client, get, None).await.is_ok());
    }
    assert_eq!(unary(&mut client, get, None).await.unwrap(), b"order-17");
    assert_eq!(
        seen(),
        8,
        "retried again once successes gave the tokens back"
    );
}

/// gRFC A6 "Hedging Policy" and "Exposed Retry Metadata", end to end: with `maxAttempts` 2 and
/// `hedgingDelay` 0.05 s, a first copy the server never answers loses to the second, which
/// carries `grpc-previous-rpc-attempts: 1`; the call answers OK. A method not declared
/// idempotent is never copied: its UNAVAILABLE is the answer, after one call.
/// `rebound_hedges_total` (docs/observability.md) counts the copy sent, its win and the first
/// copy cancelled. (The only test of this binary that installs a global recorder.)
#[tokio::test]
async fn a_hanging_call_is_answered_by_its_hedge_and_a_non_idempotent_one_is_not_copied() {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::set_global_recorder(recorder).expect("no other recorder in this test binary");
    rebound::telemetry::enable();
    let running = start(Script::new([
        Answer::Hang,
        Answer::Ok,
        Answer::Fail(Code::Unavailable, None),
    ]))
    .await;
    let registry = registry_with("builtin = \"grpc\"\nparams.service_config = '''{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Inventory\"}], \"hedgingPolicy\": {\"maxAttempts\": 2, \"hedgingDelay\": \"0.05s\", \"nonFatalStatusCodes\": [\"UNAVAILABLE\"]}}]}'''\n");
    let layer = ReboundLayer::new(registry).idempotent(["/shop.Inventory/Get"]);
    let mut client = client(&running, layer);
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        unary(&mut client, "/shop.Inventory/Get", None),
    )
    .await
    .expect("the hedge answers; without it the call hangs");
    assert_eq!(answer.unwrap(), b"order-17");
    let seen = running.script.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(previous_attempts(&seen[0].1), None);
    assert_eq!(previous_attempts(&seen[1].1).as_deref(), Some("1"));
    let answer = unary(&mut client, "/shop.Inventory/Reserve", None).await;
    assert_eq!(answer.unwrap_err().code(), Code::Unavailable);
    assert_eq!(running.script.seen().len(), 3, "one call, no copy");
    let mut hedges: Vec<(String, u64)> = (snapshotter.snapshot().into_vec().into_iter())
        .filter(|(key, ..)| key.key().name() == rebound::telemetry::HEDGES_TOTAL)
        .map(|(key, _, _, value)| {
            let event = key.key().labels().map(|l| l.value().to_owned()).collect();
            match value {
                metrics_util::debugging::DebugValue::Counter(n) => (event, n),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    hedges.sort();
    assert_eq!(
        hedges,
        [
            ("cancelled".to_owned(), 1),
            ("sent".to_owned(), 1),
            ("won".to_owned(), 1)
        ]
    );
}

/// docs/breakers.md through the layer, the node being the channel (the URIs the layer sees
/// carry no authority, docs/http-and-grpc.md "The tonic layer"): with a volume
/// threshold of 4, four UNAVAILABLE answers (not retried) open the breaker; the next call is
/// refused before it is sent (`CIRCUIT_BREAKER_OPEN`: the server sees nothing); once the sleep
/// window has passed, one call goes as the canary, its OK closes the breaker, and calls flow.
#[tokio::test]
async fn a_breaker_opens_on_a_failing_channel_and_a_canary_closes_it() {
    let unavailable = Answer::Fail(Code::Unavailable, None);
    let running = start(Script::new([
        unavailable,
        unavailable,
        unavailable,
        unavailable,
        Answer::Ok,
        Answer::Ok,
    ]))
    .await;
    let registry = registry_with("builtin = \"grpc\"\nbreaker = \"nodes\"\nparams.service_config = '''{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Inventory\"}], \"retryPolicy\": {\"maxAttempts\": 2, \"initialBackoff\": \"0.01s\", \"maxBackoff\": \"0.05s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"RESOURCE_EXHAUSTED\"]}}]}'''\n[breakers.nodes]\nvolume_threshold = 4\nsleep_window_ms = 300\n");
    let layer = ReboundLayer::new(Arc::clone(&registry)).idempotent(["/shop.Inventory/*"]);
    let mut client = client(&running, layer);
    let get = "/shop.Inventory/Get";
    let seen = || running.script.seen().len();
    for _ in 0..4 {
        let failed = unary(&mut client, get, None).await.unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable);
    }
    assert_eq!(seen(), 4);
    let refused = unary(&mut client, get, None).await.unwrap_err();
    assert!(
        refused.message().contains("circuit breaker open"),
        "{refused:?}"
    );
    assert_eq!(seen(), 4, "refused before it was sent");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(unary(&mut client, get, None).await.unwrap(), b"order-17");
    assert_eq!(unary(&mut client, get, None).await.unwrap(), b"order-17");
    assert_eq!(seen(), 6);
    let status = registry.status();
    assert_eq!(status.breakers[0].opened, 1, "{status:?}");
}

/// docs/http-and-grpc.md "Attempt timeouts", gRPC's `perAttemptRecvTimeout` (its codes left
/// empty, as grpc-java allows): an attempt that hangs is cut after 1 s and sent again with
/// `grpc-previous-rpc-attempts: 1`, answering long before the call's deadline; a method not
/// declared idempotent that hangs is cut and never sent twice, and the caller gets
/// DEADLINE_EXCEEDED. The hanging server would never answer.
#[tokio::test]
async fn a_hanging_attempt_is_cut_by_its_per_attempt_timeout_and_retried_if_idempotent() {
    let running = start(Script::new([Answer::Hang, Answer::Ok, Answer::Hang])).await;
    let registry = registry_with("builtin = \"grpc\"\nparams.service_config = '''{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Inventory\"}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"0.01s\", \"maxBackoff\": \"0.05s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [], \"perAttemptRecvTimeout\": \"1s\"}}]}'''\n");
    let layer = ReboundLayer::new(registry).idempotent(["/shop.Inventory/Get"]);
    let mut client = client(&running, layer);
    let start = Instant::now();
    let deadline = Some(Duration::from_secs(60));
    let answer = unary(&mut client, "/shop.Inventory/Get", deadline).await;
    assert_eq!(answer.unwrap(), b"order-17");
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "one attempt was cut"
    );
    let seen = running.script.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(previous_attempts(&seen[1].1).as_deref(), Some("1"));
    let answer = unary(&mut client, "/shop.Inventory/Reserve", deadline).await;
    assert_eq!(answer.unwrap_err().code(), Code::DeadlineExceeded);
    assert_eq!(running.script.seen().len(), 3, "sent once");
}

/// docs/hedging.md "Delays from observed latency" through the layer: a policy hedging at the
/// 95th percentile of the latencies observed (at least 20 ms, at most 60 s) learns from the
/// 70 calls the server answered at once, so a call the server never answers is hedged after tens
/// of milliseconds rather than the ceiling, and its copy answers. The test allows 30 s, half
/// the ceiling: only a delay taken from the observed latencies fits in it.
#[tokio::test]
async fn a_hanging_call_is_hedged_after_the_observed_percentile() {
    let answered = 70;
    let script = (0..answered)
        .map(|_| Answer::Ok)
        .chain([Answer::Hang, Answer::Ok]);
    let running = start(Script::new(script)).await;
    let registry = registry_with(
        "builtin = \"best-effort\"\nspeculative_execution = { percentile = 95, min_delay_ms = 20, max_delay_ms = 60000, max_executions = 2 }\n",
    );
    let layer = ReboundLayer::new(Arc::clone(&registry)).idempotent(["/shop.Inventory/Get"]);
    let mut client = client(&running, layer);
    for _ in 0..answered {
        let answer = unary(&mut client, "/shop.Inventory/Get", None).await;
        assert_eq!(answer.unwrap(), b"order-17");
    }
    assert_eq!(registry.status().latencies.keys, 1);
    let answer = tokio::time::timeout(
        Duration::from_secs(30),
        unary(&mut client, "/shop.Inventory/Get", None),
    )
    .await
    .expect("hedged after the observed percentile, not after the 60 s ceiling");
    assert_eq!(answer.unwrap(), b"order-17");
    assert_eq!(running.script.seen().len(), answered + 2);
}
