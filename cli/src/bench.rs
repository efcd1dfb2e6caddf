//! `rebound bench POLICY.wasm`: the warm decision latency of a policy component on a small
//! grid of requests and reasons, beside the native best-effort strategy measured in the same
//! run.

use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use rebound::wasm::{PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::DecisionContext;
use rebound::{reasons, BestEffort, Request, RequestType, RetryReason, SyncStrategy};
use serde_json::json;

/// Options of `rebound bench`.
#[derive(clap::Args)]
pub struct Args {
    /// A policy component (.wasm).
    policy: PathBuf,
    /// Decisions per measured round.
    #[arg(long, default_value_t = 20_000)]
    iterations: u32,
    /// Measured rounds; the median round is reported.
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The grid: a read and a write, each failing for a few common reasons.
fn grid() -> Vec<(Request, RetryReason)> {
    let hour = Duration::from_secs(3600);
    let mut cases = Vec::new();
    for ty in [RequestType::Get, RequestType::Upsert] {
        for reason in [
            reasons::KV_LOCKED,
            reasons::KV_TEMPORARY_FAILURE,
            reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
            reasons::SERVICE_NOT_AVAILABLE,
        ] {
            let request = Request::new(1, ty, hour).expect("non-zero timeout");
            cases.push((request, reason));
        }
    }
    cases
}

/// Median over `rounds` of the mean time per decision of `strategy` over the grid.
fn measure(strategy: &dyn SyncStrategy, cases: &[(Request, RetryReason)], args: &Args) -> Duration {
    let per_round = args.iterations.max(1);
    let run = || {
        let started = Instant::now();
        for i in 0..per_round {
            let (request, reason) = &cases[i as usize % cases.len()];
            let _ = black_box(strategy.answer(black_box(request), &DecisionContext::new(reason)));
        }
        started.elapsed() / per_round
    };
    run(); // warm-up
    let mut samples: Vec<Duration> = (0..args.rounds.max(1)).map(|_| run()).collect();
    samples.sort();
    samples[samples.len() / 2]
}

/// Loads the policy, measures it and the native baseline, prints the table.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.policy)
        .with_context(|| format!("cannot read {}", args.policy.display()))?;
    let name = args
        .policy
        .file_stem()
        .map_or_else(|| "policy".into(), |s| s.to_string_lossy().into_owned());
    let runtime = WasmRuntime::new(64 << 20).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let started = Instant::now();
    let component = PolicyPre::load(&runtime, &name, &bytes)
        .with_context(|| format!("{} does not load", args.policy.display()))?;
    let compile = started.elapsed();
    let strategy = WasmStrategy::new(component, WasmStrategyConfig::default())
        .with_context(|| format!("{} does not configure", args.policy.display()))?;
    let cases = grid();
    let native = measure(
        &BestEffort::<rebound::backoff::ExponentialBackoff>::default(),
        &cases,
        args,
    );
    let policy = measure(&strategy, &cases, args);
    let failures: u64 = strategy.stats().failures.values().sum();
    let ratio = policy.as_secs_f64() / native.as_secs_f64().max(1e-12);
    if args.json {
        writeln!(
            out,
            "{}",
            json!({
                "policy": name,
                "compile_ms": compile.as_secs_f64() * 1e3,
                "decision_ns": policy.as_nanos() as u64,
                "native_best_effort_ns": native.as_nanos() as u64,
                "ratio": ratio,
                "failed_calls": failures,
            })
        )?;
    } else {
        writeln!(
            out,
            "policy {name}: compiled in {:.1} ms; {} cases, median of {} rounds of {} decisions",
            compile.as_secs_f64() * 1e3,
            cases.len(),
            args.rounds,
            args.iterations
        )?;
        writeln!(out, "| strategy | ns per decision | × native |")?;
        writeln!(out, "| --- | ---: | ---: |")?;
        writeln!(out, "| native best-effort | {} | 1.0 |", native.as_nanos())?;
        writeln!(out, "| {name} | {} | {ratio:.1} |", policy.as_nanos())?;
        if failures > 0 {
            writeln!(
                out,
                "warning: {failures} calls failed and answered the fail-safe: {:?}",
                strategy.stats().last_failure
            )?;
        }
    }
    Ok(())
}
