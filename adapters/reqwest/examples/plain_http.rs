//! The middleware on a plain HTTP API (RFC 9110), decided by the `http` built-in tuned in a
//! configuration: a GET answered 503 is retried after the policy's backoff; a POST answered 503
//! is handed back after one attempt, since the server may have applied it; the same POST
//! carrying an `Idempotency-Key`, which this API honours, is declared idempotent by the
//! application and retried, its key handed to the policy's client context.
//! Run: `cargo run -p rebound-reqwest --example plain_http`; `cargo test` runs it too.

use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_reqwest::{Idempotent, ReboundMiddleware};
use reqwest_middleware::ClientWithMiddleware;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The `http` built-in, backing off 5 to 50 ms, for every request.
const CONFIG: &str = r#"
default_policy = "api"
cache_dir = false
[watch]
enabled = false
[policies.api]
builtin = "http"
params = { initial_ms = 5, max_ms = 50 }
"#;

/// A server answering 503 to the first request of each method and path, then 200 or 201.
async fn server() -> MockServer {
    let server = MockServer::start().await;
    for (verb, at, then) in [("GET", "/items/17", 200), ("POST", "/orders", 201)] {
        Mock::given(method(verb))
            .and(path(at))
            .respond_with(ResponseTemplate::new(503))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method(verb))
            .and(path(at))
            .respond_with(ResponseTemplate::new(then))
            .mount(&server)
            .await;
    }
    server
}

fn client() -> Result<ClientWithMiddleware, Box<dyn std::error::Error>> {
    let config = RegistryConfig::parse(CONFIG, "rebound.toml".as_ref(), ".".as_ref())?;
    let registry = Arc::new(PolicyRegistry::new(config)?);
    let middleware =
        ReboundMiddleware::new(registry).context_header("Idempotency-Key", "idempotency-key")?;
    Ok(
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(middleware)
            .build(),
    )
}

/// The three requests, each against a fresh server: its final status and the attempts the
/// server saw.
async fn run() -> Result<Vec<(&'static str, u16, usize)>, Box<dyn std::error::Error>> {
    let client = client()?;
    let mut seen = Vec::new();
    for what in ["GET", "POST", "POST with a key"] {
        let server = server().await;
        let response = match what {
            "GET" => {
                client
                    .get(format!("{}/items/17", server.uri()))
                    .send()
                    .await?
            }
            "POST" => {
                client
                    .post(format!("{}/orders", server.uri()))
                    .send()
                    .await?
            }
            _ => {
                (client.post(format!("{}/orders", server.uri())))
                    .header("Idempotency-Key", "order-17")
                    .with_extension(Idempotent(true))
                    .send()
                    .await?
            }
        };
        let attempts = server.received_requests().await.unwrap_or_default().len();
        seen.push((what, response.status().as_u16(), attempts));
    }
    Ok(seen)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (what, status, attempts) in run().await? {
        println!("{what}: {status} after {attempts} attempt(s)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// RFC 9110 §9.2.2 through the middleware: the GET and the keyed POST are retried, the
    /// bare POST is not.
    #[tokio::test]
    async fn gets_and_keyed_posts_are_retried_and_bare_posts_are_not() {
        let seen = super::run().await.unwrap();
        assert_eq!(
            seen,
            [
                ("GET", 200, 2),
                ("POST", 503, 1),
                ("POST with a key", 201, 2)
            ]
        );
    }
}
