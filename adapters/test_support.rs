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

/// A registry whose default policy is the guest `name`, its file read in place, not watched.
pub(crate) fn component_registry(name: &str) -> Arc<PolicyRegistry> {
    let text = format!(
        "default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.p]\ncomponent = {:?}\n",
        guest(name).display().to_string()
    );
    let config =
        rebound::config::RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref())
            .unwrap();
    Arc::new(PolicyRegistry::new(config).unwrap())
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

/// Every decision a registry makes from now on, logged in memory.
pub(crate) struct LoggedDecisions {
    registry: Arc<PolicyRegistry>,
    lines: Lines,
}

impl LoggedDecisions {
    /// Logs `registry`'s decisions, every one of them.
    pub(crate) fn of(registry: &Arc<PolicyRegistry>) -> Self {
        let lines = Lines::default();
        let log = DecisionLog::to_writer(&DecisionLogConfig::default(), lines.clone());
        registry.set_decision_log(Some(log));
        LoggedDecisions {
            registry: Arc::clone(registry),
            lines,
        }
    }

    /// The lines logged, the log closed first so that it has written every line it took.
    pub(crate) fn lines(self) -> Vec<serde_json::Value> {
        self.registry.set_decision_log(None);
        let text = String::from_utf8(self.lines.0.lock().unwrap().clone()).unwrap();
        (text.lines())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Policy `p`, the component file `policy.wasm` in a scratch directory, watched (20 ms
/// debounce) by a registry that logs every decision in memory: one log until the file is
/// replaced, a fresh one from the moment the new version serves. A log drops lines its writer
/// has no room for, so a log that filled up before the swap still records the decisions after
/// it.
pub(crate) struct WatchedPolicy {
    dir: tempfile::TempDir,
    /// The registry deciding with it.
    pub registry: Arc<PolicyRegistry>,
    _watcher: Option<RegistryWatcher>,
    before: Lines,
    after: Lines,
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
        let before = Lines::default();
        let log = DecisionLog::to_writer(&DecisionLogConfig::default(), before.clone());
        registry.set_decision_log(Some(log));
        let first = registry.active("p").unwrap().version().to_owned();
        WatchedPolicy {
            dir,
            registry,
            _watcher: watcher,
            before,
            after: Lines::default(),
            first,
        }
    }

    /// Replaces the policy file with guest `name` (written beside it, then renamed over it, as
    /// a deployment does), waits until the registry serves the new version, then logs to a
    /// fresh log.
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
        let log = DecisionLog::to_writer(&DecisionLogConfig::default(), self.after.clone());
        self.registry.set_decision_log(Some(log));
    }

    /// The versions that decided, from the decision logs before and after the swap (closed
    /// first, so each has written every line it took).
    fn versions_logged(&self) -> (BTreeSet<String>, BTreeSet<String>) {
        self.registry.set_decision_log(None);
        let versions = |lines: &Lines| {
            let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
            text.lines()
                .map(|line| {
                    let line: serde_json::Value = serde_json::from_str(line).unwrap();
                    line["version"].as_str().unwrap().to_owned()
                })
                .collect()
        };
        (versions(&self.before), versions(&self.after))
    }

    /// Asserts that the first version decided before the swap, the replacing version after
    /// it, and that no other version was logged.
    pub(crate) fn assert_both_versions_decided(&self) {
        let current = self.registry.active("p").unwrap().version().to_owned();
        assert_ne!(self.first, current, "the file was reloaded");
        let (before, after) = self.versions_logged();
        assert!(before.contains(&self.first), "before the swap: {before:?}");
        assert!(after.contains(&current), "after the swap: {after:?}");
        let known = BTreeSet::from([self.first.clone(), current]);
        assert!(
            before.union(&after).all(|version| known.contains(version)),
            "{before:?} {after:?}"
        );
    }
}
