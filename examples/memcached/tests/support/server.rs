//! A real memcached server on loopback, started by the test and stopped when dropped, and its
//! own counters read over the text protocol's `stats` command.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Where Debian's package installs memcached (`scripts/test-services.sh` installs it).
const MEMCACHED: &str = "/usr/bin/memcached";

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
}

/// A running memcached.
pub struct Memcached {
    pub addr: SocketAddr,
    child: Child,
}

impl Memcached {
    /// Starts memcached on `addr` and waits until it accepts connections.
    pub fn start(addr: SocketAddr) -> Memcached {
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
        let server = Memcached { addr, child };
        let started = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "memcached did not start on {addr}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        server
    }

    /// The server's `stats` counters.
    pub async fn stats(&self) -> HashMap<String, u64> {
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
    pub async fn increments_applied(&self) -> u64 {
        self.stats().await["incr_hits"]
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
