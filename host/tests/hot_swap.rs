//! Hot reload under load: threads decide continuously while the
//! policy file is replaced by the ways editors and build tools write files; no decision fails,
//! and each is attributable to exactly one complete version.

use crate::registry_support;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rebound::registry::{PolicyRegistry, RegistryWatcher};
use rebound::wasm::CodeOrigin;
use rebound::{reasons, CancelReason, Decision, RequestType, RetryError};
use registry_support::{active_hash, decide, guest, guest_hash, request, wait_for, Workspace};

/// The configuration's default debounce time.
const DEBOUNCE: Duration = Duration::from_millis(20);
const SWAP_LIMIT: Duration = Duration::from_secs(20);

/// What the deciding threads saw.
#[derive(Debug, Default)]
struct Tally {
    /// Decisions by the best-effort version (a retry for an idempotent get after its socket
    /// closed in flight).
    best_effort: u64,
    /// Decisions by the fail-fast version (cancelled: no more retries).
    fail_fast: u64,
    /// Decisions whose answer does not match the version they report, or by an unknown version.
    inconsistent: Vec<String>,
    /// Decisions where a policy call failed (fail-safe applied), with the failure kind.
    policy_failures: Vec<String>,
}

struct Deciders {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Tally>>,
}

impl Deciders {
    fn start(registry: &Arc<PolicyRegistry>, threads: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (best, fail) = (guest_hash("best_effort"), guest_hash("fail_fast"));
        let threads = (0..threads)
            .map(|_| {
                let (registry, stop) = (Arc::clone(registry), Arc::clone(&stop));
                let (best, fail) = (best.clone(), fail.clone());
                std::thread::spawn(move || {
                    let mut tally = Tally::default();
                    while !stop.load(Ordering::Relaxed) {
                        let decided = decide(
                            &registry,
                            request(RequestType::Get),
                            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
                        );
                        let hash = decided.version.expect("registry version").hash().to_owned();
                        match &decided.decision {
                            Decision::Fail(RetryError::RequestCanceled {
                                reason: CancelReason::PolicyFailed(failure, _),
                                ..
                            }) => tally
                                .policy_failures
                                .push(format!("{hash}: {}", failure.kind)),
                            Decision::Retry(_) if hash == best => tally.best_effort += 1,
                            Decision::Fail(RetryError::RequestCanceled {
                                reason: CancelReason::NoMoreRetries(_),
                                ..
                            }) if hash == fail => tally.fail_fast += 1,
                            other => tally
                                .inconsistent
                                .push(format!("version {hash} answered {other:?}")),
                        }
                    }
                    tally
                })
            })
            .collect();
        Deciders { stop, threads }
    }

    fn finish(self) -> Tally {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = Tally::default();
        for thread in self.threads {
            let tally = thread.join().expect("decider thread");
            total.best_effort += tally.best_effort;
            total.fail_fast += tally.fail_fast;
            total.policy_failures.extend(tally.policy_failures);
            total.inconsistent.extend(tally.inconsistent);
        }
        total
    }
}

/// A workspace whose policy `p` is `policy.wasm` (best-effort at first), watched.
fn watched() -> (Workspace, Arc<PolicyRegistry>, RegistryWatcher) {
    let ws = Workspace::new();
    ws.install("policy.wasm", "best_effort");
    ws.config("default_policy = \"p\"\n[policies.p]\ncomponent = \"policy.wasm\"\n");
    let registry = Arc::new(ws.registry());
    let watcher = registry
        .watch()
        .expect("watcher")
        .expect("watching enabled");
    (ws, registry, watcher)
}

fn bytes(guest_name: &str) -> Vec<u8> {
    std::fs::read(guest(guest_name)).unwrap()
}

fn truncate_and_write(path: &Path, content: &[u8]) {
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap();
    for chunk in content.chunks(4096) {
        file.write_all(chunk).unwrap();
    }
    file.sync_all().unwrap();
}

