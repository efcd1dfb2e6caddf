//! `rebound-memcached`: runs one memcached operation under Rebound's retry handling and prints
//! the value, or the outcome error with its error context.
//!
//! ```text
//! cargo run -p rebound-memcached -- --addr 127.0.0.1:11211 incr visits
//! ```

// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rebound_memcached::Client;

#[derive(Parser)]
#[command(
    about = "One memcached operation, retried by Rebound (set RUST_LOG=info to see decisions)"
)]
struct Args {
    /// The memcached server.
    #[arg(long, default_value = "127.0.0.1:11211")]
    addr: SocketAddr,
    /// The operation's timeout in milliseconds.
    #[arg(long, default_value_t = 2500)]
    timeout_ms: u64,
    #[command(subcommand)]
    operation: Operation,
}

#[derive(Subcommand)]
enum Operation {
    /// Prints the value of KEY.
    Get { key: String },
    /// Stores VALUE under KEY.
    Set { key: String, value: String },
    /// Adds DELTA to the counter KEY (created at INITIAL) and prints the new value.
    Incr {
        key: String,
        #[arg(long, default_value_t = 1)]
        delta: u64,
        #[arg(long, default_value_t = 0)]
        initial: u64,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(
            std::env::var("RUST_LOG")
                .ok()
                .and_then(|level| level.parse().ok())
                .unwrap_or(tracing_subscriber::filter::LevelFilter::WARN),
        )
        .init();
    let args = Args::parse();
    anyhow::ensure!(
        args.timeout_ms > 0,
        "--timeout-ms must be greater than zero"
    );
    let client = Client::new(args.addr, Duration::from_millis(args.timeout_ms));
    match args.operation {
        Operation::Get { key } => match client.get(&key).await.context("get")? {
            Some(value) => println!("{}", String::from_utf8_lossy(&value)),
            None => println!("(no value)"),
        },
        Operation::Set { key, value } => {
            client.set(&key, value.as_bytes()).await.context("set")?;
            println!("stored");
        }
        Operation::Incr {
            key,
            delta,
            initial,
        } => println!(
            "{}",
            client.incr(&key, delta, initial).await.context("incr")?
        ),
    }
    Ok(())
}
