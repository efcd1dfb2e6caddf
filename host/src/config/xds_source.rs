//! `[source.xds]`: where an xDS control plane is and what to ask it for. Read with the rest of
//! the registry configuration; the client that follows it (feature `xds`, `rebound::xds::ads`)
//! runs in `rebound serve` (docs/xds.md "The xDS source").

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::field_error::FieldError;

/// The longest connect and request timeout, in milliseconds.
const MAX_TIMEOUT_MS: u64 = 600_000;

/// An xDS source as configured.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct XdsSourceConfig {
    /// The management server: `http://host:port` (plaintext gRPC) or `https://host:port` (TLS).
    pub server: String,
    /// With an `https://` server: the CA certificates (PEM) that verify it; without, the
    /// system's roots. Relative to the configuration file.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// With an `https://` server: the client's certificate chain (PEM), for a server that asks
    /// for one (mutual TLS); with `key_file`.
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    /// The private key (PEM) of `cert_file`.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// With an `https://` server: the name its certificate is checked against, when not the
    /// server's host.
    #[serde(default)]
    pub server_name: Option<String>,
    /// The node id the client announces.
    pub node_id: String,
    /// The node's cluster.
    #[serde(default)]
    pub node_cluster: String,
    /// The node's metadata, strings by key.
    #[serde(default)]
    pub node_metadata: BTreeMap<String, String>,
    /// The listeners to watch (LDS resource names, gRPC's API listeners), whose route
    /// configurations match first, in this order.
    #[serde(default)]
    pub listeners: Vec<String>,
    /// The route configurations to watch (RDS resource names), in the order their routes
    /// match, after the listeners'.
    #[serde(default)]
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
        let tls = self.server.starts_with("https://");
        let authority = (self.server.strip_prefix("http://"))
            .or(self.server.strip_prefix("https://"))
            .map(|rest| rest.trim_end_matches('/'))
            .filter(|a| !a.is_empty() && !a.contains(['/', ' ', '?', '#']));
        let port_ok = authority
            .and_then(|a| a.rsplit_once(':'))
            .is_none_or(|(_, port)| port.parse::<u16>().is_ok());
        if authority.is_none() || !port_ok {
            return Err(FieldError::new(
                "server",
                format!(
                    "expected `http://host:port` or `https://host:port`, found `{}`",
                    self.server
                ),
            ));
        }
        let tls_fields = [
            ("ca_file", self.ca_file.is_some()),
            ("cert_file", self.cert_file.is_some()),
            ("key_file", self.key_file.is_some()),
            ("server_name", self.server_name.is_some()),
        ];
        if let Some((field, _)) = tls_fields.iter().find(|(_, set)| *set && !tls) {
            return Err(FieldError::new(
                *field,
                "applies to TLS: write the server as `https://host:port`",
            ));
        }
        if self.cert_file.is_some() != self.key_file.is_some() {
            let missing = if self.cert_file.is_some() {
                "key_file"
            } else {
                "cert_file"
            };
            return Err(FieldError::new(
                missing,
                "cert_file and key_file go together (the client's certificate and its key)",
            ));
        }
        if self.node_id.is_empty() {
            return Err(FieldError::new("node_id", "must not be empty"));
        }
        if self.listeners.is_empty() && self.route_configurations.is_empty() {
            return Err(FieldError::new(
                "route_configurations",
                "expected the names of one or more listeners or route configurations to watch",
            ));
        }
        for (field, names) in [
            ("listeners", &self.listeners),
            ("route_configurations", &self.route_configurations),
        ] {
            if names.iter().any(String::is_empty) {
                return Err(FieldError::new(field, "holds an empty name"));
            }
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

impl XdsSourceConfig {
    /// The files named relative to `base`, each checked readable: the field and why not.
    pub(super) fn resolve_files(&mut self, base: &std::path::Path) -> Result<(), FieldError> {
        for (field, file) in [
            ("ca_file", &mut self.ca_file),
            ("cert_file", &mut self.cert_file),
            ("key_file", &mut self.key_file),
        ] {
            if let Some(path) = file {
                *path = base.join(&*path);
                std::fs::metadata(&*path)
                    .map_err(|e| FieldError::new(field, format!("{}: {e}", path.display())))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::RegistryConfig;

    fn refused(source: &str, base: &Path) -> String {
        let text = format!(
            "default_policy = \"p\"\n[policies.p]\nbuiltin = \"fail-fast\"\n[source.xds]\n\
             node_id = \"n\"\nroute_configurations = [\"r\"]\n{source}"
        );
        RegistryConfig::parse(&text, Path::new("rebound.toml"), base)
            .expect_err("refused")
            .to_string()
    }

    /// docs/xds.md "The xDS source" and "TLS": each field checked, the error naming it and
    /// what was expected; the TLS files resolved against the configuration's directory and
    /// read when it loads.
    #[test]
    fn a_bad_xds_source_is_refused_naming_its_field() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        for (source, expected) in [
            (
                "server = \"127.0.0.1:1\"",
                "source.xds.server: expected `http://host:port` or `https://host:port`",
            ),
            ("server = \"http://h:99999\"", "source.xds.server"),
            (
                "server = \"http://h:1\"\ntimeout_ms = 0",
                "source.xds.timeout_ms: expected 1 to 600000",
            ),
            (
                "server = \"http://h:1\"\nca_file = \"ca.pem\"",
                "source.xds.ca_file: applies to TLS: write the server as `https://host:port`",
            ),
            (
                "server = \"http://h:1\"\nserver_name = \"x\"",
                "source.xds.server_name: applies to TLS",
            ),
            (
                "server = \"https://h:1\"\ncert_file = \"c.pem\"",
                "source.xds.key_file: cert_file and key_file go together",
            ),
            (
                "server = \"https://h:1\"\nca_file = \"missing.pem\"",
                "source.xds.ca_file: ",
            ),
        ] {
            let error = refused(source, base);
            assert!(error.contains(expected), "{source}: {error}");
        }
        std::fs::write(base.join("ca.pem"), "").unwrap();
        let text = "default_policy = \"p\"\n[policies.p]\nbuiltin = \"fail-fast\"\n[source.xds]\n\
             server = \"https://h:1\"\nnode_id = \"n\"\nroute_configurations = [\"r\"]\nca_file = \"ca.pem\"\n";
        let config = RegistryConfig::parse(text, Path::new("rebound.toml"), base).unwrap();
        assert_eq!(config.xds.unwrap().ca_file, Some(base.join("ca.pem")));
    }
}
