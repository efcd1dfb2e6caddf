//! The middleware's attempt spans, in a test binary of their own: tracing works out a
//! callsite's interest once for every thread, so a test on another thread that reached the
//! span's callsite while this test's subscriber was being set could leave it disabled here.

mod registries;

use std::sync::Arc;

use rebound::registry::PolicyRegistry;
use rebound_reqwest::ReboundMiddleware;
use registries::http_registry;
use reqwest_middleware::ClientWithMiddleware;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A client with the middleware.
fn client(registry: Arc<PolicyRegistry>) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ReboundMiddleware::new(registry))
        .build()
}

/// The decision on a failed attempt runs in its `rebound.attempt` span (docs/observability.md)
/// with OpenTelemetry's HTTP attributes: a GET answered 503 twice, then 200, gives two spans,
/// `error.type` the status code, `http.request.method`, and `http.request.resend_count` on the
/// resent attempt only; the registry names the policy and the decision in them.
#[tokio::test]
async fn each_decision_runs_in_the_span_of_the_attempt_it_decides_for() {
    #[derive(Clone, Default)]
    struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    // This test's thread only: the current-thread runtime runs the request on it.
    let _subscriber = tracing::subscriber::set_default(subscriber);
    let server = MockServer::start().await;
    Mock::given(path("/items"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(path("/items"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let response = client(http_registry())
        .get(format!("{}/items", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let spans: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rebound.attempt{") && l.contains("spans: close "))
        .collect();
    assert_eq!(spans.len(), 2, "{text}");
    for span in &spans {
        assert!(span.contains("http.request.method=\"GET\""), "{span}");
        assert!(span.contains("error.type=503"), "{span}");
        assert!(span.contains("rebound.policy=\"web\""), "{span}");
        assert!(span.contains("rebound.decision=\"retry\""), "{span}");
    }
    assert!(!spans[0].contains("resend_count"), "{}", spans[0]);
    assert!(
        spans[1].contains("http.request.resend_count=1"),
        "{}",
        spans[1]
    );
}
