//! Hot reload: watches the directories of the configuration file and of every component file,
//! debounces their events, and reloads what changed on a thread of its own, so compiling never
//! happens on the deciding path.
//!
//! Directories are watched rather than files, which makes every way editors and build tools
//! replace a file look the same: truncate-and-write, write-then-rename (the rename is an event
//! on the target name; the temporary file is ignored), delete-and-recreate (the delete fails to
//! read and keeps the old version; the create reloads). A partial write that stays quiet for the
//! debounce time fails to compile and keeps the old version; the rest of the write is another
//! event and reloads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{
    new_debouncer_opt, Config, DebounceEventResult, DebouncedEventKind, Debouncer,
};

use super::policies::PolicyRegistry;

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch for policy changes: {0}")]
pub struct WatchError(String);

enum Message {
    Changed(Vec<PathBuf>),
    Stop,
}

/// Reloads the registry's files when they change. Dropping it stops watching.
#[derive(Debug)]
pub struct RegistryWatcher {
    stop: Sender<Message>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for RegistryWatcher {
    fn drop(&mut self) {
        let _ = self.stop.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The directories to watch for `registry`'s files.
fn directories(registry: &PolicyRegistry) -> BTreeSet<PathBuf> {
    let (config, files) = registry.watched_files();
    config
        .into_iter()
        .chain(files)
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect()
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
        let events = tx.clone();
        let config = Config::default()
            .with_timeout(debounce)
            .with_batch_mode(false);
        let mut debouncer = new_debouncer_opt::<_, RecommendedWatcher>(
            config,
            move |result: DebounceEventResult| match result {
                Ok(events_seen) => {
                    // Continuous events mean the file is still being written: wait for quiet.
                    let paths: Vec<PathBuf> = events_seen
                        .into_iter()
                        .filter(|e| e.kind == DebouncedEventKind::Any)
                        .map(|e| e.path)
                        .collect();
                    if !paths.is_empty() {
                        let _ = events.send(Message::Changed(paths));
                    }
                }
                Err(error) => tracing::warn!(%error, "file watcher error"),
            },
        )
        .map_err(|e| WatchError(e.to_string()))?;
        let mut watched = BTreeSet::new();
        rewatch(&mut debouncer, &mut watched, directories(self));
        let registry = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("rebound-reload".into())
            .spawn(move || reload_loop(&registry, debouncer, watched, rx))
            .map_err(|e| WatchError(e.to_string()))?;
        tracing::info!(
            debounce_ms = debounce.as_millis() as u64,
            "watching policy files"
        );
        Ok(Some(RegistryWatcher {
            stop: tx,
            thread: Some(thread),
        }))
    }
}

fn rewatch(
    debouncer: &mut Debouncer<RecommendedWatcher>,
    watched: &mut BTreeSet<PathBuf>,
    wanted: BTreeSet<PathBuf>,
) {
    for gone in watched.difference(&wanted) {
        let _ = debouncer.watcher().unwatch(gone);
    }
    for dir in wanted.difference(watched) {
        if let Err(error) = debouncer.watcher().watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!(dir = %dir.display(), %error, "cannot watch directory; its files are not reloaded");
        }
    }
    *watched = wanted;
}

fn reload_loop(
    registry: &PolicyRegistry,
    mut debouncer: Debouncer<RecommendedWatcher>,
    mut watched: BTreeSet<PathBuf>,
    messages: Receiver<Message>,
) {
    while let Ok(Message::Changed(paths)) = messages.recv() {
        let (config_file, _) = registry.watched_files();
        if config_file.is_some_and(|c| paths.contains(&c)) {
            tracing::info!("configuration file changed; reloading it");
            // Errors are logged and kept in the status by reload_config.
            if registry.reload_config().is_ok() {
                rewatch(&mut debouncer, &mut watched, directories(registry));
            }
        }
        for path in &paths {
            for policy in registry.policies_at(path) {
                // Errors are logged and kept in the policy's status by reload.
                let _ = registry.reload(&policy);
            }
        }
    }
}
