//! `[source.xds]`: where an xDS control plane is and what to ask it for. Read with the rest of
//! the registry configuration; the client that follows it (feature `xds`, `rebound::xds::ads`)
//! runs in `rebound serve` (docs/xds.md "The xDS source").

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::field_error::FieldError;

/// The longest connect and request timeout, in milliseconds.
const MAX_TIMEOUT_MS: u64 = 600_000;

/// An xDS source as configured.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct XdsSourceConfig {
    /// The management server, `http://host:port` (plaintext gRPC).
    pub server: String,
    /// The node id the client announces.
    pub node_id: String,
    /// The node's cluster.
    #[serde(default)]
    pub node_cluster: String,
    /// The node's metadata, strings by key.
    #[serde(default)]
    pub node_metadata: BTreeMap<String, String>,
    /// The route configurations to watch (RDS resource names), in the order their routes
    /// match.
    pub route_configurations: Vec<String>,
    /// How long connecting may take, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    5_000
}

impl XdsSourceConfig {
    /// Checks what the types cannot: the field and what was expected.
    pub fn validate(&self) -> Result<(), FieldError> {
        let authority = (self.server.strip_prefix("http://"))
            .map(|rest| rest.trim_end_matches('/'))
            .filter(|a| !a.is_empty() && !a.contains(['/', ' ', '?', '#']));
        let port_ok = authority
            .and_then(|a| a.rsplit_once(':'))
            .is_none_or(|(_, port)| port.parse::<u16>().is_ok());
        if authority.is_none() || !port_ok {
            return Err(FieldError::new(
                "server",
                format!("expected `http://host:port`, found `{}`", self.server),
            ));
        }
        if self.node_id.is_empty() {
            return Err(FieldError::new("node_id", "must not be empty"));
        }
        if self.route_configurations.is_empty()
            || self.route_configurations.iter().any(String::is_empty)
        {
            return Err(FieldError::new(
                "route_configurations",
                "expected the names of one or more route configurations",
            ));
        }
        if !(1..=MAX_TIMEOUT_MS).contains(&self.timeout_ms) {
            return Err(FieldError::new(
                "timeout_ms",
                format!("expected 1 to {MAX_TIMEOUT_MS}, found {}", self.timeout_ms),
            ));
        }
        Ok(())
    }
}
