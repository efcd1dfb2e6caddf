//! The middleware on a reqwest client: a views request answered 503, then 200, by a local
//! server this example starts, retried as Rebound's best effort decides.
//! Run: `cargo run -p rebound-reqwest --example views_retry`; `cargo test` runs it too.

use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound::Service;
use rebound_reqwest::ReboundMiddleware;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

const CONFIG: &str = r#"
default_policy = "standard"
cache_dir = false
[watch]
enabled = false
[policies.standard]
builtin = "best-effort"
"#;

/// The views request, against a fresh server: its status, body and the attempts it took.
async fn run() -> Result<(u16, String, usize), Box<dyn std::error::Error>> {
    // A views endpoint that is briefly unavailable.
    let server = MockServer::start().await;
    Mock::given(path("/default/_design/dev/_view/by_name"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(path("/default/_design/dev/_view/by_name"))
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"rows":[]}"#))
        .mount(&server)
        .await;

    let config = RegistryConfig::parse(CONFIG, "rebound.toml".as_ref(), ".".as_ref())?;
    let registry = Arc::new(PolicyRegistry::new(config)?);
    let inner = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none()) // views redirects are answers to classify
        .build()?;
    let client = reqwest_middleware::ClientBuilder::new(inner)
        .with(ReboundMiddleware::new(registry))
        .build();
    let response = client
        .get(format!(
            "{}/default/_design/dev/_view/by_name",
            server.uri()
        ))
        .with_extension(Service::Views)
        .send()
        .await?;
    let attempts = server.received_requests().await.unwrap_or_default().len();
    Ok((response.status().as_u16(), response.text().await?, attempts))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (status, body, attempts) = run().await?;
    println!("{status} after {attempts} attempts: {body}");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Reference 001 "Response Code Retry List", views: a 503 is retried, the 200 answers.
    #[tokio::test]
    async fn the_view_is_answered_after_one_retry() {
        let answered = super::run().await.unwrap();
        assert_eq!(answered, (200, r#"{"rows":[]}"#.to_owned(), 2));
    }
}