fn write_then_rename(path: &Path, content: &[u8]) {
    let temp = path.with_file_name(".policy.wasm.tmp");
    std::fs::write(&temp, content).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

/// Runs `write` (replacing best-effort by fail-fast) while two threads decide; returns the
/// tally once fail-fast is active.
fn swap_under_load(write: impl FnOnce(&Path, &[u8])) -> (Tally, Arc<PolicyRegistry>) {
    let (ws, registry, _watcher) = watched();
    let deciders = Deciders::start(&registry, 2);
    write(&ws.path("policy.wasm"), &bytes("fail_fast"));
    let fail = guest_hash("fail_fast");
    wait_for(SWAP_LIMIT, "fail-fast to become active", || {
        active_hash(&registry, "p") == fail
    });
    std::thread::sleep(Duration::from_millis(20)); // decisions on the new version too
    (deciders.finish(), registry)
}

fn assert_clean(tally: &Tally) {
    assert!(
        tally.policy_failures.is_empty(),
        "{:?}",
        tally.policy_failures
    );
    assert!(
        tally.inconsistent.is_empty(),
        "{:?}",
        &tally.inconsistent[..tally.inconsistent.len().min(5)]
    );
    assert!(tally.best_effort > 0 && tally.fail_fast > 0, "{tally:?}");
}

#[test]
fn truncate_and_write_is_picked_up() {
    let (tally, registry) = swap_under_load(truncate_and_write);
    assert_clean(&tally);
    assert_eq!(registry.policy_status("p").unwrap().last_error, None);
}

#[test]
fn write_then_rename_is_picked_up_and_the_temporary_file_ignored() {
    let (tally, registry) = swap_under_load(write_then_rename);
    assert_clean(&tally);
    assert_eq!(registry.policy_status("p").unwrap().swaps, 1);
}

/// The host reads the files it watches (reloads, compiling ahead); those reads, and anyone
/// else's, are not changes: after a swap the watcher goes quiet instead of re-reading the file
/// every debounce period.
#[test]
fn reading_a_watched_file_is_not_a_change() {
    let (ws, registry, watcher) = watched();
    let path = ws.path("policy.wasm");
    write_then_rename(&path, &bytes("fail_fast"));
    let fail = guest_hash("fail_fast");
    wait_for(SWAP_LIMIT, "fail-fast to become active", || {
        active_hash(&registry, "p") == fail
    });
    std::thread::sleep(DEBOUNCE * 10);
    let settled = watcher.changes_handled();
    assert!(settled >= 1, "the rename was handled");
    for _ in 0..5 {
        std::fs::read(&path).unwrap();
        std::thread::sleep(DEBOUNCE * 2);
    }
    std::thread::sleep(DEBOUNCE * 5);
    assert_eq!(
        watcher.changes_handled(),
        settled,
        "reads were taken for changes"
    );
    // A real change is still handled, exactly once (were reads events, the host's own reads
    // would keep the file from ever being quiet for the debounce time).
    write_then_rename(&path, &bytes("best_effort"));
    let best = guest_hash("best_effort");
    wait_for(SWAP_LIMIT, "best-effort to become active again", || {
        active_hash(&registry, "p") == best
    });
    std::thread::sleep(DEBOUNCE * 10);
    assert_eq!(watcher.changes_handled(), settled + 1);
    assert_eq!(registry.policy_status("p").unwrap().swaps, 2);
}

#[test]
fn delete_and_recreate_keeps_serving_while_the_file_is_gone() {
    let (tally, registry) = swap_under_load(|path, content| {
        std::fs::remove_file(path).unwrap();
        std::thread::sleep(DEBOUNCE * 5); // the watcher sees the file gone
        std::fs::write(path, content).unwrap();
    });
    assert_clean(&tally);
    let status = registry.policy_status("p").unwrap();
    assert_eq!(status.swaps, 1, "only the complete file is swapped in");
    assert_eq!(
        status.last_error, None,
        "the recreated file cleared the error"
    );
}

#[test]
fn a_partial_write_never_serves_and_the_completed_file_does() {
    let (tally, registry) = swap_under_load(|path, content| {
        let mut file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .unwrap();
        let half = content.len() / 2;
        file.write_all(&content[..half]).unwrap();
        file.sync_all().unwrap();
        std::thread::sleep(DEBOUNCE * 5); // the half file is quiet long enough to be read
        file.write_all(&content[half..]).unwrap();
        file.sync_all().unwrap();
    });
    assert_clean(&tally);
    let status = registry.policy_status("p").unwrap();
    assert_eq!(
        status.swaps, 1,
        "the half-written file was never swapped in"
    );
    assert_eq!(status.last_error, None);
}

#[test]
fn a_bad_file_mid_run_keeps_the_old_version_and_reports_until_fixed() {
    let (ws, registry, _watcher) = watched();
    let deciders = Deciders::start(&registry, 2);
    write_then_rename(
        &ws.path("policy.wasm"),
        b"\0asm\x0d\0\x01\0 not a component",
    );
    wait_for(SWAP_LIMIT, "the reload error in the status", || {
        registry.policy_status("p").unwrap().last_error.is_some()
    });
    assert_eq!(active_hash(&registry, "p"), guest_hash("best_effort"));
    write_then_rename(&ws.path("policy.wasm"), &bytes("fail_fast"));
    let fail = guest_hash("fail_fast");
    wait_for(SWAP_LIMIT, "fail-fast to become active", || {
        active_hash(&registry, "p") == fail
    });
    std::thread::sleep(Duration::from_millis(20));
    let tally = deciders.finish();
    assert_clean(&tally);
    assert_eq!(registry.policy_status("p").unwrap().last_error, None);
    // Rollback returns to the version that served before.
    registry.rollback("p").unwrap();
    assert_eq!(active_hash(&registry, "p"), guest_hash("best_effort"));
}

#[test]
fn one_hundred_swaps_under_two_deciding_threads_fail_no_decision() {
    let (ws, registry, _watcher) = watched();
    let deciders = Deciders::start(&registry, 2);
    let path = ws.path("policy.wasm");
    let versions = [
        (bytes("fail_fast"), guest_hash("fail_fast")),
        (bytes("best_effort"), guest_hash("best_effort")),
    ];
    for i in 0..100 {
        let (content, hash) = &versions[i % 2];
        if i % 2 == 0 {
            write_then_rename(&path, content);
        } else {
            truncate_and_write(&path, content);
        }
        wait_for(SWAP_LIMIT, &format!("swap {i}"), || {
            active_hash(&registry, "p") == *hash
        });
    }
    let tally = deciders.finish();
    assert_clean(&tally);
    let status = registry.policy_status("p").unwrap();
    assert_eq!(status.swaps, 100, "{status:?}");
    assert_eq!(status.active.hash, guest_hash("best_effort"));
}

#[test]
fn the_configuration_file_is_watched_and_a_bad_one_keeps_the_running_one() {
    let (ws, registry, _watcher) = watched();
    let config = ws.path("rebound.toml");
    write_then_rename_config(
        &config,
        "default_policy = \"strict\"\n[policies.p]\ncomponent = \"policy.wasm\"\n[policies.strict]\nbuiltin = \"fail-fast\"\n",
    );
    wait_for(SWAP_LIMIT, "the new default policy", || {
        registry.config().default_policy == "strict"
    });
    write_then_rename_config(
        &config,
        "default_policy = \"strict\"\n[policies.strict]\nbuiltin = \"no-such\"\n",
    );
    wait_for(SWAP_LIMIT, "the configuration error", || {
        registry.status().config_error.is_some()
    });
    let error = registry.status().config_error.unwrap();
    assert!(
        error.contains("rebound.toml:3:") && error.contains("policies.strict.builtin"),
        "{error}"
    );
    assert_eq!(
        registry.config().policies.len(),
        2,
        "the running configuration stays"
    );
}

/// A configuration and its component in a Kubernetes ConfigMap volume: each file is a link
/// through `..data`, a link to a directory of the current contents; an update writes a new
/// directory, replaces `..data` by renaming a new link over it, and removes the old directory.
/// No event names the files themselves, yet both are reloaded.
#[test]
fn a_config_map_volume_update_reloads_the_configuration_and_the_component() {
    use std::os::unix::fs::symlink;
    let volume = tempfile::tempdir().unwrap();
    let volume = std::path::absolute(volume.path()).unwrap();
    let contents = |generation: &str, guest_name: &str, default_policy: &str| {
        let dir = volume.join(generation);
        std::fs::create_dir(&dir).unwrap();
        std::fs::copy(guest(guest_name), dir.join("policy.wasm")).unwrap();
        std::fs::write(
            dir.join("rebound.toml"),
            format!(
                "default_policy = \"{default_policy}\"\n[policies.p]\ncomponent = \"policy.wasm\"\n\
                 [policies.strict]\nbuiltin = \"fail-fast\"\n"
            ),
        )
        .unwrap();
    };
    contents("..2026_11_26_09_00_00.1", "best_effort", "p");
    symlink("..2026_11_26_09_00_00.1", volume.join("..data")).unwrap();
    for file in ["rebound.toml", "policy.wasm"] {
        symlink(format!("..data/{file}"), volume.join(file)).unwrap();
    }
    let config = rebound::config::RegistryConfig::load(&volume.join("rebound.toml")).unwrap();
    let registry = Arc::new(
        PolicyRegistry::with_runtime(config, registry_support::runtime().clone()).unwrap(),
    );
    let _watcher = registry.watch().unwrap().expect("watching enabled");
    assert_eq!(active_hash(&registry, "p"), guest_hash("best_effort"));

    contents("..2026_11_26_09_05_00.2", "fail_fast", "strict");
    symlink("..2026_11_26_09_05_00.2", volume.join("..data_tmp")).unwrap();
    std::fs::rename(volume.join("..data_tmp"), volume.join("..data")).unwrap();
    std::fs::remove_dir_all(volume.join("..2026_11_26_09_00_00.1")).unwrap();

    wait_for(SWAP_LIMIT, "the new configuration", || {
        registry.config().default_policy == "strict"
    });
    wait_for(SWAP_LIMIT, "the new component", || {
        active_hash(&registry, "p") == guest_hash("fail_fast")
    });
}

fn write_then_rename_config(path: &Path, text: &str) {
    let temp = path.with_file_name(".rebound.toml.tmp");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

/// Python and JavaScript policies swap like any other
/// while a thread decides, and a version this registry never loaded comes from the
/// compiled-artifact cache (another process compiled it) instead of being compiled again,
/// which takes seconds for these runtimes. The calls get a 5 s deadline: the swap, not the
/// deadline, is the subject, and a call preempted near 10 ms while a reload runs beside it
/// on busy cores would be stopped (wasm_sandbox.rs tests the deadline).
#[test]
fn python_and_javascript_policies_swap_and_come_from_the_cache() {
    let ws = Workspace::new();
    ws.config(
        "default_policy = \"p\"\ncache_dir = \"cache\"\n[policies.p]\ncomponent = \"policy.wasm\"\n\
         limits = { deadline_ms = 5000 }\n",
    );
    // An earlier run compiled the Python version into the cache.
    ws.install("policy.wasm", "python_best_effort");
    drop(ws.registry());
    ws.install("policy.wasm", "javascript_cassandra_default");
    let registry = Arc::new(ws.registry());
    let _watcher = registry.watch().unwrap().expect("watching enabled");
    let stop = Arc::new(AtomicBool::new(false));
    let decider = {
        let (registry, stop) = (Arc::clone(&registry), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let decided = decide(&registry, request(RequestType::Get), &reasons::KV_LOCKED);
                if let Decision::Fail(RetryError::RequestCanceled {
                    reason: CancelReason::PolicyFailed(failure, _),
                    ..
                }) = decided.decision
                {
                    failures.push(failure.kind.to_string());
                }
            }
            failures
        })
    };
    write_then_rename(&ws.path("policy.wasm"), &bytes("python_best_effort"));
    let python = guest_hash("python_best_effort");
    wait_for(SWAP_LIMIT, "the Python version", || {
        active_hash(&registry, "p") == python
    });
    // KV_LOCKED on a get: cassandra-default rethrows, best effort retries.
    assert!(matches!(
        decide(&registry, request(RequestType::Get), &reasons::KV_LOCKED).decision,
        Decision::Retry(_)
    ));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(decider.join().unwrap(), Vec::<String>::new());
    let status = registry.policy_status("p").unwrap();
    assert_eq!(status.swaps, 1);
    assert_eq!(status.active.origin, Some(CodeOrigin::Cached), "{status:?}");
}
