//! Compiling ahead of the debounce: the watcher starts compiling a changed component file on
//! its first event, while it waits for the file to stay quiet, and the reload that follows
//! picks the machine code up (waiting for it if the compile is still running) instead of
//! compiling again. Each content is compiled at most once at a time, whoever asks first.
//! `EarlyCompiles` is the watcher's thread that starts these compiles.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::policy_registry::PolicyRegistry;
use super::watch::{spawn, WatchError};
use crate::wasm::{ArtifactCache, MachineCode, WasmRuntime};

/// How long machine code compiled ahead waits for the reload that would use it. Content
/// replaced again before its reload (a partial write, say) is dropped after this.
const UNCLAIMED_FOR: Duration = Duration::from_secs(10);

type Compiled = Arc<OnceLock<Result<MachineCode, String>>>;

/// Machine code compiled (or being compiled) ahead, by component sha256.
#[derive(Default)]
pub(crate) struct CompileAhead {
    entries: Mutex<HashMap<[u8; 32], (Instant, Compiled)>>,
}

impl CompileAhead {
    fn entry(&self, sha256: &[u8; 32]) -> Compiled {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        entries.retain(|_, (since, compiled)| {
            compiled.get().is_none() || now.duration_since(*since) < UNCLAIMED_FOR
        });
        Arc::clone(
            &entries
                .entry(*sha256)
                .or_insert_with(|| (now, Compiled::default()))
                .1,
        )
    }

    /// Compiles `bytes` (sha256 `sha256`) for a reload expected soon, unless it is compiled
    /// or being compiled already. Returns whether it compiled now.
    pub(crate) fn prepare(
        &self,
        runtime: &WasmRuntime,
        bytes: &[u8],
        sha256: &[u8; 32],
        cache: Option<&ArtifactCache>,
    ) -> bool {
        let mut compiled_now = false;
        self.entry(sha256).get_or_init(|| {
            compiled_now = true;
            MachineCode::obtain(runtime, bytes, sha256, cache)
        });
        compiled_now
    }

    /// The machine code of `bytes` (sha256 `sha256`): what was compiled ahead, waiting for a
    /// compile in progress, or compiled now. The entry is used up.
    pub(crate) fn take(
        &self,
        runtime: &WasmRuntime,
        bytes: &[u8],
        sha256: &[u8; 32],
        cache: Option<&ArtifactCache>,
    ) -> Result<MachineCode, String> {
        let compiled = self.entry(sha256);
        let code = compiled
            .get_or_init(|| MachineCode::obtain(runtime, bytes, sha256, cache))
            .clone();
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(sha256);
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    fn sha(bytes: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::digest(bytes).into()
    }

    #[test]
    fn a_reload_uses_what_was_compiled_ahead_once() {
        let runtime = WasmRuntime::new(1 << 20).unwrap();
        let ahead = CompileAhead::default();
        let sha = sha(EMPTY_COMPONENT);
        assert!(ahead.prepare(&runtime, EMPTY_COMPONENT, &sha, None));
        assert!(
            !ahead.prepare(&runtime, EMPTY_COMPONENT, &sha, None),
            "the same content is not compiled twice"
        );
        // Taken with other bytes under the same hash: the code compiled ahead is returned, so
        // nothing was compiled here (garbage would not compile).
        assert!(ahead.take(&runtime, b"garbage", &sha, None).is_ok());
        // Used up: a second take compiles what it is given.
        assert!(ahead.take(&runtime, b"garbage", &sha, None).is_err());
    }

    #[test]
    fn a_failed_compile_ahead_reports_the_same_error_to_the_reload() {
        let runtime = WasmRuntime::new(1 << 20).unwrap();
        let ahead = CompileAhead::default();
        let sha = sha(b"half a file");
        assert!(ahead.prepare(&runtime, b"half a file", &sha, None));
        let error = ahead
            .take(&runtime, b"half a file", &sha, None)
            .err()
            .unwrap();
        assert!(
            error.contains("magic") || error.contains("header"),
            "{error}"
        );
    }
}

/// The watcher's early-compile thread: compiles each changed component file as soon as it
/// changes. Dropping it tells the thread to stop, without waiting.
#[derive(Debug)]
pub(super) struct EarlyCompiles {
    changed: Sender<Option<PathBuf>>,
}

impl EarlyCompiles {
    /// Starts the thread, compiling ahead for `registry`.
    pub(super) fn start(registry: &Arc<PolicyRegistry>) -> Result<Self, WatchError> {
        let (changed, paths) = mpsc::channel();
        let registry = Arc::clone(registry);
        spawn("rebound-compile", move || compile_loop(&registry, &paths))?;
        Ok(EarlyCompiles { changed })
    }

    /// Where the watcher sends the paths that changed.
    pub(super) fn sender(&self) -> Sender<Option<PathBuf>> {
        self.changed.clone()
    }
}

impl Drop for EarlyCompiles {
    fn drop(&mut self) {
        let _ = self.changed.send(None);
    }
}

/// The early-compile thread's loop, taking only the latest of a burst of events.
fn compile_loop(registry: &PolicyRegistry, paths: &Receiver<Option<PathBuf>>) {
    while let Ok(Some(first)) = paths.recv() {
        let mut burst = BTreeSet::from([first]);
        for next in paths.try_iter() {
            match next {
                Some(path) => burst.insert(path),
                None => return,
            };
        }
        for path in &burst {
            (registry.reload_path).contain("compiling ahead", || registry.compile_ahead(path));
        }
    }
}
