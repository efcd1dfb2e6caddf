//! `rebound`: the library's reference tables and classifiers from the command line.
//!
//! - `rebound reasons` — the reason table with both flags (text or `--json`).
//! - `rebound classify` — a raw response (KV status, query/analytics code, search/views HTTP
//!   status) to its retry reason, or why it is not retried.
//! - `rebound errormap FILE` — validate and summarise a KV error map, or look a code up in it.

mod classify;
mod errormap;
mod reasons;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "rebound",
    version,
    about = "Decides whether, when and where a failed request is retried"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The retry reasons with their two flags (reference 001 "RetryReason").
    Reasons(reasons::Args),
    /// Classifies a raw response (reference 001 "Response Code Classification").
    Classify(classify::Args),
    /// Validates and summarises a KV error map, or looks a code up (reference 004).
    Errormap(errormap::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    let result = match cli.command {
        Command::Reasons(args) => reasons::run(&args, &mut out),
        Command::Classify(args) => classify::run(&args, &mut out),
        Command::Errormap(args) => errormap::run(&args, &mut out),
    };
    match result {
        // The reader went away (`rebound reasons | head`): not an error of ours.
        Err(error)
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        other => other,
    }
}
