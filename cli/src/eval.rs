//! `rebound eval`: JSON lines in (a file or stdin), one answer per line out, in order: a decision,
//! for a line reporting an `outcome` the count recorded, for a line asking about a `hedge` when
//! the next copy goes. A bad
//! line gets an error object on its own line and the rest continue; the exit status is 1 if
//! any line was refused. With `--replay LOG --policy CANDIDATE`, a decision log's decisions are
//! decided again by the candidate and the disagreements printed.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::builtin_registry::builtin_registry;
use crate::json_decider::{FileAccess, JsonDecider};
use crate::replay::replay;
use crate::wire::hedge::HedgeInput;
use crate::wire::outcome::OutcomeInput;
use crate::wire::output;

/// Options of `rebound eval`.
#[derive(clap::Args)]
pub struct Args {
    /// JSON lines to decide (schema: docs/decision-json.md); `-` or none: standard input.
    #[arg(conflicts_with = "replay")]
    input: Option<PathBuf>,
    /// Re-decides every decision of this decision log with `--policy` and prints the lines
    /// where the two disagree, with both answers (docs/observability.md).
    #[arg(long, value_name = "LOG", requires = "policy")]
    replay: Option<PathBuf>,
    /// The candidate policy of a replay: a policy of `--config` by name, a built-in, or a
    /// component file (PATH.wasm).
    #[arg(long, value_name = "CANDIDATE", requires = "replay")]
    policy: Option<String>,
    /// A registry configuration whose policies, routes and profiles the lines may use;
    /// without one, the built-in strategies by name (default best-effort). A `.json` file is
    /// an Envoy RouteConfiguration or RetryPolicy, read as gRFC A44 converts it (docs/xds.md).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Lines refused, for the exit status.
#[derive(Debug, thiserror::Error)]
#[error("{refused} of {total} lines were refused (see their error objects)")]
pub struct Refused {
    refused: usize,
    total: usize,
}

/// Decides every line of the input.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let registry = match &args.config {
        Some(path) => {
            // One-shot: a policy that does not load is an error, not a fail-safe answer.
            let mut config = crate::config_file::load(path)?;
            config.strict_start = true;
            if args.replay.is_some() {
                // A replay reads a log; it does not write one (perhaps the one it reads).
                config.decision_log = None;
            }
            crate::oci::load_registry(config)?
        }
        None => builtin_registry()?,
    };
    let decider = JsonDecider::new(Arc::new(registry), FileAccess::Any);
    if let (Some(log), Some(candidate)) = (&args.replay, &args.policy) {
        let file = std::fs::File::open(log)
            .with_context(|| format!("cannot open the decision log {}", log.display()))?;
        let replayed = replay(&decider, std::io::BufReader::new(file), candidate, out)?;
        eprintln!(
            "replayed {} decisions of {} with {candidate}: {} disagreements",
            replayed.decided,
            log.display(),
            replayed.disagreements
        );
        if replayed.refused > 0 {
            let total = replayed.decided + replayed.refused;
            return Err(Refused {
                refused: replayed.refused,
                total,
            }
            .into());
        }
        return Ok(());
    }
    let input: Box<dyn BufRead> = match &args.input {
        Some(path) if path.as_os_str() != "-" => Box::new(std::io::BufReader::new(
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
        )),
        _ => Box::new(std::io::stdin().lock()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let (mut total, mut refused) = (0, 0);
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = line.with_context(|| format!("cannot read line {number}"))?;
        if line.trim().is_empty() {
            continue;
        }
        total += 1;
        // A line with an `outcome` reports how a request ended, one with a `hedge` asks about a
        // request in flight; any other is decided.
        let answer = if OutcomeInput::is_report(&line) {
            decider.record_outcomes(&line, None)
        } else if HedgeInput::is_question(&line) {
            HedgeInput::parse(&line)
                .and_then(|question| question.answer(decider.registry(), std::time::Instant::now()))
        } else {
            runtime
                .block_on(decider.decide_text(&line, number as u64))
                .map(|answer| answer.json)
        };
        let json = match answer {
            Ok(json) => json,
            Err(error) => {
                refused += 1;
                output::input_error(&error.field, &error.message, Some(number))
            }
        };
        writeln!(out, "{json}")?;
        out.flush()?;
    }
    if refused > 0 {
        return Err(Refused { refused, total }.into());
    }
    Ok(())
}
