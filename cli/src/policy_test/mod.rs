//! `rebound test POLICY.wasm [CASES.jsonl]`: declarative tests for a policy in any language.
//! Each case is a decision-JSON input plus what the answer must hold (`case`, `expect`); the
//! policy answers through the orchestrator, or with `--raw` on its own; failing cases are shown
//! with their input, expectation and answer, and the run ends with `N passed, M failed`
//! (`report`). A case with `hedge` asks when the next copy of a request in flight goes
//! (`hedge_case`). Guide: docs/authoring.md; format: docs/cli.md.

mod case;
mod expect;
mod hedge_case;
mod report;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use serde_json::Value;

use crate::builtin_registry::builtin_registry;
use crate::json_decider::{FileAccess, JsonDecider};
use crate::wire::input::DecideInput;
use case::Case;
use report::{Outcome, Report};

/// Options of `rebound test`.
#[derive(clap::Args)]
pub struct Args {
    /// The policy component.
    policy: PathBuf,
    /// The cases, one JSON object per line; `tests.jsonl` in the current directory by default.
    cases: Option<PathBuf>,
    /// Checks the policy's own answer instead of the orchestrator's decision.
    #[arg(long)]
    raw: bool,
    /// One JSON report instead of text.
    #[arg(long)]
    json: bool,
}

/// Some cases failed (the report shows which).
#[derive(Debug, thiserror::Error)]
#[error("{failed} of {total} cases failed")]
pub struct Failed {
    failed: usize,
    total: usize,
}

/// Runs `rebound test`.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let cases_path = match &args.cases {
        Some(path) => path.clone(),
        None => {
            let default = PathBuf::from("tests.jsonl");
            if !default.exists() {
                bail!("no cases to run: give a CASES.jsonl file, or run where tests.jsonl is");
            }
            default
        }
    };
    if !args.policy.exists() {
        bail!("cannot read policy {}: no such file", args.policy.display());
    }
    let policy = std::path::absolute(&args.policy)
        .with_context(|| format!("cannot resolve {}", args.policy.display()))?;
    let cases = read_cases(&cases_path)?;
    if cases.is_empty() {
        bail!("{} has no cases", cases_path.display());
    }
    let decider = JsonDecider::new(Arc::new(builtin_registry()?), FileAccess::Any);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let mut report = Report::new(&policy, &cases_path, args.raw);
    for case in cases {
        let outcome = match case {
            Err(outcome) => outcome,
            Ok(case) => {
                let answer = ask(&decider, &runtime, &policy, &case, args.raw);
                Outcome::judged(case, answer, args.raw)
            }
        };
        if !args.json {
            report.write_case_text(&outcome, out)?;
        }
        report.add(outcome);
    }
    if args.json {
        writeln!(out, "{}", report.to_json())?;
    } else {
        report.write_summary_text(out)?;
    }
    out.flush()?;
    match report.failed() {
        0 => Ok(()),
        failed => Err(Failed {
            failed,
            total: report.total(),
        }
        .into()),
    }
}

/// The cases of `path`, each read or refused with why.
fn read_cases(path: &Path) -> anyhow::Result<Vec<Result<Case, Outcome>>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot open cases file {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut cases = Vec::new();
    for (index, text) in std::io::BufReader::new(file).lines().enumerate() {
        let line = index + 1;
        let text = text.with_context(|| format!("cannot read {} line {line}", path.display()))?;
        match Case::parse(&text, line, base) {
            None => {}
            Some(Ok(case)) => cases.push(Ok(case)),
            Some(Err(error)) => cases.push(Err(Outcome::malformed(line, &text, &error))),
        }
    }
    Ok(cases)
}

/// The policy's answer to `case`, or why it could not be asked.
fn ask(
    decider: &JsonDecider,
    runtime: &tokio::runtime::Runtime,
    policy: &Path,
    case: &Case,
    raw: bool,
) -> Result<Value, String> {
    let id = case.line as u64;
    if case.is_hedge() {
        return hedge_case::answer(decider, policy, case);
    }
    if raw {
        let input = DecideInput::parse(&case.input.to_string()).map_err(|e| e.to_string())?;
        return decider
            .ask_component(&input, policy, case.params.clone(), id)
            .map_err(|e| e.to_string());
    }
    let text = case.input_for(&policy.display().to_string()).to_string();
    runtime
        .block_on(decider.decide_text(&text, id))
        .map(|answer| answer.json)
        .map_err(|e| e.to_string())
}
