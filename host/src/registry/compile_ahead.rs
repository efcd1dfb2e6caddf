//! Compiling ahead of the debounce: the watcher starts compiling a changed component file on
//! its first event, while it waits for the file to stay quiet, and the reload that follows
//! picks the machine code up (waiting for it if the compile is still running) instead of
//! compiling again. Each content is compiled at most once at a time, whoever asks first.
//! The watcher's thread that starts these compiles is `watch::EarlyCompiles`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::wasm::{ArtifactCache, MachineCode, WasmRuntime, EngineError};

/// How long machine code compiled ahead waits for the reload that would use it. Content
/// replaced again before its reload (a partial write, say) is dropped after this.
const UNCLAIMED_FOR: Duration = Duration::from_secs(10);

type Compiled = Arc<OnceLock<Result<MachineCode, EngineError>>>;

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
    ) -> Result<MachineCode, EngineError> {
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
            {
                let error = error.to_string();
                error.contains("magic") || error.contains("header")
            },
            "{error}"
        );
    }
}
