//! The Couchbase SDK's retry strategy from a Rebound registry, asked what the SDK asks when an
//! operation fails — runnable without a cluster.
//! Run: `cargo run -p rebound-couchbase --example strategy`.

use std::sync::Arc;

use couchbase_core::retry::{RetryReason, RetryStrategy};
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_couchbase::ReboundRetryStrategy;

const CONFIG: &str = r#"
default_policy = "standard"
cache_dir = false
[watch]
enabled = false
[policies.standard]
builtin = "best-effort"
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = RegistryConfig::parse(CONFIG, "rebound.toml".as_ref(), ".".as_ref())?;
    let registry = Arc::new(PolicyRegistry::new(config)?);
    let strategy = ReboundRetryStrategy::new(registry);
    for (reason, idempotent) in [
        (RetryReason::KvLocked, false),
        (RetryReason::SocketClosedWhileInFlight, false),
        (RetryReason::SocketClosedWhileInFlight, true),
        (RetryReason::QueryIndexNotFound, true),
    ] {
        for attempts in [0, 3] {
            let action = strategy.decide(idempotent, attempts, reason);
            let answer = action.map_or("do not retry".to_owned(), |a| {
                format!("retry after {:?}", a.duration)
            });
            println!("{reason} (idempotent: {idempotent}, {attempts} retries so far): {answer}");
        }
    }
    // What the SDK's options take (`retry_strategy`): a strategy object.
    let _: Arc<dyn RetryStrategy> = Arc::new(strategy);
    Ok(())
}
