//! `rebound simulate SCENARIO.toml`: a workload and a fault timeline run on a virtual clock
//! through each policy to compare (`engine`), from a scenario file (`scenario`); prints the
//! comparison table (or `--json`) and writes an SVG chart of attempts and outcomes over time
//! (`chart`). With `--sweep`, `--seeds` or `--assert` it maps where each policy fails to
//! recover instead (`lab`, `map`, `report`). Documented in `docs/simulate.md`.

mod arrivals;
mod assertion;
mod chart;
mod engine;
mod fate;
mod faults;
mod lab;
mod live;
mod load;
mod map;
mod node;
mod recovery;
mod report;
mod results;
mod scenario;
mod setting;
mod summary;
mod sweep;
mod sweep_command;
mod tune;

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use rebound::config::RegistryConfig;
use serde_json::{json, Value};

use self::results::Run;
use self::scenario::Scenario;

/// Options of `rebound simulate`.
#[derive(clap::Args)]
pub struct Args {
    /// The scenario (TOML; docs/simulate.md).
    scenario: PathBuf,
    /// Replace the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Where to write the SVG chart [default: the scenario's name with .svg, in the current
    /// directory].
    #[arg(long)]
    chart: Option<PathBuf>,
    /// Print the results as JSON (with the timeline, or every cell of a sweep) instead of the
    /// table.
    #[arg(long)]
    json: bool,
    /// Sweep a scenario field over a range, STEPS values from FROM to TO (once or twice: the
    /// map's axes; docs/simulate.md "Sweeps").
    #[arg(long, value_name = "KEY=FROM..TO:STEPS")]
    sweep: Vec<sweep::Axis>,
    /// Compare only this policy of the scenario's (repeat for more) [default: all of them].
    #[arg(long = "policy", value_name = "NAME")]
    policies: Vec<String>,
    /// Runs per cell and policy, from the scenario's seed on [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    seeds: Option<u64>,
    /// Find the least restrictive value of a registry-configuration field (FROM is the least
    /// restrictive; STEPS values, 11 when absent) whose sweep recovers in every cell
    /// (docs/simulate.md "Tuning").
    #[arg(long, value_name = "KEY=FROM..TO[:STEPS]", value_parser = sweep::tuning)]
    tune: Option<sweep::Axis>,
    /// A condition every cell and policy must meet (`p_no_recovery < 0.01`): the first that
    /// fails is named and the command exits with status 1.
    #[arg(long = "assert", value_name = "EXPR")]
    assertions: Vec<assertion::Assertion>,
}

/// The registry configuration restricted to `name`, which decides every request.
pub(super) fn only(config: &RegistryConfig, name: &str) -> RegistryConfig {
    let mut one = config.clone();
    one.default_policy = name.to_owned();
    one.policies.retain(|k, _| k == name);
    one.profiles.clear();
    one.services.clear();
    one.request_types.clear();
    one.routes.clear();
    one.policy_controls.retain(|policy, _| policy == name);
    one.watch.enabled = false;
    one.strict_start = true;
    one
}

