//! Helpers the adapters' tests share (included with `#[path]`): the guests
//! `scripts/build-guests.sh` built, and a policy file watched by a registry whose decision log
//! says which versions decided — what each adapter's hot-swap test needs.
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rebound::decision_log::{DecisionLog, DecisionLogConfig};
use rebound::registry::{PolicyRegistry, RegistryWatcher};

/// The component `name` built by `scripts/build-guests.sh`.
pub(crate) fn guest(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../build/guests")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build the guests first with ./scripts/build-guests.sh (./scripts/test.sh does)",
        path.display()
    );
    path
}

/// A decision-log sink in memory.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Policy `p`, the component file `policy.wasm` in a scratch directory, watched (20 ms
/// debounce) by a registry that logs every decision in memory.
pub(crate) struct WatchedPolicy {
    dir: tempfile::TempDir,
    /// The registry deciding with it.
    pub registry: Arc<PolicyRegistry>,
    _watcher: Option<RegistryWatcher>,
    lines: Lines,
    first: String,
}

impl WatchedPolicy {
    /// Policy `p` built from guest `name`.
    pub(crate) fn new(name: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(guest(name), dir.path().join("policy.wasm")).unwrap();
        let config = dir.path().join("rebound.toml");
        std::fs::write(
            &config,
            "default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = true\ndebounce_ms = 20\n\
             [policies.p]\ncomponent = \"policy.wasm\"\n",
        )
        .unwrap();
        let registry = Arc::new(PolicyRegistry::from_file(&config).unwrap());
        let watcher = registry.watch().unwrap();
        let lines = Lines::default();
        let log = DecisionLog::to_writer(&DecisionLogConfig::default(), lines.clone());
        registry.set_decision_log(Some(log));
        let first = registry.active("p").unwrap().version().to_owned();
        WatchedPolicy {
            dir,
            registry,
            _watcher: watcher,
            lines,
            first,
        }
    }

    /// Replaces the policy file with guest `name` (written beside it, then renamed over it, as
    /// a deployment does) and waits until the registry serves the new version.
    pub(crate) fn replace_with(&self, name: &str) {
        let file = self.dir.path().join("policy.wasm");
        let replacement = self.dir.path().join("policy.wasm.new");
        std::fs::copy(guest(name), &replacement).unwrap();
        std::fs::rename(&replacement, &file).unwrap();
        let started = Instant::now();
        while self.registry.active("p").unwrap().version() == self.first {
            assert!(started.elapsed() < Duration::from_secs(60), "no reload");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The versions that decided, from the decision log (closed first, so it has written every
    /// line), and the first and current versions of the policy.
    pub(crate) fn versions_logged(&self) -> (BTreeSet<String>, String, String) {
        self.registry.set_decision_log(None);
        let text = String::from_utf8(self.lines.0.lock().unwrap().clone()).unwrap();
        let versions = text
            .lines()
            .map(|line| {
                let line: serde_json::Value = serde_json::from_str(line).unwrap();
                line["version"].as_str().unwrap().to_owned()
            })
            .collect();
        let current = self.registry.active("p").unwrap().version().to_owned();
        (versions, self.first.clone(), current)
    }

    /// Asserts that the first and the replacing version both decided.
    pub(crate) fn assert_both_versions_decided(&self) {
        let (versions, first, current) = self.versions_logged();
        assert_ne!(first, current, "the file was reloaded");
        assert!(
            versions.contains(&first) && versions.contains(&current),
            "{versions:?}"
        );
    }
}
