//! Policy isolation in `rebound serve` (issue 19, point 2), as a table: the built-in policy's
//! decisions per second with nothing else running, then while 8 clients hammer a policy that
//! spins until its deadline; and how late past that deadline (counted from the request's
//! arrival, waiting for a place included) the spinning policy's requests are answered.
//!
//! `cargo bench -p rebound-cli --bench isolation [-- SECONDS]` (needs `./scripts/build-guests.sh`
//! for the adversary policy). The server runs with 2 workers and its default isolation (two
//! policy threads per core, one call per core for a policy), the threads at nice 0, then at
//! nice 10.

mod support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{ms, serve, Client};

/// The spinning policy's deadline.
const DEADLINE_MS: u64 = 10;

const BUILTIN: &str = r#"{"reason": "KV_LOCKED"}"#;
const SPIN: &str = r#"{"policy": "spinner", "request": {"client_context": {"spin": "yes"}}, "reason": "KV_LOCKED"}"#;

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let window = Duration::from_secs(seconds);
    let guest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/guests/adversary.wasm");
    assert!(
        guest.is_file(),
        "{}: run ./scripts/build-guests.sh",
        guest.display()
    );
    let rows: Vec<Row> = [0, 10].map(|nice| measure(&guest, nice, window)).into();
    println!("| measure | policy threads at nice 0 (the default) | at nice 10 |");
    println!("| --- | --- | --- |");
    let line = |what: &str, cell: &dyn Fn(&Row) -> String| {
        println!("| {what} | {} | {} |", cell(&rows[0]), cell(&rows[1]));
    };
    line("built-in decisions/s, unloaded (2 clients)", &|r| {
        format!("{:.0}", r.unloaded)
    });
    line(
        "built-in decisions/s, 8 clients on the spinning policy",
        &|r| format!("{:.0}", r.loaded),
    );
    line("loaded ÷ unloaded", &|r| {
        format!("{:.2}", r.loaded / r.unloaded.max(f64::MIN_POSITIVE))
    });
    line("spinning-policy requests answered", &|r| {
        r.late.len().to_string()
    });
    line(
        "… of which `overloaded` (no place within the deadline)",
        &|r| r.overloaded.to_string(),
    );
    line(
        &format!(
            "their answers past the {DEADLINE_MS} ms deadline at the client, p50 / p99 / max (ms)"
        ),
        &|r| spread(&r.late),
    );
}

/// One configuration's figures.
struct Row {
    unloaded: f64,
    loaded: f64,
    /// How late past the deadline each spinning-policy answer came at the client, sorted.
    late: Vec<Duration>,
    overloaded: usize,
}

/// p50 / p99 / max of sorted `values`, in ms.
fn spread(values: &[Duration]) -> String {
    let at = |p: f64| {
        let last = values.len().saturating_sub(1);
        values
            .get(((values.len() as f64 * p) as usize).min(last))
            .map_or(0.0, |d| ms(*d))
    };
    format!("{:.2} / {:.2} / {:.2}", at(0.5), at(0.99), at(1.0))
}

/// Serves the spinning policy with its isolation's threads at `nice`, and measures.
fn measure(guest: &std::path::Path, nice: i32, window: Duration) -> Row {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guest, dir.path().join("adversary.wasm")).unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        format!(
            "default_policy = \"standard\"\n[watch]\nenabled = false\n\
             [engine.isolation]\nnice = {nice}\n\
             [policies.standard]\nbuiltin = \"best-effort\"\n\
             [policies.spinner]\ncomponent = \"adversary.wasm\"\n\
             limits = {{ deadline_ms = {DEADLINE_MS}, fuel = 100_000_000_000 }}\n\
             quarantine = {{ after_failures = 0 }}\n"
        ),
    )
    .unwrap();
    let (mut server, address) = serve(&dir.path().join("rebound.toml"));
    let unloaded = builtin_rate(&address, window, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..8)
        .map(|_| {
            let (address, stop) = (address.clone(), Arc::clone(&stop));
            std::thread::spawn(move || hammer(&address, &stop))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let loaded = builtin_rate(&address, window, 2);
    stop.store(true, Ordering::Relaxed);
    let (mut late, mut overloaded) = (Vec::new(), 0);
    for spinner in spinners {
        let (lateness, over) = spinner.join().unwrap();
        overloaded += over;
        late.extend(lateness);
    }
    late.sort();
    let _ = server.kill();
    let _ = server.wait();
    Row {
        unloaded,
        loaded,
        late,
        overloaded,
    }
}

/// Built-in decisions per second over `window` from `clients` kept-alive connections.
fn builtin_rate(address: &str, window: Duration, clients: usize) -> f64 {
    let counts: Vec<_> = (0..clients)
        .map(|_| {
            let address = address.to_owned();
            std::thread::spawn(move || {
                let mut client = Client::connect(&address);
                let started = Instant::now();
                let mut n = 0u64;
                while started.elapsed() < window {
                    let (status, _) = client.decide(BUILTIN);
                    assert_eq!(status, 200);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let total: u64 = counts.into_iter().map(|c| c.join().unwrap()).sum();
    total as f64 / window.as_secs_f64()
}

/// Asks the spinning policy until `stop`: how late past the deadline each answer came at the
/// client, and how many were answered `overloaded`.
fn hammer(address: &str, stop: &AtomicBool) -> (Vec<Duration>, usize) {
    let mut client = Client::connect(address);
    let deadline = Duration::from_millis(DEADLINE_MS);
    let (mut late, mut overloaded) = (Vec::new(), 0);
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let (status, body) = client.decide(SPIN);
        let took = started.elapsed();
        assert_eq!(status, 200, "{body}");
        if body.contains("\"overloaded\"") {
            overloaded += 1;
        }
        late.push(took.saturating_sub(deadline));
    }
    (late, overloaded)
}
