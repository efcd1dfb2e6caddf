//! The compiled-artifact cache: components compiled by wasmtime, kept on disk so that a policy
//! seen before (after a restart, or swapped back in) loads without compiling again.
//!
//! An entry is keyed by the component's sha256 and a digest of the engine's compatibility
//! hash, which covers the wasmtime version (its `module_version`), the target, the compiler
//! flags and every configuration setting compilation depends on. An entry is a compiled
//! artifact (`artifact.rs`), bound inside to what it was compiled from and for, whatever its
//! file name. An entry whose binding does not match what is asked for
//! (another component's entry renamed into place, another engine's), whose sha256 fails (torn,
//! damaged, rewritten), that another user owns or may write, or that wasmtime refuses, is
//! deleted and the component compiled again. The sha256 costs about 23 ms for a Python
//! runtime's 40 MB entry, against seconds of compiling.
//!
//! Loading native code from disk is only as safe as the directory it comes from, so the
//! cache refuses a directory that another user owns. In a directory this user owns that
//! others may write to (a shared volume), the entries live in a subdirectory `private`, this
//! user's and `0700`; every entry is also checked, on the handle it is read through, to be
//! this user's and writable by no one else.
//!
//! The entries' total size is bounded (`max_bytes`): after an entry is written, the entries
//! used least recently (an entry's modification time is moved on at every hit) are deleted
//! until the rest fit, the new one kept.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use wasmtime::component::Component;
use wasmtime::Engine;

use super::artifact;

/// Why the cache directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The directory could not be created or inspected.
    #[error("compiled-artifact cache {path}: {error}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
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
#[non_exhaustive]
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

