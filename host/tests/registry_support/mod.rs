//! Helpers for the registry tests: a scratch directory holding copies of built guests and a
//! configuration file, and deciding synchronously through a registry.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rebound::config::RegistryConfig;
use rebound::registry::{Decided, PolicyRegistry};
use rebound::{DecisionContext, Request, RequestType, RetryReason};
use sha2::{Digest, Sha256};

pub(crate) use crate::wasm_support::{guest, released, released_versions, runtime};

/// A scratch directory for policy files and a configuration.
pub(crate) struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        Workspace {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    /// The path of `file` in the workspace.
    pub(crate) fn path(&self, file: &str) -> PathBuf {
        std::path::absolute(self.dir.path().join(file)).unwrap()
    }

    /// Copies guest `name` to `file`.
    pub(crate) fn install(&self, file: &str, name: &str) -> PathBuf {
        let path = self.path(file);
        std::fs::copy(guest(name), &path).expect("copy guest");
        path
    }

    /// Writes the configuration file `rebound.toml`.
    pub(crate) fn config(&self, text: &str) -> PathBuf {
        let path = self.path("rebound.toml");
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// The configuration file, read and validated.
    pub(crate) fn load_config(&self) -> RegistryConfig {
        RegistryConfig::load(&self.path("rebound.toml")).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A registry for the configuration file, in the shared runtime; every policy must load
    /// (a strict start).
    pub(crate) fn registry(&self) -> PolicyRegistry {
        let mut config = self.load_config();
        config.strict_start = true;
        PolicyRegistry::with_runtime(config, runtime().clone()).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The sha256 (hex) of guest `name`: the hash a version loaded from it reports.
pub(crate) fn guest_hash(name: &str) -> String {
    let bytes = std::fs::read(guest(name)).unwrap();
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fresh request of `ty` with a 2.5 s timeout.
pub(crate) fn request(ty: RequestType) -> Request {
    Request::new(1, ty, Duration::from_millis(2500)).unwrap()
}

/// Decides through the registry, synchronously.
pub(crate) fn decide(
    registry: &PolicyRegistry,
    mut request: Request,
    reason: &RetryReason,
) -> Decided {
    futures::executor::block_on(registry.decide(&mut request, &DecisionContext::new(reason)))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until `check` holds, polling; panics after `limit` naming `what`.
pub(crate) fn wait_for(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The active version's hash of policy `name`.
pub(crate) fn active_hash(registry: &PolicyRegistry, name: &str) -> String {
    registry.active(name).unwrap().hash().to_owned()
}
