//! The compiled-artifact cache: components compiled by wasmtime, kept on disk so that a policy
//! seen before (after a restart, or swapped back in) loads without compiling again.
//!
//! An entry is keyed by the component's sha256 and a digest of the engine's compatibility
//! hash, which covers the wasmtime version (its `module_version`), the target, the compiler
//! flags and every configuration setting compilation depends on. An entry is the host's own
//! file: a magic line, the component's sha256 and the engine's digest (so an entry is bound to
//! what it was compiled from, whatever its file name), a sha256 over those and the payload, and
//! wasmtime's serialised component. An entry whose binding does not match what is asked for
//! (another component's entry renamed into place, another engine's), whose sha256 fails (torn,
//! damaged, rewritten), that another user owns or may write, or that wasmtime refuses, is
//! deleted and the component compiled again. The sha256 costs about 23 ms for a Python
//! runtime's 40 MB entry, against seconds of compiling.
//!
//! Loading native code from disk is only as safe as the directory it comes from, so the
//! cache refuses a directory that another user owns or that others may write to.
//!
//! The entries' total size is bounded (`max_bytes`): after an entry is written, the entries
//! used least recently (an entry's modification time is moved on at every hit) are deleted
//! until the rest fit, the new one kept.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

const MAGIC: &[u8] = b"rebound-artifact-v3\n";
/// After the magic line: the component's sha256, the engine's digest, then the sha256 of the
/// magic line, those two and the payload.
const HEADER_LEN: usize = 32 + 32 + 32;

/// The sha256 an entry carries: over the magic line, the binding and the payload.
fn entry_digest(component_sha256: &[u8; 32], engine: &[u8; 32], payload: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(MAGIC);
    hasher.update(component_sha256);
    hasher.update(engine);
    hasher.update(payload);
    hasher.finalize().into()
}

/// Why the cache directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The directory could not be created or inspected.
    #[error("compiled-artifact cache {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The directory is not private to this user.
    #[error("compiled-artifact cache {path} is unsafe: {problem}; it holds native code the host loads, so it must be owned by this user and writable by no one else")]
    Unsafe {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// Cache counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct CacheStats {
    /// Components loaded from an entry.
    pub hits: u64,
    /// Components compiled because no entry existed.
    pub misses: u64,
    /// Entries deleted as corrupt or foreign.
    pub discarded: u64,
    /// Entries written.
    pub writes: u64,
    /// Entries deleted to keep the cache within its size limit (least recently used first).
    pub evicted: u64,
}

/// The on-disk cache of compiled components for one engine configuration.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    /// The digest of the engine's compatibility hash, written into every entry.
    engine_digest: [u8; 32],
    /// Its first 8 bytes in hex, in entry file names.
    engine_key: String,
    /// The user entries must belong to (unix).
    owner: Option<u32>,
    /// The most bytes the entries may take together.
    max_bytes: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    discarded: AtomicU64,
    writes: AtomicU64,
    evicted: AtomicU64,
}

/// Feeds a `Hash` implementation into sha256, so the engine key is the same in every process.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        unreachable!("only the digest is read")
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

impl ArtifactCache {
    /// The entries' size limit unless set: 2 GiB (a Python policy's entry is about 40 MB).
    pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;

    /// The user's cache directory for Rebound (`$XDG_CACHE_HOME/rebound` or
    /// `~/.cache/rebound` on Linux, `~/Library/Caches/rebound` on macOS), where the registry,
    /// `rebound eval` and `rebound check` keep compiled policies unless told otherwise; `None`
    /// when the platform has no such directory.
    pub fn default_dir() -> Option<PathBuf> {
        dirs::cache_dir().map(|dir| dir.join("rebound"))
    }

    /// Opens the cache in the user's cache directory ([`default_dir`](Self::default_dir)),
    /// or `None` when there is none or it cannot be used (see
    /// [`open_or_warn`](Self::open_or_warn)).
    pub fn open_default(engine: &Engine) -> Option<Self> {
        Self::open_or_warn(&Self::default_dir()?, engine)
    }

