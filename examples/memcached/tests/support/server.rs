//! A real memcached server on loopback, started by the test and stopped when dropped, and its
//! own counters read over the text protocol's `stats` command.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Where Debian's package installs memcached (`scripts/test-services.sh` installs it).
const MEMCACHED: &str = "/usr/bin/memcached";

/// Ports handed to servers come from below Linux's ephemeral range (32768–60999 by default):
/// a socket bound to port 0 (the fault proxy) or an outgoing connection never takes one of
/// them between the choice and the server's own bind, and a client dialling a server that is
/// not up yet cannot connect to itself.
const PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A free loopback port for a server, never the same twice in one test process.
pub(crate) fn free_port() -> SocketAddr {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let span = PORTS.end - PORTS.start;
    // Concurrent test processes start at different places.
    let base = (std::process::id() % u32::from(span)) as u16;
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = PORTS.start + base.wrapping_add(offset) % span;
        if let Ok(addr) = TcpListener::bind(("127.0.0.1", port)).and_then(|l| l.local_addr()) {
            return addr;
        }
    }
    panic!("no free loopback port in {PORTS:?}")
}

/// A running memcached.
pub(crate) struct Memcached {
    pub addr: SocketAddr,
    child: Child,
}

impl Memcached {
    /// Starts memcached on `addr` and waits until it accepts connections.
    pub(crate) fn start(addr: SocketAddr) -> Memcached {
        let child = Command::new(MEMCACHED)
            .args([
                "-l",
                "127.0.0.1",
                "-p",
                &addr.port().to_string(),
                "-U",
                "0",
                "-t",
                "1",
            ])
            .args(["-u", "root"]) // ignored unless run as root, required then
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {MEMCACHED} ({e}); install it with ./scripts/test-services.sh")
            });
        let mut server = Memcached { addr, child };
        let started = Instant::now();
        while !server.answers_version() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("memcached on {addr} exited at start ({status})");
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "memcached did not start on {addr}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        server
    }

    /// Whether a memcached answers `version` on the address: a listener of another kind
    /// does not count as the server being up.
    fn answers_version(&self) -> bool {
        let Ok(mut stream) = std::net::TcpStream::connect(self.addr) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut line = String::new();
        stream.write_all(b"version\r\n").is_ok()
            && std::io::BufReader::new(stream).read_line(&mut line).is_ok()
            && line.starts_with("VERSION ")
    }

    /// The server's `stats` counters.
    pub(crate) async fn stats(&self) -> HashMap<String, u64> {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(b"stats\r\n").await.unwrap();
        let mut lines = BufReader::new(stream).lines();
        let mut stats = HashMap::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            if line == "END" {
                break;
            }
            let mut fields = line.split_whitespace().skip(1);
            if let (Some(name), Some(Ok(value))) = (fields.next(), fields.next().map(str::parse)) {
                stats.insert(name.to_owned(), value);
            }
        }
        stats
    }

    /// How many increments the server applied to an existing counter (`incr_hits`). memcached
    /// counts no statistic for an increment that creates its counter, so tests seed theirs.
    pub(crate) async fn increments_applied(&self) -> u64 {
        self.stats().await["incr_hits"]
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
