//! A tonic channel with Rebound's layer, against a local `shop.Inventory` server that answers
//! UNAVAILABLE, then RESOURCE_EXHAUSTED with a 300 ms pushback, then OK: the call is retried
//! twice by the `grpc` built-in (gRFC A6) and answered. Run:
//! `cargo run -p rebound-tonic --example inventory_retry`.

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    let started = Instant::now();
    let answer = client
        .unary(
            tonic::Request::new(b"order-17".to_vec()),
            PathAndQuery::from_static("/shop.Inventory/Get"),
            Raw,
        )
        .await?;
    println!(
        "answered {:?} after {} attempts in {} ms",
        String::from_utf8_lossy(answer.get_ref()),
        server.script.seen().len(),
        started.elapsed().as_millis()
    );
    for (n, (method, headers)) in server.script.seen().iter().enumerate() {
        let previous = headers
            .get("grpc-previous-rpc-attempts")
            .map_or("none", |v| v.to_str().unwrap_or("?"));
        println!(
            "attempt {}: {method}, grpc-previous-rpc-attempts {previous}",
            n + 1
        );
    }
    Ok(())
}
