//! The middleware on a reqwest client: a views request answered 503, then 200, by a local
//! server this example starts, retried as Rebound's best effort decides.
//! Run: `cargo run -p rebound-reqwest --example views_retry`.

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

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    println!(
        "{} after {attempts} attempts: {}",
        response.status(),
        response.text().await?
    );
    Ok(())
}
