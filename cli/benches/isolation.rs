//! Policy isolation in `rebound serve`, as a table: the built-in policy's
//! decisions per second with nothing else running, then while 8 clients hammer a policy that
//! spins until its deadline; and how late past that deadline (counted from the request's
//! arrival, waiting for a place included) the spinning policy's requests are answered.
//!
//! `cargo bench -p rebound-cli --bench isolation [-- SECONDS]` (SECONDS per phase, 5 rounds of
//! an unloaded and a loaded phase; needs `./scripts/build-guests.sh` for the adversary policy).
//! The server runs with 2 workers and its default isolation (two policy threads per core, one
//! call per two cores for a policy, 125 ms per second per core of the threads' time for one
//! policy, the epoch ticker's thread asking a real-time priority), then with the ticker's
//! thread given a short time slice or left at the usual priority, then as isolation was
//! before the time share (one call per core, no limit on a policy's time, the usual priority).
//! Lateness is read at the client and from the answers' `Server-Timing`.

mod support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{ms, serve, Client};

/// The spinning policy's deadline.
const DEADLINE_MS: u64 = 10;

/// Unloaded and loaded phases measured, alternating.
const ROUNDS: usize = 5;

const BUILTIN: &str = r#"{"reason": "KV_LOCKED"}"#;
const SPIN: &str = r#"{"policy": "spinner", "request": {"client_context": {"spin": "yes"}}, "reason": "KV_LOCKED"}"#;

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let window = Duration::from_secs(seconds);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let guest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/guests/adversary.wasm");
    assert!(
        guest.is_file(),
        "{}: run ./scripts/build-guests.sh",
        guest.display()
    );
    let before = format!("[engine.isolation]\nper_policy = {cores}\nbusy_per_second_ms = 0");
    let columns = [
        ("default isolation", "[engine.isolation]".to_owned()),
        (
            "the ticker's short slice",
            "[engine]\nticker_priority = \"short_slice\"\n[engine.isolation]".to_owned(),
        ),
        (
            "the ticker's normal priority",
            "[engine]\nticker_priority = \"normal\"\n[engine.isolation]".to_owned(),
        ),
        (
            "one call per core, no time share, the ticker's normal priority",
            format!("[engine]\nticker_priority = \"normal\"\n{before}"),
        ),
    ];
    let rows: Vec<Row> = columns
        .iter()
        .map(|(_, engine)| measure(&guest, engine, window))
        .collect();
    let labels: Vec<&str> = columns.iter().map(|(label, _)| *label).collect();
    println!("| measure | {} |", labels.join(" | "));
    println!("|{}", " --- |".repeat(labels.len() + 1));
    let line = |what: &str, cell: &dyn Fn(&Row) -> String| {
        let cells: Vec<String> = rows.iter().map(cell).collect();
        println!("| {what} | {} |", cells.join(" | "));
    };
    line(
        "built-in decisions/s, unloaded (2 clients), mean of the rounds",
        &|r| format!("{:.0}", r.unloaded),
    );
    line(
        "built-in decisions/s, 8 clients on the spinning policy, mean of the rounds",
        &|r| format!("{:.0}", r.loaded),
    );
    line(
        &format!("loaded ÷ unloaded, median (lowest – highest) of {ROUNDS} rounds"),
        &|r| {
            let (low, high) = (r.ratios[0], r.ratios[r.ratios.len() - 1]);
            format!("{:.2} ({low:.2} – {high:.2})", r.ratios[r.ratios.len() / 2])
        },
    );
    line("spinning-policy requests answered", &|r| {
        (r.late.len() + r.overloaded.len()).to_string()
    });
    line(
        "… of which `overloaded` (no place or no share within the deadline)",
        &|r| r.overloaded.len().to_string(),
    );
    line(
        &format!(
            "answers past the {DEADLINE_MS} ms deadline at the client, p50 / p99 / max (ms): all"
        ),
        &|r| {
            let mut all = [r.late.as_slice(), &r.overloaded].concat();
            all.sort();
            spread(&all)
        },
    );
    line("… the calls ended by their deadline", &|r| {
        spread(&r.late)
    });
    line("… the `overloaded` answers", &|r| spread(&r.overloaded));
    line(
        "past the deadline in the server (`Server-Timing`), p50 / p99 / max (ms): the calls",
        &|r| spread(&r.late_in_server),
    );
    line("… the `overloaded` answers", &|r| {
        spread(&r.overloaded_in_server)
    });
}

