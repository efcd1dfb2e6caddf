//! What the decision log adds to a decision: a registry's decision with no
//! log, with a log sampling none of the decisions, and with a log writing every decision to a
//! file, measured in one run and printed as a table with the difference; then how many lines a
//! second the log's writer thread turns into file lines, the rate past which lines are
//! dropped (and counted) rather than ever making a decision wait.
//! Run: `env -u RUST_BACKTRACE cargo bench -p rebound-core --bench decision_log`.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use futures::FutureExt;
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound::{reasons, Decision, DecisionContext, Request, RequestType};

#[path = "support/measure.rs"]
mod measure;
use measure::measure_interleaved;

/// A registry deciding with the built-in best effort, `log` appended to its configuration.
fn registry(dir: &Path, log: &str) -> PolicyRegistry {
    let text = format!(
        "default_policy = \"standard\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.standard]\nbuiltin = \"best-effort\"\n{log}"
    );
    let config = RegistryConfig::parse(&text, &dir.join("rebound.toml"), dir).unwrap();
    PolicyRegistry::new(config).unwrap()
}

/// One decision of a first failure (KV_LOCKED, retried by best effort).
fn decide(registry: &PolicyRegistry, template: &Request) {
    let mut request = template.clone();
    let context = DecisionContext::new(&reasons::KV_LOCKED).at(template.start());
    let decided = registry
        .decide(&mut request, &context)
        .now_or_never()
        .expect("a built-in decides at once")
        .unwrap();
    black_box(matches!(decided.decision, Decision::Retry(_)));
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let off = registry(dir.path(), "");
    let unsampled = registry(
        dir.path(),
        "[decision_log]\nfile = \"unsampled.log\"\nsample = 0.0\n",
    );
    let every = registry(
        dir.path(),
        "[decision_log]\nfile = \"every.log\"\nsample = 1.0\nmax_bytes = 1073741824\n",
    );
    let template = Request::new(1, RequestType::Get, Duration::from_secs(10))
        .unwrap()
        .with_client_context("tenant", "search-team");
    let (rounds, iters) = (31, 20_000);
    let times = measure_interleaved(
        rounds,
        iters,
        &mut [
            &mut || decide(&off, &template),
            &mut || decide(&unsampled, &template),
            &mut || decide(&every, &template),
        ],
    );
    let every_stats = every.decision_log_stats().unwrap();
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    println!("| decision (1 thread) | ns per decision | added by the log (ns) |");
    println!("| --- | ---: | ---: |");
    println!("| no decision log | {:.0} | |", ns(times[0]));
    println!(
        "| decision log, sample 0.0 | {:.0} | {:.0} |",
        ns(times[1]),
        ns(times[1]) - ns(times[0])
    );
    println!(
        "| decision log, sample 1.0, to a file | {:.0} | {:.0} |",
        ns(times[2]),
        ns(times[2]) - ns(times[0])
    );
    println!(
        "lines while measuring: written {}, dropped {} (buffer full: the decisions outran the writer)",
        every_stats.written, every_stats.dropped
    );

    // The writer's pace: a burst that fits the buffer, then the time until it is all written.
    const BURST: u64 = 8_000;
    let paced = registry(
        dir.path(),
        "[decision_log]\nfile = \"paced.log\"\nbuffer = 10000\nmax_bytes = 1073741824\n",
    );
    let started = Instant::now();
    for _ in 0..BURST {
        decide(&paced, &template);
    }
    let decided = started.elapsed();
    while paced.decision_log_stats().unwrap().written < BURST {
        std::thread::sleep(Duration::from_micros(200));
    }
    let written = started.elapsed();
    let stats = paced.decision_log_stats().unwrap();
    let bytes = std::fs::metadata(dir.path().join("paced.log"))
        .unwrap()
        .len();
    println!(
        "writer: {BURST} lines ({} bytes each on average) decided in {:.1} ms, written by {:.1} ms: {:.0} lines/s; dropped {}",
        bytes / BURST,
        decided.as_secs_f64() * 1e3,
        written.as_secs_f64() * 1e3,
        BURST as f64 / written.as_secs_f64(),
        stats.dropped
    );
}
