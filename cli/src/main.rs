//! `rebound`: a decision service with hot reload, and the tools a policy author needs
//! (docs/cli.md has every command with its output).
//!
//! - `rebound serve` — the decision service (HTTP/JSON, hot reload, metrics; docs/serve.md).
//! - `rebound eval` — JSON lines in, one decision per line out (docs/decision-json.md), or a
//!   decision log replayed against a candidate policy.
//! - `rebound new`, `rebound build` — a policy project in Rust, Python, JavaScript, C, C++, Go
//!   or Zig, and its component.
//! - `rebound doctor` — which tools each policy language's build finds, and how to get the rest.
//! - `rebound test POLICY.wasm` — a policy's declarative cases (JSON lines with `expect`).
//! - `rebound check POLICY.wasm` — a policy author's pre-flight: loads it against the WIT and
//!   holds its answers on a generated grid to the invariants.
//! - `rebound inspect POLICY.wasm` — what a component is, without compiling it.
//! - `rebound bench POLICY.wasm` — a policy's decision latency beside the native baseline.
//! - `rebound simulate SCENARIO.toml` — a workload and a fault timeline on a virtual clock
//!   through several policies side by side: a comparison table and an SVG chart.
//! - `rebound push`, `rebound pull` — policy components through an OCI registry.
//! - `rebound wit` — the WIT of any `rebound:policy` version this host loads.
//! - `rebound reasons` — the reason table with both flags and each reason's meaning.
//! - `rebound classify` — a raw response (KV status, query/analytics code, search/views HTTP
//!   status) to its retry reason, or why it is not retried.
//! - `rebound errormap FILE` — validate and summarise a KV error map, or look a code up in it.

// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

mod bench;
mod build;
mod build_stamp;
mod builtin_registry;
mod check;
mod classify;
mod config_file;
mod doctor;
mod errormap;
mod eval;
mod go_workspace;
#[cfg(test)]
mod hostile_numbers;
mod inspect;
mod json_decider;
#[cfg(test)]
mod largest_allocation;
mod logging;
mod new;
mod oci;
mod parse;
mod policy_test;
mod project;
mod reasons;
mod replay;
mod serve;
mod simulate;
mod tools;
mod wire;
mod wit;
mod wit_typescript;
mod workflow;

use clap::{Parser, Subcommand};
use logging::LogFormat;

#[derive(Parser)]
#[command(
    name = "rebound",
    version,
    about = "Decides whether, when and where a failed request is retried"
)]
struct Cli {
    /// How log lines (standard error) are written: `text`, or `json`, one object a line with the
    /// same fields (`timestamp`, `level`, `target`, `fields`).
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The retry reasons with their two flags and meaning (reference 001 "RetryReason").
    Reasons(reasons::Args),
    /// Classifies a raw response (reference 001 "Response Code Classification").
    Classify(classify::Args),
    /// Validates and summarises a KV error map, or looks a code up (reference 004).
    Errormap(errormap::Args),
    /// Serves decisions over HTTP/JSON with hot reload and metrics.
    Serve(serve::Args),
    /// Decides JSON lines (a file or stdin), one decision per line out.
    Eval(eval::Args),
    /// Measures a policy's decision latency beside the native best-effort strategy.
    Bench(bench::Args),
    /// Builds a policy project (its policy.toml), or one policy source, into a component.
    Build(build::Args),
    /// Checks a policy component: WIT compatibility, then invariants on a generated grid.
    Check(check::Args),
    /// Simulates a workload and a fault timeline through policies side by side.
    Simulate(simulate::Args),
    /// Shows what a component is (WIT version, hosts that accept it, imports, metadata)
    /// without compiling it.
    Inspect(inspect::Args),
    /// Lists, per policy language, the tools `rebound build` would run: found where, which
    /// version, how to get a missing one.
    Doctor(doctor::Args),
    /// Creates a standalone policy project (rust, python, javascript, typescript, c, cpp, go,
    /// zig) from a template.
    New(new::Args),
    /// Pushes a policy component to an OCI registry.
    Push(oci::PushArgs),
    /// Pulls a policy component from an OCI registry.
    Pull(oci::PullArgs),
    /// Runs a policy's declarative test cases (JSON lines with `expect`).
    Test(policy_test::Args),
    /// Prints (or writes) the WIT package `rebound:policy` of any version this host loads.
    Wit(wit::Args),
    /// Compiles a component read from stdin for `serve`, writing wasmtime's artifact to
    /// stdout (the child process `serve` compiles in).
    #[command(hide = true)]
    CompileComponent(serve::child_compiler::CompileArgs),
}

#[cfg(test)]
#[global_allocator]
static ALLOCATOR: largest_allocation::Tracking = largest_allocation::Tracking;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs to standard error; `RUST_LOG` overrides the level (`info` for the server, `warn` for
/// the tools). The server starts its logging itself, once it knows whether its configuration
/// exports spans ([`serve::LOG_FILTER`]).
fn init_logging(command: &Command, format: LogFormat) {
    let default = match command {
        Command::Serve(_) => return,
        // The report gives each distinct failure once, in the policy's own words: the lines a
        // failing policy writes to stderr, and each failed call, would repeat it.
        Command::Check(_) => "warn,rebound::wasm::wasi=error,rebound::wasm::health=error",
        // A storm empties budgets by design, in every run of a sweep: the report counts what
        // they refused.
        Command::Simulate(_) => "warn,rebound::traffic_budget=error",
        _ => "warn",
    };
    logging::init(default, format, None);
}

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging(&cli.command, cli.log_format);
    let mut out = std::io::stdout().lock();
    let result = match cli.command {
        Command::Reasons(args) => reasons::run(&args, &mut out),
        Command::Classify(args) => classify::run(&args, &mut out),
        Command::Errormap(args) => errormap::run(&args, &mut out),
        Command::Serve(args) => serve::run(&args, cli.log_format),
        Command::Eval(args) => eval::run(&args, &mut out),
        Command::Bench(args) => bench::run(&args, &mut out),
        Command::Build(args) => build::run(&args, &mut out),
        Command::Check(args) => check::run(&args, &mut out),
        Command::Simulate(args) => simulate::run(&args, &mut out),
        Command::Inspect(args) => inspect::run(&args, &mut out),
        Command::Doctor(args) => doctor::run(&args, &mut out),
        Command::New(args) => new::run(&args, &mut out),
        Command::Push(args) => oci::push(&args, &mut out),
        Command::Pull(args) => oci::pull(&args, &mut out),
        Command::Test(args) => policy_test::run(&args, &mut out),
        Command::Wit(args) => wit::run(&args, &mut out),
        Command::CompileComponent(args) => serve::child_compiler::run(&args),
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
