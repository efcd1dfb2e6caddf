//! Hot reload: watches the directories of the configuration file and of every component file,
//! debounces their events, and reloads what changed on a thread of its own, so compiling never
//! happens on the deciding path.
//!
//! Directories are watched rather than files, which makes every way editors and build tools
//! replace a file look the same: truncate-and-write, write-then-rename (the rename is an event
//! on the target name; the temporary file is ignored), delete-and-recreate (the delete fails to
//! read and keeps the old version; the create reloads). A partial write that stays quiet for the
//! debounce time fails to compile and keeps the old version; the rest of the write is another
//! event and reloads. Only changes count: opening and reading a file (the host's own reads
//! among them) is not an event.
//!
//! A component file's first event also starts compiling it on a second thread while the
//! debounce runs, so the reload after the quiet period usually finds the machine code ready
//! (see `compile_ahead`; `EarlyCompiles` below is the thread that starts them).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::policy_registry::PolicyRegistry;

/// Why watching could not start: the file watcher could not be made or given a directory, or
/// the reload thread could not be started.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct WatchError(WatchFailure);

#[derive(Debug, thiserror::Error)]
enum WatchFailure {
    #[error("cannot watch for policy changes: {0}")]
    Watcher(notify::Error),
    #[error("cannot start the thread that reloads policies: {0}")]
    Thread(std::io::Error),
}

enum Message {
    Changed(Vec<PathBuf>),
    Stop,
}

/// Reloads the registry's files when they change. Dropping it stops watching without waiting:
/// a reload or an early compile already under way finishes on its own thread (a compile can
/// take seconds, and a server shutting down must not wait for it), and nothing starts after.
#[derive(Debug)]
pub struct RegistryWatcher {
    stop: Sender<Message>,
    /// The thread compiling changed components ahead of their reload (feature `wasm`).
    #[cfg(feature = "wasm")]
    _early: EarlyCompiles,
    changes: Arc<AtomicU64>,
}

impl RegistryWatcher {
    /// How many changed files (after debouncing) the watcher has acted on.
    pub fn changes_handled(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }
}

impl Drop for RegistryWatcher {
    fn drop(&mut self) {
        let _ = self.stop.send(Message::Stop);
    }
}

/// `registry`'s watched files: its configuration's and its components'.
fn files(registry: &PolicyRegistry) -> impl Iterator<Item = PathBuf> {
    let (config, files) = registry.watched_files();
    config.into_iter().chain(files)
}

/// The directories to watch for `registry`'s files.
fn directories(registry: &PolicyRegistry) -> BTreeSet<PathBuf> {
    files(registry)
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect()
}

/// Whether an event can mean new content: creating, writing, renaming, deleting or closing
/// after writing, not opening or reading.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Any | EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) => true,
        EventKind::Other => false,
    }
}

pub(super) fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> Result<(), WatchError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(body)
        .map(drop)
        .map_err(|e| WatchError(WatchFailure::Thread(e)))
}

impl PolicyRegistry {
    /// Starts reloading this registry's configuration and component files when they change,
    /// as the configuration's `[watch]` table says: `None` if watching is disabled there.
    /// Settings changed later take effect when watching is started again.
    pub fn watch(self: &Arc<Self>) -> Result<Option<RegistryWatcher>, WatchError> {
        let settings = self.config().watch;
        if !settings.enabled {
            return Ok(None);
        }
        let debounce = Duration::from_millis(settings.debounce_ms);
        let (tx, rx) = mpsc::channel();
        #[cfg(feature = "wasm")]
        let early = EarlyCompiles::start(self)?;
        #[cfg(feature = "wasm")]
        let to_compile = early.sender();
        let events = tx.clone();
        let mut watcher =
            notify::recommended_watcher(move |result: notify::Result<Event>| match result {
                Ok(event) if is_change(&event.kind) => {
                    #[cfg(feature = "wasm")]
                    for path in &event.paths {
                        let _ = to_compile.send(Some(path.clone()));
                    }
                    let _ = events.send(Message::Changed(event.paths));
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "file watcher error"),
            })
            .map_err(|e| WatchError(WatchFailure::Watcher(e)))?;
        let mut watched = BTreeSet::new();
        rewatch(&mut watcher, &mut watched, directories(self));
        let changes = Arc::new(AtomicU64::new(0));
        let resolved = files(self)
            .map(|file| (file.clone(), std::fs::canonicalize(&file).ok()))
            .collect();
        let reloader = Reloader {
            registry: Arc::clone(self),
            watcher,
            watched,
            resolved,
            debounce,
            changes: Arc::clone(&changes),
        };
        // Detached: dropping the watcher tells it to stop and does not wait.
        self.reload_path.started();
        let ends = EndsWatching {
            registry: Arc::clone(self),
            asked: false,
        };
        spawn("rebound-reload", move || {
            let mut ends = ends;
            reloader.run(&rx);
            ends.asked = true;
        })?;
        tracing::info!(
            debounce_ms = debounce.as_millis() as u64,
            "watching policy files"
        );
        Ok(Some(RegistryWatcher {
            stop: tx,
            #[cfg(feature = "wasm")]
            _early: early,
            changes,
        }))
    }
}

