//! Hot-swap benchmark, printed as tables from one run:
//!
//! 1. Time from the final rename of a policy file to the first decision served by the new
//!    version, debounce included, for content never seen (compiled), content in the
//!    compiled-artifact cache, and a swap back to the previous version (reused in memory).
//! 2. Decision latency percentiles with no swaps, and while the policy file is swapped every
//!    100 ms (reused versions, and fresh content that must compile on the other core).
//!
//! Rust guests, then the Python and JavaScript best-effort policies.
//!
//! Run: `./scripts/build-guests.sh && cargo bench -p rebound-core --bench hot_swap`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound::{reasons, DecisionContext, Request, RequestType};

/// The configuration's default debounce time (printed with the results).
const DEBOUNCE: Duration = Duration::from_millis(20);

fn guest(name: &str) -> Vec<u8> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../build/guests/{name}.wasm"));
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run ./scripts/build-guests.sh", path.display()))
}

/// `component` with a custom section appended: the same policy, new content (a new hash), so
/// the host must compile it as if it had been rebuilt.
fn variant(component: &[u8], n: u32) -> Vec<u8> {
    let name = b"rebound-bench";
    let payload = n.to_le_bytes();
    let body_len = 1 + name.len() + payload.len();
    let mut out = component.to_vec();
    out.push(0); // custom section
    out.push(u8::try_from(body_len).unwrap()); // LEB128, < 128
    out.push(u8::try_from(name.len()).unwrap());
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decide_hash(registry: &PolicyRegistry) -> String {
    let mut request = Request::new(1, RequestType::Get, Duration::from_secs(3600)).unwrap();
    let decided = registry
        .decide(
            &mut request,
            &DecisionContext::new(&reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT),
        )
        .now_or_never()
        .expect("synchronous policy")
        .expect("known policy");
    decided.version.expect("registry version").hash().to_owned()
}

/// Replaces `path` by `content` (write a temporary file, then rename) and returns the time
/// from the rename to the first decision by the new version (to within 0.25 ms), and the new version's load time
/// (read, compile or cache, configure, smoke calls).
fn swap_latency(registry: &PolicyRegistry, path: &Path, content: &[u8]) -> (Duration, Duration) {
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, content).unwrap();
    std::fs::File::open(&temp).unwrap().sync_all().unwrap();
    let want = sha256_hex(content);
    let start = Instant::now();
    std::fs::rename(&temp, path).unwrap();
    // Decide every 250 µs, not in a busy loop: a spinning measurer would take a core from the
    // compile it measures (the two vCPUs of this machine kind share one physical core).
    while decide_hash(registry) != want {
        std::thread::sleep(Duration::from_micros(250));
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "swap never served"
        );
    }
    let latency = start.elapsed();
    (latency, registry.active("p").unwrap().load_time())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

struct Setup {
    _dir: tempfile::TempDir,
    path: PathBuf,
    registry: Arc<PolicyRegistry>,
    _watcher: rebound::registry::RegistryWatcher,
}

fn setup(initial: &[u8]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.wasm");
    std::fs::write(&path, initial).unwrap();
    let config_path = dir.path().join("rebound.toml");
    std::fs::write(
        &config_path,
        "default_policy = \"p\"\ncache_dir = \"cache\"\n[policies.p]\ncomponent = \"policy.wasm\"\n",
    )
    .unwrap();
    let registry =
        Arc::new(PolicyRegistry::new(RegistryConfig::load(&config_path).unwrap()).unwrap());
    let watcher = registry.watch().unwrap().expect("watching enabled");
    Setup {
        _dir: dir,
        path,
        registry,
        _watcher: watcher,
    }
}

/// Swap latencies of `guest`, a `language` policy, with `runs` swaps of each kind.
fn swap_table(language: &str, name: &str, best: &[u8], runs: u32) {
    let s = setup(best);
    let mut rows = Vec::new();
    // Content never seen: compiled after the rename.
    let compiled: Vec<_> = (1..=runs)
        .map(|n| swap_latency(&s.registry, &s.path, &variant(best, n)))
        .collect();
    rows.push(("new content (compile)", compiled));
    // Content seen before but neither active nor previous: from the artifact cache.
    let cached: Vec<_> = (1..=runs)
        .map(|n| swap_latency(&s.registry, &s.path, &variant(best, n)))
        .collect();
    rows.push(("seen before (artifact cache)", cached));
    // Back and forth between two versions: the previous one is reused in memory.
    let (a, b) = (variant(best, 100), variant(best, 101));
    swap_latency(&s.registry, &s.path, &a);
    swap_latency(&s.registry, &s.path, &b);
    let reused: Vec<_> = (0..2 * runs)
        .map(|i| swap_latency(&s.registry, &s.path, if i % 2 == 0 { &a } else { &b }))
        .collect();
    rows.push(("back to previous (in memory)", reused));

    println!(
        "\nRename-to-first-decision latency, {language} {name} guest ({} KB), debounce {} ms",
        best.len() / 1024,
        DEBOUNCE.as_millis()
    );
    println!("| swap | runs | p50 ms | p90 ms | max ms | load p50 ms |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (name, runs) in rows {
        let mut samples: Vec<Duration> = runs.iter().map(|r| r.0).collect();
        let mut loads: Vec<Duration> = runs.iter().map(|r| r.1).collect();
        samples.sort();
        loads.sort();
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            samples.len(),
            ms(percentile(&samples, 0.5)),
            ms(percentile(&samples, 0.9)),
            ms(*samples.last().unwrap()),
            ms(percentile(&loads, 0.5))
        );
    }
    let cache = s.registry.status().cache.unwrap();
    println!(
        "(artifact cache: {} hits, {} misses, {} writes)",
        cache.hits, cache.misses, cache.writes
    );
}

