//! What the tonic layer adds, in one run, with the built-in best-effort policy: a call answered
//! UNAVAILABLE then OK — its body kept, the status read, decided, waited for and sent again —
//! through the layer, beside an empty tower layer doing the same buffering and the same one
//! retry without deciding, the same loop written by hand over the registry, and the decision
//! itself; a call answered OK at once through each layer; both through the layer whose policy
//! cuts attempts after 1 s (never reached), beside the floor of that: one tokio timer armed
//! around an answer. The answers come from a service without a network (Trailers-Only answers), and the
//! runtime's clock is paused (tokio's auto-advance) so that neither a socket nor the planned
//! wait is what is measured. Run: `env -u RUST_BACKTRACE cargo bench -p rebound-tonic --bench
//! overhead`.

use std::convert::Infallible;
use std::future::{poll_fn, Future, Ready};
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rebound::grpc::GrpcCode;
use rebound::registry::PolicyRegistry;
use rebound::{Decision, DecisionContext, Outcome, Request, RequestType, RetryReason};
use rebound_tonic::ReboundLayer;
use tonic::body::Body;
use tower_service::Service;

#[path = "../../../host/benches/support/builtin_registry.rs"]
mod builtin_registry;
#[path = "../../../host/benches/support/measure.rs"]
mod measure;
use builtin_registry::{builtin_registry, builtin_registry_with};
use measure::measure_interleaved;

const METHOD: &str = "/shop.Inventory/Get";

/// The service without a network: UNAVAILABLE to a call's first attempt (one that carries no
/// `grpc-previous-rpc-attempts`), OK to a retry; OK always if `always_ok`.
#[derive(Clone, Copy)]
struct Answers {
    always_ok: bool,
}

impl Service<http::Request<Body>> for Answers {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Ready<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let retry = req.headers().contains_key("grpc-previous-rpc-attempts");
        let status = if self.always_ok || retry { "0" } else { "14" };
        let answer = http::Response::builder()
            .header("content-type", "application/grpc")
            .header("grpc-status", status)
            .body(Body::empty())
            .expect("a valid answer");
        std::future::ready(Ok(answer))
    }
}

/// A unary call's request: one length-prefixed message.
fn call() -> http::Request<Body> {
    let message = Bytes::from_static(b"\0\0\0\0\x08order-17");
    http::Request::builder()
        .method("POST")
        .uri(format!("http://inventory:50051{METHOD}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Body::new(Full::new(message)))
        .expect("a valid call")
}

/// Attempt `attempt` of the call `parts` and `bytes` keep: a copy, with the attempt count on
/// a retry.
fn attempt_of(parts: &http::request::Parts, bytes: &Bytes, attempt: u32) -> http::Request<Body> {
    let mut parts = parts.clone();
    if attempt > 0 {
        parts
            .headers
            .insert("grpc-previous-rpc-attempts", attempt.into());
    }
    http::Request::from_parts(parts, Body::new(Full::new(bytes.clone())))
}

/// The loop a caller writes around the registry with the layer's buffering: keep the body,
/// send a copy, read a Trailers-Only status, decide, wait, send again with the attempt count.
async fn by_hand(mut inner: Answers, registry: &PolicyRegistry, id: u64) -> http::Response<Body> {
    let (parts, body) = call().into_parts();
    let bytes = body.collect().await.expect("the body").to_bytes();
    let mut request = Request::new(id, RequestType::Grpc, Duration::from_secs(30))
        .unwrap()
        .with_route(METHOD)
        .with_authority("inventory:50051")
        .with_idempotent(true);
    let mut attempt = 0u32;
    loop {
        let Ok(response) = inner.call(attempt_of(&parts, &bytes, attempt)).await;
        request.mark_dispatched("inventory:50051");
        let status = response.headers()["grpc-status"].to_str().unwrap();
        if status == "0" {
            let outcome = Outcome::Succeeded {
                attempts: attempt + 1,
            };
            (registry.controls(&request)).report(&request, outcome, Instant::now());
            return response;
        }
        let reason = RetryReason::GrpcStatus(GrpcCode::Unavailable);
        let decided = registry
            .decide(&mut request, &DecisionContext::new(&reason))
            .await
            .unwrap();
        match decided.decision {
            Decision::Retry(plan) => tokio::time::sleep(plan.delay).await,
            _ => panic!("best effort retries an idempotent call's UNAVAILABLE"),
        }
        attempt += 1;
    }
}

/// An empty tower layer's service doing the layer's buffering: the body kept, a copy sent, a
/// Trailers-Only failure sent again once after best effort's first delay, with the attempt
/// count — no decision.
#[derive(Clone)]
struct Buffering(Answers);

impl Service<http::Request<Body>> for Buffering {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let clone = self.0;
        let mut inner = std::mem::replace(&mut self.0, clone);
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes = body.collect().await.expect("the body").to_bytes();
            let mut attempt = 0u32;
            loop {
                let response = inner.call(attempt_of(&parts, &bytes, attempt)).await?;
                if attempt > 0 || response.headers()["grpc-status"] == "0" {
                    return Ok(response);
                }
                Box::pin(tokio::time::sleep(Duration::from_millis(1))).await;
                attempt += 1;
            }
        })
    }
}

/// One call through `service`, made ready first.
async fn through<S>(service: &mut S) -> http::Response<Body>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Error: std::fmt::Debug,
{
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    service.call(call()).await.unwrap()
}

