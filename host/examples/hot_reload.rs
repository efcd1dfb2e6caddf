//! A policy registry reloading its configuration while the program decides: a locked document
//! is retried under best effort; the file is then replaced (written beside it and renamed over
//! it, as a deployment does) to name fail-fast, and the registry, watching the file, swaps the
//! policy in without a restart: the same failure is no longer retried.
//! Run: `cargo run -p rebound-core --example hot_reload`; `cargo test` runs it too.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::registry::PolicyRegistry;
use rebound::{reasons, Decision, DecisionContext, Request, RequestType};

/// A configuration whose default policy is the built-in `builtin`, watched with a 20 ms
/// debounce.
fn config(builtin: &str) -> String {
    format!(
        "default_policy = \"kv\"\ncache_dir = false\n[watch]\nenabled = true\ndebounce_ms = 20\n\
         [policies.kv]\nbuiltin = \"{builtin}\"\n"
    )
}

/// Writes `text` beside `path`, then renames it over `path`.
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let new = path.with_extension("toml.new");
    std::fs::write(&new, text)?;
    std::fs::rename(&new, path)
}

/// Whether the registry retries a read of a locked document.
fn retries_a_locked_read(registry: &PolicyRegistry) -> bool {
    let mut request = Request::new(1, RequestType::Get, Duration::from_secs(2)).expect("a timeout");
    let context = DecisionContext::new(&reasons::KV_LOCKED);
    let decided = futures::executor::block_on(registry.decide(&mut request, &context));
    matches!(decided.map(|d| d.decision), Ok(Decision::Retry(_)))
}

/// Decides under best effort, replaces the file, and decides until the new policy serves (at
/// most `patience`): whether each decided a retry.
fn run(dir: &Path, patience: Duration) -> Result<(bool, bool), Box<dyn std::error::Error>> {
    let path = dir.join("rebound.toml");
    std::fs::write(&path, config("best-effort"))?;
    let registry = Arc::new(PolicyRegistry::from_file(&path)?);
    let _watcher = registry.watch()?;
    let before = retries_a_locked_read(&registry);
    replace(&path, &config("fail-fast"))?;
    let started = Instant::now();
    while retries_a_locked_read(&registry) && started.elapsed() < patience {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok((before, retries_a_locked_read(&registry)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (before, after) = run(dir.path(), Duration::from_secs(10))?;
    println!("best effort retries a locked read: {before}");
    println!("after the file names fail-fast, without a restart: {after}");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// docs/registry.md "Versions, reloads and rollback": a replaced file's policy decides without a restart.
    #[test]
    fn the_replaced_file_s_policy_decides_without_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let decided = super::run(dir.path(), std::time::Duration::from_secs(60)).unwrap();
        assert_eq!(decided, (true, false));
    }
}