/// The value at quantile `q` of sorted `values` (nearest rank), in milliseconds.
fn percentile_ms(values: &[u64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    Some(values[rank - 1] as f64 / 1000.0)
}

/// Successes per second from the end of the last fault to the end of the run's timeline (the
/// whole run when there is no fault): a storm that outlives its trigger keeps it low.
fn goodput_after_faults(run: &Run, scenario: &Scenario) -> Option<f64> {
    let end_s = (scenario.faults.iter())
        .map(|f| f.window().until_s)
        .fold(0.0, f64::max);
    let first = (end_s / scenario.bucket_s).ceil() as usize;
    let until = ((scenario.duration_s / scenario.bucket_s).floor() as usize).min(run.buckets.len());
    let buckets = run.buckets.get(first..until).filter(|b| !b.is_empty())?;
    let succeeded: u64 = buckets.iter().map(|b| b.ended.succeeded).sum();
    Some(succeeded as f64 / (buckets.len() as f64 * scenario.bucket_s))
}

/// Attempts that reached the cluster per request offered: over the run, and in the worst bar.
fn amplification(run: &Run) -> (f64, f64) {
    let overall = run.cluster_attempts as f64 / (run.requests.max(1)) as f64;
    let peak = run
        .buckets
        .iter()
        .filter(|b| b.arrivals > 0)
        .map(|b| b.cluster_attempts as f64 / b.arrivals as f64)
        .fold(0.0, f64::max);
    (overall, peak)
}

fn run_json(run: &Run, scenario: &Scenario) -> Value {
    let (load, peak) = amplification(run);
    let o = &run.outcomes;
    json!({
        "policy": run.policy,
        "requests": run.requests,
        "succeeded": o.succeeded,
        "cancelled": o.cancelled,
        "ambiguous_timeouts": o.ambiguous_timeouts,
        "unambiguous_timeouts": o.unambiguous_timeouts,
        "latency_p50_ms": percentile_ms(&run.latencies_us, 0.50),
        "latency_p99_ms": percentile_ms(&run.latencies_us, 0.99),
        "attempts": run.attempts,
        "attempts_per_request": run.attempts as f64 / run.requests.max(1) as f64,
        "cluster_attempts": run.cluster_attempts,
        "abandoned_attempts": run.abandoned,
        "load_amplification": load,
        "peak_load_amplification": peak,
        "goodput_after_faults_per_s": goodput_after_faults(run, scenario),
        "errors": run.errors,
        "timeline": run.buckets.iter().zip(run.bucket_p99_ms()).enumerate().map(|(i, (b, p99))| json!({
            "t_s": i as f64 * scenario.bucket_s,
            "arrivals": b.arrivals,
            "attempts": b.attempts,
            "cluster_attempts": b.cluster_attempts,
            "abandoned_attempts": b.abandoned,
            "succeeded": b.ended.succeeded,
            "cancelled": b.ended.cancelled,
            "ambiguous_timeouts": b.ended.ambiguous_timeouts,
            "unambiguous_timeouts": b.ended.unambiguous_timeouts,
            "latency_p99_ms": p99,
        })).collect::<Vec<_>>(),
    })
}

fn write_table(out: &mut impl Write, runs: &[Run], scenario: &Scenario) -> std::io::Result<()> {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.1}"));
    writeln!(
        out,
        "| policy | succeeded | cancelled | ambiguous timeouts | unambiguous timeouts | p50 ms | p99 ms | attempts/request | load × (peak) | abandoned | goodput/s after the faults |"
    )?;
    writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )?;
    for run in runs {
        let o = &run.outcomes;
        let (load, peak) = amplification(run);
        let after =
            goodput_after_faults(run, scenario).map_or_else(|| "-".into(), |g| format!("{g:.0}"));
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {:.2} | {load:.2} ({peak:.2}) | {} | {after} |",
            run.policy,
            o.succeeded,
            o.cancelled,
            o.ambiguous_timeouts,
            o.unambiguous_timeouts,
            ms(percentile_ms(&run.latencies_us, 0.50)),
            ms(percentile_ms(&run.latencies_us, 0.99)),
            run.attempts as f64 / run.requests.max(1) as f64,
            run.abandoned,
        )?;
    }
    Ok(())
}

/// Restricts `scenario`'s comparison to the policies `--policy` names, each one it compares.
pub(super) fn restrict(args: &Args, scenario: &mut Scenario) -> anyhow::Result<()> {
    if args.policies.is_empty() {
        return Ok(());
    }
    let compared = &scenario.compare.policies;
    if let Some(unknown) = args.policies.iter().find(|p| !compared.contains(p)) {
        anyhow::bail!(
            "--policy {unknown}: {} compares {}",
            args.scenario.display(),
            compared.join(", ")
        );
    }
    scenario.compare.policies = args.policies.clone();
    Ok(())
}