/// Decision latencies for `run`, while `swapper` runs on this thread.
fn latencies(
    registry: &Arc<PolicyRegistry>,
    run: Duration,
    swapper: impl FnOnce(&AtomicBool),
) -> Vec<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let decider = {
        let (registry, stop) = (Arc::clone(registry), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut samples = Vec::with_capacity(8_000_000);
            let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
            let template = Request::new(1, RequestType::Get, Duration::from_secs(3600)).unwrap();
            while !stop.load(Ordering::Relaxed) {
                let mut request = template.clone();
                let start = Instant::now();
                let decided = registry
                    .decide(&mut request, &DecisionContext::new(&reason))
                    .now_or_never();
                samples.push(start.elapsed());
                std::hint::black_box(decided);
            }
            samples
        })
    };
    let started = Instant::now();
    swapper(&stop);
    std::thread::sleep(run.saturating_sub(started.elapsed()));
    stop.store(true, Ordering::Relaxed);
    let mut samples = decider.join().unwrap();
    samples.sort();
    samples
}

fn swap_every(
    path: &Path,
    contents: &[Vec<u8>],
    period: Duration,
    until: Duration,
    stop: &AtomicBool,
) -> usize {
    let started = Instant::now();
    let mut swaps = 0;
    while started.elapsed() + period < until && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(period);
        let temp = path.with_extension("tmp");
        std::fs::write(&temp, &contents[swaps % contents.len()]).unwrap();
        std::fs::rename(&temp, path).unwrap();
        swaps += 1;
    }
    swaps
}

fn latency_table(best: &[u8]) {
    let run = Duration::from_secs(3);
    let period = Duration::from_millis(100);
    let s = setup(best);
    let mut rows = Vec::new();
    rows.push(("no swaps".to_owned(), latencies(&s.registry, run, |_| {})));
    let reused = [variant(best, 200), variant(best, 201)];
    let mut swaps = 0;
    let samples = latencies(&s.registry, run, |stop| {
        swaps = swap_every(&s.path, &reused, period, run, stop)
    });
    rows.push((format!("{swaps} swaps, reused versions"), samples));
    let fresh: Vec<Vec<u8>> = (300..340).map(|n| variant(best, n)).collect();
    let samples = latencies(&s.registry, run, |stop| {
        swaps = swap_every(&s.path, &fresh, period, run, stop)
    });
    rows.push((format!("{swaps} swaps, each compiled"), samples));

    println!("\nDecision latency through the registry (one deciding thread, {} s per run, a swap every {} ms)", run.as_secs(), period.as_millis());
    println!("| run | decisions | p50 µs | p99 µs | p99.9 µs | max µs | p99 vs no swaps |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let base_p99 = percentile(&rows[0].1, 0.99);
    for (name, samples) in &rows {
        let p99 = percentile(samples, 0.99);
        println!(
            "| {name} | {} | {} | {} | {} | {} | {:.2}× |",
            samples.len(),
            us(percentile(samples, 0.5)),
            us(p99),
            us(percentile(samples, 0.999)),
            us(*samples.last().unwrap()),
            p99.as_secs_f64() / base_p99.as_secs_f64()
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // `cargo test --benches` smoke-runs bench targets: nothing to check here
    }
    let best = guest("best_effort");
    swap_table("Rust", "best-effort", &best, 15);
    swap_table("Rust", "fail-fast", &guest("fail_fast"), 15);
    // A Python or JavaScript runtime takes seconds to compile; cached, it must not.
    swap_table("Python", "best-effort", &guest("python_best_effort"), 3);
    swap_table(
        "JavaScript",
        "best-effort",
        &guest("javascript_best_effort"),
        3,
    );
    latency_table(&best);
}
