//! `rebound serve` as a real process on loopback, for the tests that drive it over HTTP.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A server process, killed when dropped. Its standard error is read all along by a thread
/// (a pipe nobody drains fills up and blocks the server's logging, and with it the server).
pub struct Server {
    child: Child,
    base: String,
    dir: PathBuf,
    /// The temporary directory the configuration is in, when the server owns it.
    _owned: Option<tempfile::TempDir>,
    log: Option<JoinHandle<String>>,
}

/// Longest wait for one HTTP exchange: a server that stops answering fails the test instead
/// of hanging it. Generous: a reload answers once it has compiled a component (in a child
/// process, killed at its limits), which on two busy cores of a debug build takes far longer
/// than on an idle machine.
const CALL_TIMEOUT: Duration = Duration::from_secs(180);

/// The `rebound` binary under test.
fn rebound() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rebound"))
}

/// A client that returns every status as an answer and gives up after `CALL_TIMEOUT`.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(CALL_TIMEOUT))
        .build()
        .into()
}

/// The status and the body, parsed as JSON when it is.
fn answer(mut response: ureq::http::Response<ureq::Body>) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

impl Server {
    /// Serves `dir/rebound.toml`, owning `dir`.
    pub fn start_in(dir: tempfile::TempDir, listen: &str, token: Option<&str>) -> Server {
        let mut server = Self::start(&dir.path().join("rebound.toml"), listen, token);
        server._owned = Some(dir);
        server
    }

    /// Serves the configuration `config` on `listen`, with admin `token` if any.
    pub fn start(config: &Path, listen: &str, token: Option<&str>) -> Server {
        Self::start_with_env(config, listen, token, &[])
    }

    /// `start` with these environment variables set.
    pub fn start_with_env(
        config: &Path,
        listen: &str,
        token: Option<&str>,
        env: &[(&str, &Path)],
    ) -> Server {
        Self::launch(rebound(), config, listen, token, env, &[])
    }

    /// Serves `config` on a free loopback port with these further options of `serve`.
    pub fn start_with_options(config: &Path, options: &[&str]) -> Server {
        Self::launch(rebound(), config, "127.0.0.1:0", None, &[], options)
    }

    /// As `start_with_options`, the process's open-file limit (`ulimit -n`) set to `limit`.
    pub fn start_with_open_files(config: &Path, limit: u64, options: &[&str]) -> Server {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!("ulimit -n {limit} && exec \"$0\" \"$@\""),
            env!("CARGO_BIN_EXE_rebound"),
        ]);
        Self::launch(command, config, "127.0.0.1:0", None, &[], options)
    }

    fn launch(
        mut command: Command,
        config: &Path,
        listen: &str,
        token: Option<&str>,
        env: &[(&str, &Path)],
        options: &[&str],
    ) -> Server {
        command
            .args(["serve", "--listen", listen, "--workers", "2"])
            .args(options)
            .arg(config)
            .env_remove("RUST_BACKTRACE")
            .env_remove("REBOUND_ADMIN_TOKEN")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("REBOUND_ADMIN_TOKEN", token);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let log = std::thread::spawn(move || {
            let mut log = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut log);
            log
        });
        let Some(base) = line.trim().strip_prefix("rebound serve listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "unexpected first line {line:?}; the server said:\n{}",
                log.join().unwrap()
            );
        };
        Server {
            base: base.replace("0.0.0.0", "127.0.0.1"),
            child,
            dir: config.parent().unwrap().to_owned(),
            _owned: None,
            log: Some(log),
        }
    }

    /// The directory of the configuration.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `method path` with `body` (and the admin `token`): the status and the answer, parsed
    /// as JSON when it is.
    pub fn call(&self, method: &str, path: &str, body: &str, token: Option<&str>) -> (u16, Value) {
        let agent = agent();
        let url = format!("{}{path}", self.base);
        let response = match method {
            "GET" => agent.get(&url).call(),
            _ => {
                let mut request = agent.post(&url).header("Content-Type", "application/json");
                if let Some(token) = token {
                    request = request.header("Authorization", &format!("Bearer {token}"));
                }
                request.send(body)
            }
        }
        .unwrap();
        answer(response)
    }

    /// `POST path` with exactly these headers (no others but what HTTP needs).
    pub fn post_with_headers(&self, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
        let agent = agent();
        let mut request = agent.post(&format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send("{}").unwrap();
        answer(response)
    }

    /// The process's resident memory (`VmRSS`), in bytes.
    pub fn resident_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kib| kib.trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmRSS in {status}"));
        kib * 1024
    }

    /// The address it serves, `host:port`.
    pub fn authority(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, &body.to_string(), None)
    }

    /// Sends SIGTERM and waits for the exit; returns the exit success and the log.
    pub fn terminate(mut self) -> (bool, String) {
        self.signal("TERM");
        let (success, log, _) = self.wait_exit(Duration::from_secs(10));
        (success, log)
    }

    /// Sends signal `name` (`TERM`, `INT`).
    pub fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap()
            .success());
    }

    /// Waits at most `limit` for the exit: its success, the log, and how long it took.
    pub fn wait_exit(&mut self, limit: Duration) -> (bool, String, Duration) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let log = self.log.take().unwrap().join().unwrap();
                return (status.success(), log, started.elapsed());
            }
            if started.elapsed() >= limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let log = self.log.take().unwrap().join().unwrap();
                panic!("no exit within {limit:?}; the log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
