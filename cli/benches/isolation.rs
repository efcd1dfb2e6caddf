//! Policy isolation in `rebound serve` (issue 19, point 2), as a table: the built-in policy's
//! decisions per second with nothing else running, then while 8 clients hammer a policy that
//! spins until its deadline; and how late past that deadline (counted from the request's
//! arrival, waiting for a place included) the spinning policy's requests are answered.
//!
//! `cargo bench -p rebound-cli --bench isolation [-- SECONDS]` (needs `./scripts/build-guests.sh`
//! for the adversary policy). The server runs with 2 workers and its default isolation (two
//! policy threads per core, one call per core for a policy), the threads at nice 0, then at
//! nice 10 (the default).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    println!("| measure | policy threads at nice 0 | at nice 10 (the default) |");
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Starts `rebound serve` on a free port: the process and its address.
fn serve(config: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rebound"))
        .args(["serve", "--listen", "127.0.0.1:0", "--workers", "2"])
        .arg(config)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let address = line
        .trim()
        .strip_prefix("rebound serve listening on http://")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    (child, address)
}

/// Built-in decisions per second over `window` from `clients` kept-alive connections.
fn builtin_rate(address: &str, window: Duration, clients: usize) -> f64 {
    let counts: Vec<_> = (0..clients)
        .map(|_| {
            let address = address.to_owned();
            std::thread::spawn(move || {
                let mut connection = connect(&address);
                let started = Instant::now();
                let mut n = 0u64;
                while started.elapsed() < window {
                    let (status, _) = exchange(&mut connection, BUILTIN);
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
    let mut connection = connect(address);
    let deadline = Duration::from_millis(DEADLINE_MS);
    let (mut late, mut overloaded) = (Vec::new(), 0);
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let (status, body) = exchange(&mut connection, SPIN);
        let took = started.elapsed();
        assert_eq!(status, 200, "{body}");
        if body.contains("\"overloaded\"") {
            overloaded += 1;
        }
        late.push(took.saturating_sub(deadline));
    }
    (late, overloaded)
}

/// A connection that sends each request at once (no Nagle delay).
fn connect(address: &str) -> TcpStream {
    let connection = TcpStream::connect(address).unwrap();
    connection.set_nodelay(true).unwrap();
    connection
}

/// One `POST /v1/decide` on a kept-alive connection: the status and the body.
fn exchange(connection: &mut TcpStream, body: &str) -> (u16, String) {
    let request = format!(
        "POST /v1/decide HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    connection.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        connection.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap();
    let mut body = vec![0u8; length];
    connection.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}
