//! The scylla driver's retry policy from a Rebound registry: built, set on an execution
//! profile, and asked what the driver asks when a request fails — runnable without a cluster.
//! Run: `cargo run -p rebound-scylla --example retry_policy`.

use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_scylla::ReboundRetryPolicy;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::errors::{DbError, RequestAttemptError, WriteType};
use scylla::statement::Consistency;

const CONFIG: &str = r#"
default_policy = "cassandra"
cache_dir = false
[watch]
enabled = false
[policies.cassandra]
builtin = "cassandra-default"
[policies.downgrading]
builtin = "cassandra-downgrading-consistency"
[profiles.relaxed]
policy = "downgrading"
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An application reads its file with `PolicyRegistry::from_file` and calls `watch()`
    // on the registry to hot-swap policies; the configuration is inline here.
    let config = RegistryConfig::parse(CONFIG, "rebound.toml".as_ref(), ".".as_ref())?;
    let registry = Arc::new(PolicyRegistry::new(config)?);
    let strict = ReboundRetryPolicy::new(Arc::clone(&registry))?;
    let relaxed = ReboundRetryPolicy::new(Arc::clone(&registry))?.profile("relaxed")?;

    // What a session is handed to: the driver's execution profiles.
    let _profile = ExecutionProfile::builder()
        .retry_policy(Arc::new(relaxed.clone()))
        .build();

    let failures = [
        (
            "UNAVAILABLE at QUORUM, 1 of 2 replicas alive",
            RequestAttemptError::DbError(
                DbError::Unavailable {
                    consistency: Consistency::Quorum,
                    required: 2,
                    alive: 1,
                },
                String::new(),
            ),
        ),
        (
            "WRITE_TIMEOUT of a simple write, 1 of 2 acknowledged",
            RequestAttemptError::DbError(
                DbError::WriteTimeout {
                    consistency: Consistency::Quorum,
                    received: 1,
                    required: 2,
                    write_type: WriteType::Simple,
                },
                String::new(),
            ),
        ),
        (
            "a coordinator that is overloaded",
            RequestAttemptError::DbError(DbError::Overloaded, String::new()),
        ),
    ];
    for (what, error) in &failures {
        for (name, policy) in [("cassandra-default", &strict), ("downgrading", &relaxed)] {
            let decision = policy.session().decide(error, true, Consistency::Quorum);
            println!("{what}: {name} says {decision:?}");
        }
    }
    Ok(())
}
