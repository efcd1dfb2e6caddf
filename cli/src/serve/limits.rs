//! How long `rebound serve` waits for a client and how many it holds: the header, body and
//! idle timeouts, the connection cap and the drain timeout, as command-line options with
//! defaults safe for a service on its own (docs/serve.md "Connections").

use std::time::Duration;

/// Connection limits of `rebound serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct Limits {
    /// Longest wait, in ms, from a request's first byte to the end of its headers.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub header_timeout_ms: u64,
    /// Longest wait, in ms, for a request's whole body once its headers are read.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub body_timeout_ms: u64,
    /// How long, in ms, a connection may stay open with no request (keep-alive).
    #[arg(long, default_value_t = 60_000, value_name = "MS")]
    pub idle_timeout_ms: u64,
    /// Most connections open at once; past it a new connection is answered 503 and closed.
    /// Each holds two file descriptors: a cap the open-file limit (`ulimit -n`) cannot hold is
    /// lowered at start to what fits, and the log says so.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// On SIGTERM/SIGINT, longest wait, in ms, for the requests received to be answered
    /// before the connections still open are cut; a second signal cuts them at once.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub drain_timeout_ms: u64,
    /// Most memory, in MiB, compiling one component may take (it compiles in a child process,
    /// killed past it); the component is refused and the running version kept.
    #[arg(long, default_value_t = 2_048, value_name = "MIB", value_parser = clap::value_parser!(u64).range(16..))]
    pub compile_memory_mb: u64,
    /// Longest time, in ms, compiling one component may take; past it the component is
    /// refused and the running version kept.
    #[arg(long, default_value_t = 120_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub compile_timeout_ms: u64,
}

impl Limits {
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }
    pub fn body_timeout(&self) -> Duration {
        Duration::from_millis(self.body_timeout_ms)
    }
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }
    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms)
    }
}