/// One configuration's figures.
struct Row {
    unloaded: f64,
    loaded: f64,
    /// Loaded ÷ unloaded in each round, sorted.
    ratios: Vec<f64>,
    /// How late past the deadline each spinning-policy call's answer came at the client, sorted.
    late: Vec<Duration>,
    /// The same for the answers `overloaded`.
    overloaded: Vec<Duration>,
    /// How late past the deadline the server answered the calls, by its `Server-Timing`.
    late_in_server: Vec<Duration>,
    /// The same for the answers `overloaded`.
    overloaded_in_server: Vec<Duration>,
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

/// Serves the spinning policy with `engine` added to the configuration (its `[engine]`
/// tables), and measures.
fn measure(guest: &std::path::Path, engine: &str, window: Duration) -> Row {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guest, dir.path().join("adversary.wasm")).unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        format!(
            "default_policy = \"standard\"\n[watch]\nenabled = false\n\
             {engine}\n\
             [policies.standard]\nbuiltin = \"best-effort\"\n\
             [policies.spinner]\ncomponent = \"adversary.wasm\"\n\
             limits = {{ deadline_ms = {DEADLINE_MS}, fuel = 100_000_000_000 }}\n\
             quarantine = {{ after_failures = 0 }}\n"
        ),
    )
    .unwrap();
    let (mut server, address) = serve(&dir.path().join("rebound.toml"));
    let (active, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let spinners: Vec<_> = (0..8)
        .map(|_| {
            let (address, active, stop) = (address.clone(), Arc::clone(&active), Arc::clone(&stop));
            std::thread::spawn(move || hammer(&address, &active, &stop))
        })
        .collect();
    // Unloaded and loaded phases alternate, so that a change in the machine's own load
    // between them moves both.
    let (mut unloaded, mut loaded, mut ratios) = (0.0, 0.0, Vec::new());
    for _ in 0..ROUNDS {
        let alone = builtin_rate(&address, window, 2);
        active.store(true, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(200));
        let beside = builtin_rate(&address, window, 2);
        active.store(false, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(200));
        unloaded += alone / ROUNDS as f64;
        loaded += beside / ROUNDS as f64;
        ratios.push(beside / alone.max(f64::MIN_POSITIVE));
    }
    ratios.sort_by(f64::total_cmp);
    stop.store(true, Ordering::Relaxed);
    let [mut late, mut overloaded, mut late_in_server, mut overloaded_in_server] =
        [(); 4].map(|_| Vec::new());
    for spinner in spinners {
        let lateness = spinner.join().unwrap();
        late.extend(lateness.called);
        overloaded.extend(lateness.overloaded);
        late_in_server.extend(lateness.called_in_server);
        overloaded_in_server.extend(lateness.overloaded_in_server);
    }
    for values in [
        &mut late,
        &mut overloaded,
        &mut late_in_server,
        &mut overloaded_in_server,
    ] {
        values.sort();
    }
    let _ = server.kill();
    let _ = server.wait();
    Row {
        unloaded,
        loaded,
        ratios,
        late,
        overloaded,
        late_in_server,
        overloaded_in_server,
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

/// How late past the deadline one client's spinning-policy answers came.
#[derive(Default)]
struct Lateness {
    called: Vec<Duration>,
    overloaded: Vec<Duration>,
    called_in_server: Vec<Duration>,
    overloaded_in_server: Vec<Duration>,
}

/// Asks the spinning policy while `active`, until `stop`: how late past the deadline each
/// answer came at the client and in the server, for the calls made and for the answers
/// `overloaded`.
fn hammer(address: &str, active: &AtomicBool, stop: &AtomicBool) -> Lateness {
    let mut client = Client::connect(address);
    let deadline = Duration::from_millis(DEADLINE_MS);
    let mut lateness = Lateness::default();
    while !stop.load(Ordering::Relaxed) {
        if !active.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let started = Instant::now();
        let (status, body) = client.decide(SPIN);
        let past = started.elapsed().saturating_sub(deadline);
        assert_eq!(status, 200, "{body}");
        let in_server = client
            .server_time()
            .expect("a Server-Timing header")
            .saturating_sub(deadline);
        if body.contains("\"overloaded\"") {
            lateness.overloaded.push(past);
            lateness.overloaded_in_server.push(in_server);
        } else {
            lateness.called.push(past);
            lateness.called_in_server.push(in_server);
        }
    }
    lateness
}
