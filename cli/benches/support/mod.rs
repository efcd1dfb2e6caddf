//! What the serve benchmarks share: `rebound serve` started on a free port, and a client that
//! sends `POST /v1/decide` on a kept-alive connection without Nagle's delay.
#![allow(dead_code)] // each bench uses a different subset

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Starts `rebound serve` on a free port: the process and its address.
pub fn serve(config: &Path) -> (Child, String) {
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

/// A kept-alive connection that sends each request at once (no Nagle delay) and reads the
/// answers through a buffer.
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    server_time: Option<Duration>,
}

impl Client {
    pub fn connect(address: &str) -> Client {
        let writer = TcpStream::connect(address).unwrap();
        writer.set_nodelay(true).unwrap();
        Client {
            reader: BufReader::new(writer.try_clone().unwrap()),
            writer,
            server_time: None,
        }
    }

    /// One `POST /v1/decide` with `body`: the status and the answer.
    pub fn decide(&mut self, body: &str) -> (u16, String) {
        let request = format!(
            "POST /v1/decide HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.writer.write_all(request.as_bytes()).unwrap();
        self.answer()
    }

    /// One `GET path`: the status and the answer.
    pub fn get(&mut self, path: &str) -> (u16, String) {
        let request = format!("GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n");
        self.writer.write_all(request.as_bytes()).unwrap();
        self.answer()
    }

    /// The server's time for the last answer, from its `Server-Timing` header.
    pub fn server_time(&self) -> Option<Duration> {
        self.server_time
    }

    fn answer(&mut self) -> (u16, String) {
        self.server_time = None;
        let mut status = 0;
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let text = line.trim_end();
            if text.is_empty() {
                break;
            }
            if let Some(rest) = text.strip_prefix("HTTP/1.1 ") {
                status = rest[..3].parse().unwrap();
            } else if let Some((name, value)) = text.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                } else if name.eq_ignore_ascii_case("server-timing") {
                    self.server_time = value
                        .split_once("dur=")
                        .and_then(|(_, ms)| ms.trim().parse::<f64>().ok())
                        .map(|ms| Duration::from_secs_f64(ms / 1000.0));
                }
            }
        }
        let mut body = vec![0u8; length];
        self.reader.read_exact(&mut body).unwrap();
        (status, String::from_utf8(body).unwrap())
    }
}
