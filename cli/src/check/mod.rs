//! `rebound check POLICY.wasm`: the policy author's pre-flight. Loads the component against
//! the host's WIT package (reporting version compatibility and what it imports), then asks it
//! about every input of a generated grid (`grid`) twice, in opposite orders, and checks the
//! invariants (`invariants`). A call that fails costs a new instance (a few milliseconds for a
//! language runtime), so the check stops asking after `--max-failures` failing inputs. A human
//! report or `--json`; exit status 1 on any violation.

mod grid;
mod hedging;
mod invariants;
mod report;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use rebound::wasm::{ArtifactCache, PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};

use self::hedging::Hedged;
use self::invariants::Answer;
use self::report::Report;

/// Options of `rebound check`.
#[derive(clap::Args)]
pub struct Args {
    /// The policy component (.wasm).
    policy: PathBuf,
    /// A parameter handed to the policy's `configure`, as KEY=VALUE (repeatable).
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = key_value)]
    params: Vec<(String, String)>,
    /// A client-context entry the grid also runs with, as KEY=VALUE (repeatable; each is a
    /// context of its own, beside the empty one).
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = key_value)]
    contexts: Vec<(String, String)>,
    /// Each call's deadline, in ms (the sandbox's default, 10, unless given): the one the host
    /// that runs the policy configures (`limits.deadline_ms`), or more on a busy machine, where a
    /// call preempted near its deadline is stopped as a timeout.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    deadline_ms: Option<u64>,
    /// Stop asking after this many inputs failed (0: ask every input). Each failing call
    /// leaves its instance unusable, and a new one costs milliseconds for a Python or
    /// JavaScript policy; the inputs are asked in an order that spreads over the whole grid,
    /// so the failures met first show every kind.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_FAILURES)]
    max_failures: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Failing inputs a check meets before it stops asking: about 3 s of new Python instances in a
/// release build (docs/performance.md "`check` and `simulate`").
const DEFAULT_MAX_FAILURES: usize = 1000;

fn key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got `{text}`")),
    }
}

/// Each decision happens at a moment of its own this far after the previous one, so a
/// host-kept retry budget is full again for every input: the check judges the policy's
/// answers, not the state its budget reached.
const DECISION_SPACING: Duration = Duration::from_secs(3600);

/// Runs the check and prints the report; an error when an invariant does not hold.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let path = &args.policy;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let name = path
        .file_stem()
        .map_or_else(|| "policy".into(), |s| s.to_string_lossy().into_owned());
    let mut config = WasmStrategyConfig::default();
    config.params = args.params.iter().cloned().collect();
    if let Some(deadline_ms) = args.deadline_ms {
        config.limits.deadline_ms = deadline_ms;
    }
    let runtime =
        WasmRuntime::new(config.limits.memory_bytes).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let mut report = Report::new(path, &config);
    let cache = ArtifactCache::open_default(runtime.engine());
    let strategy = PolicyPre::load_cached(&runtime, &name, &bytes, cache.as_ref())
        .map_err(|e| e.to_string())
        .and_then(|component| {
            report.loaded(&component);
            WasmStrategy::new(component, config).map_err(|e| e.to_string())
        });
    match strategy {
        Err(why) => report.not_loaded(why),
        Ok(strategy) => {
            let contexts: Vec<BTreeMap<String, String>> = args
                .contexts
                .iter()
                .map(|(k, v)| BTreeMap::from([(k.clone(), v.clone())]))
                .collect();
            let mut inputs = grid::inputs(&contexts);
            let grid_size = inputs.len();
            let base = Instant::now();
            let first = ask(&strategy, &inputs, base, None, args.max_failures);
            inputs.truncate(first.len());
            let later = base + DECISION_SPACING * u32::try_from(grid_size).unwrap_or(u32::MAX);
            let second = ask(&strategy, &inputs, later, Some(&first), 0);
            let hedges = strategy.component().hedges().then(|| {
                let questions = hedging::questions(&grid::in_flight(&contexts));
                Hedged {
                    first: hedging::ask(&strategy, &questions, false),
                    second: hedging::ask(&strategy, &questions, true),
                    questions,
                }
            });
            report.checked(inputs, grid_size, (first, &second), hedges);
        }
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.to_json())?)?;
    } else {
        report.write_text(out)?;
    }
    match report.violations() {
        0 if report.is_loaded() => Ok(()),
        0 => anyhow::bail!(
            "{} was not checked: it does not load or configure",
            path.display()
        ),
        n => anyhow::bail!("{n} violation(s) of the policy invariants"),
    }
}

/// Asks the policy about the inputs, the n-th question `n` spacings after `base`: first to
/// last, or, for the second pass (`first` given), last to first, where an input whose first
/// call failed is not asked again (it is reported already; asking costs a new instance). The
/// first pass stops after `max_failures` failed calls (0: never). The answers come back in the
/// inputs' order, as many as were asked.
fn ask(
    strategy: &WasmStrategy,
    inputs: &[grid::Input],
    base: Instant,
    first: Option<&[Answer]>,
    max_failures: usize,
) -> Vec<Answer> {
    let order: Vec<usize> = if first.is_some() {
        (0..inputs.len()).rev().collect()
    } else {
        (0..inputs.len()).collect()
    };
    let mut answers = vec![None; inputs.len()];
    let mut failures = 0;
    for (n, &i) in order.iter().enumerate() {
        if max_failures > 0 && failures == max_failures {
            answers.truncate(i);
            break;
        }
        if let Some(failed) = first.map(|first| &first[i]).filter(|a| a.result.is_err()) {
            answers[i] = Some(failed.clone());
            continue;
        }
        let input = &inputs[i];
        let start = base + DECISION_SPACING * u32::try_from(n).unwrap_or(u32::MAX);
        let now = start + Duration::from_millis(input.elapsed_ms);
        let request = input.request(now);
        let context = input.context(now);
        let started = Instant::now();
        let result = strategy.try_answer(&request, &context);
        failures += usize::from(result.is_err());
        answers[i] = Some(Answer {
            result,
            took: started.elapsed(),
        });
    }
    answers.into_iter().map(|a| a.expect("answered")).collect()
}
