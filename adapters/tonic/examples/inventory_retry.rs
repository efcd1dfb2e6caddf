//! A tonic channel with Rebound's layer, against a local `shop.Inventory` server that answers
//! UNAVAILABLE, then RESOURCE_EXHAUSTED with a 300 ms pushback, then OK: the call is retried
//! twice by the `grpc` built-in (gRFC A6) and answered. Run:
//! `cargo run -p rebound-tonic --example inventory_retry`; `cargo test` runs it too.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use http::uri::PathAndQuery;
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_tonic::ReboundLayer;
use support::{start, Answer, Raw, Script};
use tonic::Code;

const CONFIG: &str = r#"
default_policy = "inventory"
cache_dir = false
[watch]
enabled = false

[policies.inventory]
builtin = "grpc"
params.service_config = '''
{"methodConfig": [{
  "name": [{"service": "shop.Inventory"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}
}]}
'''
"#;

/// The call, against a fresh server: its answer, and each attempt the server saw with its
/// `grpc-previous-rpc-attempts`.
async fn run() -> Result<(Vec<u8>, Vec<String>), Box<dyn std::error::Error>> {
    let server = start(Script::new([
        Answer::Fail(Code::Unavailable, None),
        Answer::Fail(Code::ResourceExhausted, Some("300")),
    ]))
    .await;
    let config = RegistryConfig::parse(CONFIG, Path::new("rebound.toml"), Path::new("."))?;
    let registry = Arc::new(PolicyRegistry::new(config)?);
    let layer = ReboundLayer::new(registry).idempotent(["/shop.Inventory/Get"]);
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", server.relay))?.connect_lazy();
    let mut client = tonic::client::Grpc::new(tower_layer::Layer::layer(&layer, channel));
    client.ready().await.map_err(|e| e.to_string())?;
    let answer = client
        .unary(
            tonic::Request::new(b"order-17".to_vec()),
            PathAndQuery::from_static("/shop.Inventory/Get"),
            Raw,
        )
        .await?;
    let previous = (server.script.seen().iter())
        .map(|(_, headers)| {
            let previous = headers.get("grpc-previous-rpc-attempts");
            previous
                .map_or("none", |v| v.to_str().unwrap_or("?"))
                .to_owned()
        })
        .collect();
    Ok((answer.into_inner(), previous))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let (answer, previous) = run().await?;
    println!(
        "answered {:?} after {} attempts in {} ms",
        String::from_utf8_lossy(&answer),
        previous.len(),
        started.elapsed().as_millis()
    );
    for (n, previous) in previous.iter().enumerate() {
        println!(
            "attempt {}: /shop.Inventory/Get, grpc-previous-rpc-attempts {previous}",
            n + 1
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// gRFC A6 "Exposed Retry Metadata": two retries, each telling the attempts before it.
    #[tokio::test]
    async fn the_call_is_answered_after_two_retries() {
        let (answer, previous) = super::run().await.unwrap();
        assert_eq!(answer, b"order-17");
        assert_eq!(previous, ["none", "1", "2"]);
    }
}