    /// Opens the cache in `dir`, or `None`, with a warning, when it cannot be used: for a
    /// cache nobody asked for, whose absence must never stop a policy from loading.
    pub fn open_or_warn(dir: &Path, engine: &Engine) -> Option<Self> {
        match Self::open(dir, engine) {
            Ok(cache) => Some(cache),
            Err(error) => {
                tracing::warn!(dir = %dir.display(), error = %error,
                    "the default artifact cache cannot be used; compiling without it");
                None
            }
        }
    }

    /// Opens (creating it, private to this user) the cache in `dir` for `engine`.
    pub fn open(dir: &Path, engine: &Engine) -> Result<Self, CacheError> {
        let io = |source| CacheError::Io {
            path: dir.to_owned(),
            source,
        };
        create_private_dir(dir).map_err(io)?;
        let owner = check_private(dir)?;
        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_digest: [u8; 32] = hasher.0.finalize().into();
        Ok(ArtifactCache {
            dir: dir.to_owned(),
            engine_key: hex::encode(&engine_digest[..8]),
            engine_digest,
            owner,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        })
    }

    /// The same cache, its entries kept within `max_bytes` together (the entry just written is
    /// always kept, even alone past the limit).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The entries' size limit.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            discarded: self.discarded.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
        }
    }

    /// The entry file of the component whose sha256 is `component_sha256`.
    pub fn entry_path(&self, component_sha256: &[u8; 32]) -> PathBuf {
        self.dir.join(format!(
            "{}-{}.cwasm",
            hex::encode(component_sha256),
            self.engine_key
        ))
    }

    /// The compiled component for `component_sha256`, if a sound entry exists.
    pub(crate) fn get(&self, engine: &Engine, component_sha256: &[u8; 32]) -> Option<Component> {
        let path = self.entry_path(component_sha256);
        let bytes = match self.read_private(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            Err(problem) => return self.discard(&path, &problem),
        };
        let Some((header, payload)) = bytes
            .strip_prefix(MAGIC)
            .filter(|rest| rest.len() > HEADER_LEN)
            .map(|rest| rest.split_at(HEADER_LEN))
        else {
            let why = if bytes.starts_with(b"rebound-artifact-") && !bytes.starts_with(MAGIC) {
                "written by another version of rebound"
            } else {
                "corrupt (not an entry, or truncated)"
            };
            return self.discard(&path, why);
        };
        let (bound_component, rest) = header.split_at(32);
        let (bound_engine, digest) = rest.split_at(32);
        if bound_component != component_sha256 {
            return self.discard(&path, "compiled from another component");
        }
        if bound_engine != self.engine_digest {
            return self.discard(&path, "compiled for another engine configuration");
        }
        if digest != entry_digest(component_sha256, &self.engine_digest, payload) {
            return self.discard(&path, "corrupt (sha256 mismatch)");
        }
        // SAFETY: wasmtime requires that the bytes were produced by `Component::serialize` of
        // a compatible engine and not tampered with. The entry lives in a directory that only
        // this user can write (checked in `open`), is itself this user's and writable by no one
        // else (checked on read), was written by `put` below for this component and engine
        // (bound inside it), and matches the sha256 written with it; wasmtime itself checks
        // the engine compatibility and refuses a foreign artifact, which is then discarded.
        match unsafe { Component::deserialize(engine, payload) } {
            Ok(component) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(component)
            }
            Err(e) => self.discard(&path, &format!("foreign: {e:#}")),
        }
    }

    /// The entry at `path`, if there is one, read through a handle whose owner and mode were
    /// checked: `Err` says why it may not be trusted.
    fn read_private(&self, path: &Path) -> Result<Option<Vec<u8>>, String> {
        let mut file = match fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("unreadable: {e}")),
        };
        let metadata = file.metadata().map_err(|e| format!("unreadable: {e}"))?;
        check_private_file(&metadata, self.owner)?;
        let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
        std::io::Read::read_to_end(&mut file, &mut bytes)
            .map_err(|e| format!("unreadable: {e}"))?;
        // Used now: the last to be evicted. A file that cannot be touched is only evicted
        // sooner.
        let _ = file.set_modified(SystemTime::now());
        Ok(Some(bytes))
    }

    fn discard(&self, path: &Path, why: &str) -> Option<Component> {
        tracing::warn!(entry = %path.display(), why, "discarding compiled-artifact cache entry; compiling again");
        let _ = fs::remove_file(path);
        self.discarded.fetch_add(1, Ordering::Relaxed);
        self.misses.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Stores `component` (compiled from the bytes whose sha256 is `component_sha256`). A
    /// failure is logged and otherwise ignored: the cache only saves time.
    pub(crate) fn put(&self, component_sha256: &[u8; 32], component: &Component) {
        let path = self.entry_path(component_sha256);
        let result = component
            .serialize()
            .map_err(|e| std::io::Error::other(format!("{e:#}")))
            .and_then(|payload| {
                // Written beside the entry, then renamed: a reader never sees a partial entry.
                // Not synced: after a crash a torn entry fails its sha256 and is recompiled,
                // so the swap does not wait for the disk. A new temporary file is private to
                // this user (mode 600).
                let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
                file.write_all(MAGIC)?;
                file.write_all(component_sha256)?;
                file.write_all(&self.engine_digest)?;
                file.write_all(&entry_digest(
                    component_sha256,
                    &self.engine_digest,
                    &payload,
                ))?;
                file.write_all(&payload)?;
                file.persist(&path).map_err(|e| e.error)?;
                Ok(())
            });
        match result {
            Ok(()) => {
                self.writes.fetch_add(1, Ordering::Relaxed);
                self.evict(&path);
            }
            Err(e) => {
                tracing::warn!(entry = %path.display(), error = %e, "cannot write cache entry")
            }
        }
    }
}