fn rewatch(
    watcher: &mut RecommendedWatcher,
    watched: &mut BTreeSet<PathBuf>,
    wanted: BTreeSet<PathBuf>,
) {
    for gone in watched.difference(&wanted) {
        let _ = watcher.unwatch(gone);
    }
    for dir in wanted.difference(watched) {
        if let Err(error) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!(dir = %dir.display(), %error, "cannot watch directory; its files are not reloaded");
        }
    }
    *watched = wanted;
}

/// Tells the registry's status when the reload thread ends, and whether it was asked to (a
/// thread unwinding from a panic was not).
struct EndsWatching {
    registry: Arc<PolicyRegistry>,
    asked: bool,
}

impl Drop for EndsWatching {
    fn drop(&mut self) {
        self.registry.reload_path.ended(self.asked);
        if !self.asked {
            tracing::error!(
                "the reload thread ended: configuration and policy changes are no longer reloaded"
            );
        }
    }
}

/// The reload thread: debounces change events per file and reloads each file once it has been
/// quiet for the debounce time.
struct Reloader {
    registry: Arc<PolicyRegistry>,
    watcher: RecommendedWatcher,
    watched: BTreeSet<PathBuf>,
    /// What each watched file resolves to. A file reached through a symbolic link changes when
    /// the link is replaced, with no event naming the file: a Kubernetes ConfigMap or Secret
    /// volume swaps its `..data` link to a new directory.
    resolved: HashMap<PathBuf, Option<PathBuf>>,
    debounce: Duration,
    changes: Arc<AtomicU64>,
}

impl Reloader {
    fn run(mut self, messages: &Receiver<Message>) {
        // When each changed file becomes quiet enough to reload.
        let mut quiet_at: HashMap<PathBuf, Instant> = HashMap::new();
        loop {
            let next = quiet_at.values().min().copied();
            let message = match next {
                Some(at) => messages.recv_timeout(at.saturating_duration_since(Instant::now())),
                None => messages.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match message {
                Ok(Message::Changed(paths)) => {
                    let at = Instant::now() + self.debounce;
                    quiet_at.extend(paths.into_iter().map(|p| (p, at)));
                }
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            let quiet: Vec<PathBuf> = quiet_at
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(path, _)| path.clone())
                .collect();
            if !quiet.is_empty() {
                quiet_at.retain(|_, at| *at > now);
                self.reload(&quiet);
            }
        }
    }

    /// The watched files in the directories of `paths` that now resolve elsewhere.
    fn relinked(&mut self, paths: &[PathBuf]) -> Vec<PathBuf> {
        let directories: BTreeSet<&Path> = paths.iter().filter_map(|p| p.parent()).collect();
        let mut relinked = Vec::new();
        for file in files(&self.registry) {
            if !file.parent().is_some_and(|d| directories.contains(d)) {
                continue;
            }
            let now = std::fs::canonicalize(&file).ok();
            let before = self.resolved.insert(file.clone(), now.clone());
            if before.is_some_and(|before| before != now) && !paths.contains(&file) {
                relinked.push(file);
            }
        }
        relinked
    }

    fn reload(&mut self, paths: &[PathBuf]) {
        let relinked = self.relinked(paths);
        let paths = &[paths, &relinked].concat();
        let registry = &*self.registry;
        let (config_file, _) = registry.watched_files();
        let contained = &registry.reload_path;
        if config_file.is_some_and(|c| paths.contains(&c)) {
            self.changes.fetch_add(1, Ordering::Relaxed);
            tracing::info!("configuration file changed; reloading it");
            // Errors are logged and kept in the status by reload_config.
            let applied = contained.contain("configuration reload", || registry.reload_config());
            if matches!(applied, Some(Ok(()))) {
                rewatch(&mut self.watcher, &mut self.watched, directories(registry));
            }
        }
        for path in paths {
            let policies = contained
                .contain("finding the policies of a file", || {
                    registry.policies_at(path)
                })
                .unwrap_or_default();
            if !policies.is_empty() {
                self.changes.fetch_add(1, Ordering::Relaxed);
            }
            for policy in policies {
                // Errors are logged and kept in the policy's status by reload.
                contained.contain("policy reload", || registry.reload(&policy));
            }
        }
    }
}

/// The watcher's early-compile thread: compiles each changed component file as soon as it
/// changes. Dropping it tells the thread to stop, without waiting.
#[cfg(feature = "wasm")]
#[derive(Debug)]
struct EarlyCompiles {
    changed: Sender<Option<PathBuf>>,
}

#[cfg(feature = "wasm")]
impl EarlyCompiles {
    /// Starts the thread, compiling ahead for `registry`.
    fn start(registry: &Arc<PolicyRegistry>) -> Result<Self, WatchError> {
        let (changed, paths) = mpsc::channel();
        let registry = Arc::clone(registry);
        spawn("rebound-compile", move || compile_loop(&registry, &paths))?;
        Ok(EarlyCompiles { changed })
    }

    /// Where the watcher sends the paths that changed.
    fn sender(&self) -> Sender<Option<PathBuf>> {
        self.changed.clone()
    }
}

#[cfg(feature = "wasm")]
impl Drop for EarlyCompiles {
    fn drop(&mut self) {
        let _ = self.changed.send(None);
    }
}

/// The early-compile thread's loop, taking only the latest of a burst of events.
#[cfg(feature = "wasm")]
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