impl ArtifactCache {
    /// The entries' size limit unless set: 2 GiB (a Python policy's entry is about 40 MB).
    pub const DEFAULT_MAX_BYTES: u64 = super::settings::DEFAULT_CACHE_MAX_BYTES;

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
            error: source,
        };
        create_private_dir(dir).map_err(io)?;
        let (dir, owner) = entries_dir(dir)?;
        let engine_digest = artifact::engine_digest(engine);
        Ok(ArtifactCache {
            dir,
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
        let payload = match artifact::payload(&bytes, component_sha256, &self.engine_digest) {
            Ok(payload) => payload,
            Err(why) => return self.discard(&path, why),
        };
        // SAFETY: wasmtime requires that the bytes were produced by `Component::serialize` of
        // a compatible engine and not tampered with. The entry lives in a directory that only
        // this user can write (checked in `open`), is itself this user's and writable by no one
        // else (checked on read, on the handle read through: a directory swapped in by someone
        // else holds entries that are not this user's), was written by `put` below from what
        // this process compiled, or by `install` from an artifact the configuration pinned by
        // sha256, for this component and engine (bound inside it), and matches the sha256
        // written with it; wasmtime itself checks the engine compatibility and refuses a
        // foreign artifact, which is then discarded.
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
                self.write_entry(&path, |file| {
                    artifact::write(file, component_sha256, &self.engine_digest, &payload)
                })
            });
        if let Err(e) = result {
            tracing::warn!(entry = %path.display(), error = %e, "cannot write cache entry");
        }
    }

    /// Makes `artifact` (a compiled artifact shipped beside a component, `rebound push
    /// --precompile`) the entry of the component whose sha256 is `component_sha256`, if it is
    /// an intact artifact of that component for this cache's engine; otherwise says why not.
    /// wasmtime checks it again when it is loaded. The artifact is native code the host will
    /// run outside the sandbox: the registry installs one only for a sha256 its configuration
    /// pins, which is why this is not public.
    #[cfg(feature = "oci")]
    pub(crate) fn install(
        &self,
        component_sha256: &[u8; 32],
        artifact: &[u8],
    ) -> Result<(), String> {
        artifact::payload(artifact, component_sha256, &self.engine_digest)?;
        let path = self.entry_path(component_sha256);
        self.write_entry(&path, |file| std::io::Write::write_all(file, artifact))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Writes the entry at `path` with `fill`, then keeps the cache within its size limit.
    fn write_entry(
        &self,
        path: &Path,
        fill: impl FnOnce(&mut tempfile::NamedTempFile) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        // Written beside the entry, then renamed: a reader never sees a partial entry. Not
        // synced: after a crash a torn entry fails its sha256 and is recompiled, so the swap
        // does not wait for the disk. A new temporary file is private to this user (mode 600).
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        fill(&mut file)?;
        file.persist(path).map_err(|e| e.error)?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.evict(path);
        Ok(())
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

/// The subdirectory holding the entries of a cache whose directory others may write to.
#[cfg(unix)]
const PRIVATE: &str = "private";

/// Where a cache directory's entries may live, given its owner and mode and this user.
#[cfg(unix)]
#[derive(Debug, PartialEq, Eq)]
enum Placement {
    /// In the directory: it is this user's and writable by no one else.
    Here,
    /// In its subdirectory [`PRIVATE`]: it is this user's, but group or others may write to it.
    Private,
    /// Nowhere: another user owns it (what is wrong, and how to fix it).
    Refused(String),
}

#[cfg(unix)]
fn placement(dir: &Path, owner: u32, mode: u32, me: u32) -> Placement {
    if owner != me {
        return Placement::Refused(format!(
            "owned by uid {owner}, and this process runs as uid {me}; give the directory to uid \
             {me} (`chown {me} {}`, or a volume created for that user), or set `cache_dir` to \
             a directory uid {me} owns",
            dir.display()
        ));
    }
    if mode & 0o022 != 0 {
        Placement::Private
    } else {
        Placement::Here
    }
}

/// The directory the entries of a cache in `dir` live in (see [`Placement`]), and this user's
/// id.
#[cfg(unix)]
fn entries_dir(dir: &Path) -> Result<(PathBuf, Option<u32>), CacheError> {
    use std::os::unix::fs::MetadataExt;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |error| CacheError::Io { path, error }
    };
    let meta = fs::metadata(dir).map_err(io(dir))?;
    // A file this process creates is owned by its effective user: compare with the directory.
    let probe = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    let me = probe.as_file().metadata().map_err(io(dir))?.uid();
    let refused = |path: &Path, problem: String| CacheError::Unsafe {
        path: path.to_owned(),
        problem,
    };
    match placement(dir, meta.uid(), meta.mode(), me) {
        Placement::Here => Ok((dir.to_owned(), Some(me))),
        Placement::Refused(problem) => Err(refused(dir, problem)),
        Placement::Private => {
            let private = dir.join(PRIVATE);
            create_private_dir(&private).map_err(io(&private))?;
            let meta = fs::symlink_metadata(&private).map_err(io(&private))?;
            if !meta.is_dir() {
                return Err(refused(&private, "not a directory".to_owned()));
            }
            match placement(&private, meta.uid(), meta.mode(), me) {
                Placement::Here => {
                    tracing::debug!(dir = %dir.display(), entries = %private.display(),
                        "others may write to the cache directory: its entries live in a private subdirectory");
                    Ok((private, Some(me)))
                }
                Placement::Private => Err(refused(
                    &private,
                    format!(
                        "mode {:o} lets group or others write to it; `chmod 700` it",
                        meta.mode() & 0o777
                    ),
                )),
                Placement::Refused(problem) => Err(refused(&private, problem)),
            }
        }
    }
}

#[cfg(not(unix))]
fn entries_dir(dir: &Path) -> Result<(PathBuf, Option<u32>), CacheError> {
    Ok((dir.to_owned(), None))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// docs/registry.md "The compiled-artifact cache": a directory this user owns and no one
    /// else may write holds the entries; one others may write (a shared volume) holds them in a
    /// private subdirectory; one another user owns is refused, saying how to fix it.
    #[test]
    fn entries_live_in_a_directory_this_user_owns_and_only_it_writes() {
        let dir = Path::new("/var/cache/rebound");
        assert_eq!(placement(dir, 1000, 0o700, 1000), Placement::Here);
        assert_eq!(placement(dir, 1000, 0o755, 1000), Placement::Here);
        assert_eq!(placement(dir, 1000, 0o2775, 1000), Placement::Private);
        assert_eq!(placement(dir, 1000, 0o1777, 1000), Placement::Private);
        let Placement::Refused(problem) = placement(dir, 0, 0o700, 1000) else {
            panic!("another user's directory is refused");
        };
        assert!(problem.contains("owned by uid 0"), "{problem}");
        assert!(
            problem.contains("chown 1000 /var/cache/rebound"),
            "{problem}"
        );
        assert!(problem.contains("cache_dir"), "{problem}");
    }
}