impl ArtifactCache {
    /// Deletes the entries used least recently until the rest fit in `max_bytes`, never
    /// `keep` (the entry just written).
    fn evict(&self, keep: &Path) {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = (listing.flatten())
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "cwasm"))
            .filter_map(|path| {
                let metadata = fs::symlink_metadata(&path).ok()?;
                let used = metadata.modified().unwrap_or(UNIX_EPOCH);
                metadata.is_file().then_some((used, metadata.len(), path))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        if total <= self.max_bytes {
            return;
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if path != keep && fs::remove_file(&path).is_ok() {
                total -= len;
                self.evicted.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(entry = %path.display(), "evicted from the compiled-artifact cache");
            }
        }
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Whether an entry with `metadata` may be loaded: this user's (`owner`), writable by no one
/// else.
#[cfg(unix)]
fn check_private_file(metadata: &fs::Metadata, owner: Option<u32>) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if owner.is_some_and(|owner| metadata.uid() != owner) {
        return Err(format!("owned by uid {}, not this user", metadata.uid()));
    }
    let mode = metadata.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(format!(
            "mode {:o} lets group or others write to it",
            mode & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private_file(_metadata: &fs::Metadata, _owner: Option<u32>) -> Result<(), String> {
    Ok(())
}

/// Checks that `dir` is this user's and writable by no one else; returns this user's id.
#[cfg(unix)]
fn check_private(dir: &Path) -> Result<Option<u32>, CacheError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let io = |source| CacheError::Io {
        path: dir.to_owned(),
        source,
    };
    let meta = fs::metadata(dir).map_err(io)?;
    // A file this process creates is owned by its effective user: compare with the directory.
    let probe = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    let me = probe.as_file().metadata().map_err(io)?.uid();
    let unsafe_dir = |problem: String| CacheError::Unsafe {
        path: dir.to_owned(),
        problem,
    };
    if meta.uid() != me {
        return Err(unsafe_dir(format!(
            "owned by uid {}, this process runs as uid {me}",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(unsafe_dir(format!(
            "mode {:o} lets group or others write to it (expected 700)",
            mode & 0o777
        )));
    }
    Ok(Some(me))
}

#[cfg(not(unix))]
fn check_private(_dir: &Path) -> Result<Option<u32>, CacheError> {
    Ok(None)
}
