//! What the middleware adds to a decision, in one run, with the built-in
//! best-effort policy: a views request answered 503 then 200 — read, classified, decided,
//! waited for and sent again — through the middleware, beside the same loop written by hand
//! over the registry (what a caller calling the registry directly writes), and the decision
//! itself; the same through a middleware that serves the service (the request names none); and
//! what any middleware costs in `reqwest-middleware`'s chain (one that only calls the
//! next); and the middleware whose policy cuts attempts after 1 s (never reached). The answers come from a last middleware in the chain, not a network, and the runtime's
//! clock is paused (tokio's auto-advance) so that neither a socket nor the planned 1 ms wait is
//! what is measured. Run: `env -u RUST_BACKTRACE cargo bench -p rebound-reqwest --bench overhead`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use http::Extensions;
use rebound::classify::{classify, Classification, Response as Answer};
use rebound::registry::PolicyRegistry;
use rebound::{reasons, Decision, DecisionContext, HttpMethod, Request, RequestType, Service};
use rebound_reqwest::ReboundMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

#[path = "../../../host/benches/support/builtin_registry.rs"]
mod builtin_registry;
#[path = "../../../host/benches/support/measure.rs"]
mod measure;
use builtin_registry::{builtin_registry, builtin_registry_with};
use measure::measure_interleaved;

const URL: &str = "http://127.0.0.1:8092/default/_design/beers/_view/by_name";

/// How many attempts of the current request the service has answered.
#[derive(Clone, Copy)]
struct Attempts(u32);

/// The views service without a network: a 503 to a request's first attempt, a 200 after.
struct Service503Then200;