fn main() {
    let registry: Arc<PolicyRegistry> = builtin_registry("best-effort");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let layer = ReboundLayer::new(Arc::clone(&registry)).idempotent([METHOD]);
    let mut layered = tower_layer::Layer::layer(&layer, Answers { always_ok: false });
    let mut layered_ok = tower_layer::Layer::layer(&layer, Answers { always_ok: true });
    // The same layer whose policy cuts attempts after 1 s (never reached).
    let armed = builtin_registry_with("best-effort", "attempt_timeout_ms = 1000");
    let armed = ReboundLayer::new(armed).idempotent([METHOD]);
    let mut layered_armed = tower_layer::Layer::layer(&armed, Answers { always_ok: false });
    let mut layered_armed_ok = tower_layer::Layer::layer(&armed, Answers { always_ok: true });
    let mut buffering = Buffering(Answers { always_ok: false });
    let mut buffering_ok = Buffering(Answers { always_ok: true });
    let ids = AtomicU64::new(1);
    let reason = RetryReason::GrpcStatus(GrpcCode::Unavailable);
    let ok = |response: http::Response<Body>| {
        assert_eq!(black_box(response).headers()["grpc-status"], "0");
    };
    let times = measure_interleaved(
        31,
        5_000,
        &mut [
            &mut || {
                let mut request = Request::new(1, RequestType::Grpc, Duration::from_secs(30))
                    .unwrap()
                    .with_route(METHOD)
                    .with_idempotent(true);
                request.mark_dispatched("inventory:50051");
                let context = DecisionContext::new(&reason);
                let decided = runtime.block_on(registry.decide(&mut request, &context));
                let _ = black_box(decided.unwrap());
            },
            &mut || {
                let id = ids.fetch_add(1, Ordering::Relaxed);
                ok(runtime.block_on(by_hand(Answers { always_ok: false }, &registry, id)));
            },
            &mut || ok(runtime.block_on(through(&mut layered))),
            &mut || ok(runtime.block_on(through(&mut buffering))),
            &mut || ok(runtime.block_on(through(&mut buffering_ok))),
            &mut || ok(runtime.block_on(through(&mut layered_ok))),
            &mut || {
                let mut request = Request::new_at(
                    7,
                    RequestType::Grpc,
                    Duration::from_secs(30),
                    Instant::now(),
                )
                .unwrap()
                .with_route(METHOD)
                .with_authority("inventory:50051")
                .with_idempotent(true);
                request.mark_dispatched("inventory:50051".to_owned());
                drop(black_box(request));
            },
            &mut || ok(runtime.block_on(through(&mut layered_armed))),
            &mut || ok(runtime.block_on(through(&mut layered_armed_ok))),
            // The floor of any attempt timeout: a tokio timer armed around an attempt that
            // answers at once, boxed as the layer boxes it, beside the attempt alone.
            &mut || {
                ok(runtime
                    .block_on(Answers { always_ok: true }.call(call()))
                    .unwrap())
            },
            &mut || {
                let timed = runtime.block_on(async {
                    let answered = Answers { always_ok: true }.call(call());
                    Box::pin(tokio::time::timeout(Duration::from_secs(1), answered)).await
                });
                ok(timed.unwrap().unwrap());
            },
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    let (decision, by_hand, layer, empty) =
        (ns(times[0]), ns(times[1]), ns(times[2]), ns(times[3]));
    println!("| a call answered UNAVAILABLE then OK (1 thread) | ns | over the decision |");
    println!("| --- | ---: | ---: |");
    println!("| the decision (registry asked directly) | {decision:.0} | 1.00 |");
    println!(
        "| the loop by hand over the registry (2 sends, 1 decision, 1 wait) | {by_hand:.0} | {:.2} |",
        by_hand / decision
    );
    println!(
        "| an empty tower layer doing the same buffering and one retry, no decision | {empty:.0} | {:.2} |",
        empty / decision
    );
    println!(
        "| through the layer | {layer:.0} | {:.2} |",
        layer / decision
    );
    println!(
        "| what the layer adds beyond the empty layer and the decision | {:.0} | {:.2} |",
        layer - empty - decision,
        (layer - empty - decision) / decision
    );
    let describe = ns(times[6]);
    println!(
        "| of which describing the call (a `Request` with its route and authority, marked sent) | {describe:.0} | {:.2} |",
        describe / decision
    );
    println!(
        "| what the layer adds beyond the empty layer, the decision and the description | {:.0} | {:.2} |",
        layer - empty - decision - describe,
        (layer - empty - decision - describe) / decision
    );
    let (empty_ok, layer_ok) = (ns(times[4]), ns(times[5]));
    println!(
        "| a call answered OK at once: the empty layer, the layer, the difference | {empty_ok:.0}, {layer_ok:.0}, {:.0} | {:.2} |",
        layer_ok - empty_ok,
        (layer_ok - empty_ok) / decision
    );
    let (armed, armed_ok) = (ns(times[7]), ns(times[8]));
    println!(
        "| through the layer, its policy cutting attempts after 1 s (never reached): what that adds, and its share of what the layer adds over the empty layer | {:.0} | {:.2} ({:.0} %) |",
        armed - layer,
        (armed - layer) / decision,
        (armed - layer) / (layer - empty) * 100.0
    );
    println!(
        "| the same for a call answered OK at once (the call is then described and its policy's controls asked) | {:.0} | {:.2} |",
        armed_ok - layer_ok,
        (armed_ok - layer_ok) / decision
    );
    let (bare, timed) = (ns(times[9]), ns(times[10]));
    println!(
        "| the floor: a tokio timer armed around one answer, boxed, over the answer alone | {:.0} | {:.2} |",
        timed - bare,
        (timed - bare) / decision
    );
}
