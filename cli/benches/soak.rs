//! A soak of `rebound serve`, as a table: DECISIONS decisions (default
//! 10 000 000) from 4 kept-alive clients, alternately the built-in and a component policy,
//! while the component's file is replaced every second (each replacement a reload and a swap);
//! the server's resident memory sampled every second, latency at the client.
//!
//! `cargo bench -p rebound-cli --bench soak [-- DECISIONS]` (needs `./scripts/build-guests.sh`).

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{ms, serve, Client};

const CLIENTS: u64 = 4;
const BUILTIN: &str = r#"{"reason": "KV_LOCKED"}"#;
const COMPONENT: &str = r#"{"policy": "swapped", "reason": "KV_LOCKED"}"#;

fn main() {
    let decisions: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let guests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/guests");
    let versions = ["best_effort", "fail_fast"].map(|g| {
        let path = guests.join(format!("{g}.wasm"));
        assert!(
            path.is_file(),
            "{}: run ./scripts/build-guests.sh",
            path.display()
        );
        std::fs::read(path).unwrap()
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("swapped.wasm");
    std::fs::write(&file, &versions[0]).unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        "default_policy = \"standard\"\n[watch]\nenabled = true\ndebounce_ms = 20\n\
         [policies.standard]\nbuiltin = \"best-effort\"\n\
         [policies.swapped]\ncomponent = \"swapped.wasm\"\n",
    )
    .unwrap();
    let (mut server, address) = serve(&dir.path().join("rebound.toml"));
    let pid = server.id();

    let done = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (address, failed) = (address.clone(), Arc::clone(&failed));
            let share = decisions / CLIENTS + u64::from(i < decisions % CLIENTS);
            std::thread::spawn(move || ask(&address, share, &failed))
        })
        .collect();
    let watcher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || swap_and_sample(&file, &versions, pid, &done))
    };
    let mut latencies: Vec<u32> = Vec::with_capacity(decisions as usize);
    for client in clients {
        latencies.extend(client.join().unwrap());
    }
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let (rss, swaps) = watcher.join().unwrap();
    let (_, metrics) = Client::connect(&address).get("/metrics");
    let _ = server.kill();
    let _ = server.wait();

    latencies.sort_unstable();
    let at = |p: f64| {
        let last = latencies.len().saturating_sub(1);
        Duration::from_micros(u64::from(
            latencies[((latencies.len() as f64 * p) as usize).min(last)],
        ))
    };
    let server_swaps = metrics
        .lines()
        .find_map(|l| l.strip_prefix("rebound_policy_swaps_total{policy=\"swapped\"} "))
        .unwrap_or("?")
        .to_owned();
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("| measure | value |");
    println!("| --- | --- |");
    println!("| decisions | {} |", latencies.len());
    println!(
        "| answers other than 200 | {} |",
        failed.load(Ordering::Relaxed)
    );
    println!(
        "| time, rate | {:.0} s, {:.0} decisions/s |",
        took.as_secs_f64(),
        latencies.len() as f64 / took.as_secs_f64()
    );
    println!(
        "| latency at the client, p50 / p99 / p99.9 / max | {:.2} / {:.2} / {:.2} / {:.2} ms |",
        ms(at(0.5)),
        ms(at(0.99)),
        ms(at(0.999)),
        ms(at(1.0))
    );
    println!("| files replaced / swaps the server counted | {swaps} / {server_swaps} |");
    println!(
        "| server RSS first second / max / last | {:.1} / {:.1} / {:.1} MiB |",
        mib(rss.first().copied().unwrap_or(0)),
        mib(rss.iter().copied().max().unwrap_or(0)),
        mib(rss.last().copied().unwrap_or(0))
    );
}

/// Asks `count` decisions on one connection, alternating the bodies: each latency in µs.
fn ask(address: &str, count: u64, failed: &AtomicU64) -> Vec<u32> {
    let mut client = Client::connect(address);
    let mut latencies = Vec::with_capacity(count as usize);
    for i in 0..count {
        let body = if i % 2 == 0 { BUILTIN } else { COMPONENT };
        let started = Instant::now();
        let (status, _) = client.decide(body);
        latencies.push(u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX));
        if status != 200 {
            failed.fetch_add(1, Ordering::Relaxed);
        }
    }
    latencies
}

/// Until `done`: every second, replaces `file` with the other version and samples the
/// server's resident memory (KiB). Returns the samples and the replacements.
fn swap_and_sample(
    file: &Path,
    versions: &[Vec<u8>; 2],
    pid: u32,
    done: &AtomicBool,
) -> (Vec<u64>, u64) {
    let (mut rss, mut swaps) = (Vec::new(), 0u64);
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_secs(1));
        swaps += 1;
        std::fs::write(file, &versions[(swaps % 2) as usize]).unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if let Some(kib) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        {
            rss.push(kib);
        }
    }
    (rss, swaps)
}