#[async_trait::async_trait]
impl Middleware for Service503Then200 {
    async fn handle(
        &self,
        _: reqwest::Request,
        extensions: &mut Extensions,
        _: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let attempts = extensions.get::<Attempts>().map_or(0, |a| a.0);
        extensions.insert(Attempts(attempts + 1));
        let (status, body) = match attempts {
            0 => (503, r#"{"error":"temporary"}"#),
            _ => (200, r#"{"rows":[]}"#),
        };
        let answer = http::Response::builder()
            .status(status)
            .body(body)
            .expect("a valid answer");
        Ok(reqwest::Response::from(answer))
    }
}

/// A middleware that only calls the next one: what any middleware costs in the chain.
struct PassThrough;

#[async_trait::async_trait]
impl Middleware for PassThrough {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        next.run(req, extensions).await
    }
}

/// One send answered 200 at once (the service told this is a later attempt) through `client`.
fn answered_200(runtime: &tokio::runtime::Runtime, client: &ClientWithMiddleware) {
    let mut extensions = Extensions::new();
    extensions.insert(Attempts(1));
    let sent = client.get(URL).build().unwrap();
    let response = runtime
        .block_on(client.execute_with_extensions(sent, &mut extensions))
        .unwrap();
    assert_eq!(black_box(response).status(), 200);
}

/// One views GET through `client`, naming its service, answered 503 then 200.
fn views_get(runtime: &tokio::runtime::Runtime, client: &ClientWithMiddleware) {
    let response = runtime
        .block_on(async { (client.get(URL).with_extension(Service::Views).send().await).unwrap() });
    assert_eq!(black_box(response).status(), 200);
}

/// The loop a caller writes around the registry: send a copy of the request, read and classify
/// a failed answer, decide, wait, send again.
async fn by_hand(
    client: &ClientWithMiddleware,
    registry: &PolicyRegistry,
    id: u64,
) -> reqwest::Response {
    let mut extensions = Extensions::new();
    let mut request = Request::new(id, RequestType::View, Duration::from_secs(75))
        .unwrap()
        .with_method(HttpMethod::Get);
    let sent = client.get(URL).build().unwrap();
    loop {
        let attempt = sent.try_clone().unwrap();
        let response = client
            .execute_with_extensions(attempt, &mut extensions)
            .await
            .unwrap();
        if response.status().is_success() {
            return response;
        }
        request.mark_dispatched(URL);
        let status = response.status().as_u16();
        let body = response.bytes().await.unwrap();
        let text = String::from_utf8_lossy(&body);
        let Classification::Retry { reason, .. } = classify(
            Answer::Views {
                status,
                body: &text,
            },
            None,
        ) else {
            panic!("a views 503 is retried");
        };
        let decided = registry
            .decide(&mut request, &DecisionContext::new(&reason))
            .await
            .unwrap();
        match decided.decision {
            Decision::Retry(plan) => tokio::time::sleep(plan.delay).await,
            _ => panic!("best effort retries a views 503"),
        }
    }
}

fn main() {
    let registry = builtin_registry("best-effort");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let plain = ClientBuilder::new(reqwest::Client::new())
        .with(Service503Then200)
        .build();
    let adapted = ClientBuilder::new(reqwest::Client::new())
        .with(ReboundMiddleware::new(Arc::clone(&registry)))
        .with(Service503Then200)
        .build();
    let serving_views = ClientBuilder::new(reqwest::Client::new())
        .with(
            ReboundMiddleware::new(Arc::clone(&registry))
                .service(Service::Views)
                .unwrap(),
        )
        .with(Service503Then200)
        .build();
    // The same middleware whose policy cuts attempts after 1 s (never reached).
    let armed = ClientBuilder::new(reqwest::Client::new())
        .with(ReboundMiddleware::new(builtin_registry_with(
            "best-effort",
            "attempt_timeout_ms = 1000",
        )))
        .with(Service503Then200)
        .build();
    let passing = ClientBuilder::new(reqwest::Client::new())
        .with(PassThrough)
        .with(Service503Then200)
        .build();
    let ids = AtomicU64::new(1);
    let reason = reasons::VIEWS_TEMPORARY_FAILURE;
    let times = measure_interleaved(
        31,
        5_000,
        &mut [
            &mut || {
                let mut request = Request::new(1, RequestType::View, Duration::from_secs(75))
                    .unwrap()
                    .with_method(HttpMethod::Get);
                request.mark_dispatched(URL);
                let context = DecisionContext::new(&reason);
                let decided = registry.decide(&mut request, &context).now_or_never();
                let _ = black_box(decided.unwrap().unwrap());
            },
            &mut || {
                let id = ids.fetch_add(1, Ordering::Relaxed);
                let response = runtime.block_on(by_hand(&plain, &registry, id));
                assert_eq!(black_box(response).status(), 200);
            },
            &mut || views_get(&runtime, &adapted),
            &mut || {
                let response =
                    runtime.block_on(async { serving_views.get(URL).send().await.unwrap() });
                assert_eq!(black_box(response).status(), 200);
            },
            &mut || answered_200(&runtime, &plain),
            &mut || answered_200(&runtime, &passing),
            &mut || views_get(&runtime, &armed),
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    let (decision, by_hand, middleware) = (ns(times[0]), ns(times[1]), ns(times[2]));
    println!("| a views GET answered 503 then 200 (1 thread) | ns | over the decision |");
    println!("| --- | ---: | ---: |");
    println!("| the decision (registry asked directly) | {decision:.0} | 1.00 |");
    println!(
        "| the loop by hand over the registry (2 sends, 1 decision, 1 wait) | {by_hand:.0} | {:.2} |",
        by_hand / decision
    );
    println!(
        "| through the middleware | {middleware:.0} | {:.2} |",
        middleware / decision
    );
    println!(
        "| what the middleware adds (middleware - by hand) | {:.0} | {:.2} |",
        middleware - by_hand,
        (middleware - by_hand) / decision
    );
    let serving = ns(times[3]);
    println!(
        "| through a middleware serving the service (no extension per request) | {serving:.0} | {:.2} |",
        serving / decision
    );
    println!(
        "| what that middleware adds (it - by hand) | {:.0} | {:.2} |",
        serving - by_hand,
        (serving - by_hand) / decision
    );
    let (alone, layered) = (ns(times[4]), ns(times[5]));
    println!(
        "| a send answered 200, then one through a middleware that only calls the next: the difference | {:.0} | {:.2} |",
        layered - alone,
        (layered - alone) / decision
    );
    let armed = ns(times[6]);
    println!(
        "| through the middleware, its policy cutting attempts after 1 s (never reached): what that adds, and its share of what the middleware adds | {:.0} | {:.2} ({:.0} %) |",
        armed - middleware,
        (armed - middleware) / decision,
        (armed - middleware) / (middleware - by_hand) * 100.0
    );
}