/// Every policy the scenario compares is one of `config`'s.
pub(super) fn check_compared(
    args: &Args,
    scenario: &Scenario,
    config: &RegistryConfig,
) -> anyhow::Result<()> {
    for (i, name) in scenario.compare.policies.iter().enumerate() {
        if !config.policies.contains_key(name) {
            anyhow::bail!(
                "{}: compare.policies[{i}]: `{name}` is not a policy of {} (its policies: {})",
                args.scenario.display(),
                scenario.compare.config.display(),
                config
                    .policies
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(())
}

/// Runs `arrivals` through each compared policy, each with a registry of its own: nothing (a
/// retry budget) carries over from another policy's run.
fn run_each(
    scenario: &Scenario,
    config: &RegistryConfig,
    arrivals: &[arrivals::Arrival],
) -> anyhow::Result<Vec<Run>> {
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let mut runs = Vec::new();
    for name in &scenario.compare.policies {
        let registries = (0..scenario.clients)
            .map(|_| crate::oci::load_registry(only(config, name)))
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("policy `{name}` of {}", scenario.compare.config.display()))?;
        let started = std::time::Instant::now();
        let run = runtime.block_on(engine::run(scenario, &registries, name, arrivals))?;
        tracing::info!(
            policy = name,
            requests = run.requests,
            attempts = run.attempts,
            took_ms = started.elapsed().as_millis() as u64,
            "simulated"
        );
        runs.push(run);
    }
    Ok(runs)
}

/// The scenario file's name without its extension.
pub(super) fn stem(args: &Args) -> String {
    (args.scenario.file_stem())
        .map_or_else(|| "simulation".into(), |s| s.to_string_lossy().into_owned())
}

/// Loads the scenario and its policies, runs each, prints the results, writes the chart; or
/// runs a sweep.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    if !args.sweep.is_empty()
        || args.seeds.is_some()
        || !args.assertions.is_empty()
        || args.tune.is_some()
    {
        return sweep_command::run(args, out);
    }
    let mut scenario = Scenario::load(&args.scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    restrict(args, &mut scenario)?;
    let config = crate::config_file::load(&scenario.compare.config)?;
    check_compared(args, &scenario, &config)?;
    let arrivals = arrivals::arrivals(&scenario);
    let runs = run_each(&scenario, &config, &arrivals)?;
    let stem = stem(args);
    let chart_path = args
        .chart
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{stem}.svg")));
    let title = format!(
        "{stem}: {} requests over {} s, seed {}",
        arrivals.len(),
        scenario.duration_s,
        scenario.seed
    );
    std::fs::write(&chart_path, chart::render(&scenario, &title, &runs))
        .with_context(|| format!("cannot write the chart to {}", chart_path.display()))?;
    if args.json {
        let report = json!({
            "scenario": args.scenario.display().to_string(),
            "description": scenario.description,
            "seed": scenario.seed,
            "requests": arrivals.len(),
            "duration_s": scenario.duration_s,
            "faults": scenario.faults.iter().map(|f| {
                let w = f.window();
                json!({"kind": f.name(), "from_s": w.from_s, "until_s": w.until_s})
            }).collect::<Vec<_>>(),
            "chart": chart_path.display().to_string(),
            "policies": runs.iter().map(|r| run_json(r, &scenario)).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(out, "{title}")?;
        if !scenario.description.is_empty() {
            writeln!(out, "{}", scenario.description)?;
        }
        for fault in &scenario.faults {
            let w = fault.window();
            writeln!(
                out,
                "  fault {} from {} s to {} s",
                fault.name(),
                w.from_s,
                w.until_s
            )?;
        }
        writeln!(out)?;
        write_table(out, &runs, &scenario)?;
        writeln!(out, "\nchart: {}", chart_path.display())?;
    }
    Ok(())
}
