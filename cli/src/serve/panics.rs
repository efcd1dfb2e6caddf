//! A panic on a request's path must cost that request only: its client is answered a JSON 500,
//! the server keeps serving, and the log gets a bounded line (the location and the first
//! [`LOGGED_CHARS`](super::app::LOGGED_CHARS) characters of the message, no backtrace, at
//! most [`PANIC_LINES_PER_SECOND`]) instead of a backtrace per request that a client could
//! repeat. Every panic is counted (`rebound_panics_total`).

use std::any::Any;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use prometheus_client::metrics::counter::Counter;
use rebound::LogRateLimit;
use tower_http::catch_panic::CatchPanicLayer;

use super::app::cut;
use crate::wire::output;

/// Panic lines a second: what a client able to cause one on every request can add to the log.
pub const PANIC_LINES_PER_SECOND: u32 = 5;

/// Replaces the process's panic hook: each panic is counted in `panics` and logged as one
/// bounded line, at most [`PANIC_LINES_PER_SECOND`] (the next says how many were left out).
pub fn count_and_log(panics: Counter) {
    let lines = Arc::new(LogRateLimit::new(PANIC_LINES_PER_SECOND));
    std::panic::set_hook(Box::new(move |info| {
        panics.inc();
        if let Some(left_out) = lines.allow() {
            let location = info
                .location()
                .map_or_else(String::new, |at| format!("{}:{}", at.file(), at.line()));
            let message = message(info.payload());
            tracing::error!(%location, message = cut(message), left_out, "panic");
        }
    }));
}

/// The text a panic was raised with, or a placeholder for another payload.
fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "(a payload that is not text)"
    }
}

/// The layer that answers a request whose handler panicked: a JSON 500.
pub fn answered_as_500() -> CatchPanicLayer<fn(Box<dyn Any + Send>) -> Response> {
    CatchPanicLayer::custom(internal_error as fn(Box<dyn Any + Send>) -> Response)
}

fn internal_error(_payload: Box<dyn Any + Send>) -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(output::input_error(
            "",
            "the server failed answering this request; it is counted in rebound_panics_total",
            None,
        )),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;

    /// SECURITY.md "Clients of `rebound serve`": a handler that panics answers its client a
    /// JSON 500 and the router goes on answering.
    #[tokio::test]
    async fn a_panicking_handler_answers_a_json_500_and_the_router_serves_on() {
        async fn boom() -> &'static str {
            panic!("{}", "x".repeat(100_000))
        }
        let router = Router::new()
            .route("/boom", get(boom))
            .route("/fine", get(|| async { "fine" }))
            .layer(answered_as_500());
        let request = |path: &str| axum::http::Request::get(path).body(Body::empty()).unwrap();
        let answer = router.clone().oneshot(request("/boom")).await.unwrap();
        assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(answer.into_body(), 4096)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rebound_panics_total"));
        let answer = router.oneshot(request("/fine")).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
    }

    /// A panic's line carries its message cut to the logged length, whatever it was raised
    /// with.
    #[test]
    fn a_panic_message_is_read_from_either_payload_and_cut() {
        let long = "y".repeat(10_000);
        let payload: Box<dyn Any + Send> = Box::new(long.clone());
        assert_eq!(message(&*payload), long);
        let logged = cut(message(&*payload));
        assert!(logged.chars().count() <= super::super::app::LOGGED_CHARS + 1);
        let payload: Box<dyn Any + Send> = Box::new("static");
        assert_eq!(message(&*payload), "static");
        let payload: Box<dyn Any + Send> = Box::new(7_u8);
        assert_eq!(message(&*payload), "(a payload that is not text)");
    }
}
