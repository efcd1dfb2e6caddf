//! The outcome of each case and the run's report: failing cases with their input, expectation
//! and answer in words, or everything as one JSON object.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::case::Case;
use super::expect;
use crate::wire::input::InputError;

/// How one case went.
#[derive(Debug)]
pub struct Outcome {
    line: usize,
    name: String,
    input: Value,
    expect: Value,
    actual: Option<Value>,
    problems: Vec<String>,
}

impl Outcome {
    /// A line that is not a valid case.
    pub fn malformed(line: usize, text: &str, error: &InputError) -> Self {
        Outcome {
            line,
            name: format!("line {line}"),
            input: Value::String(text.to_owned()),
            expect: Value::Null,
            actual: None,
            problems: vec![format!("malformed case: {error}")],
        }
    }

    /// `case` judged by `answer` (the policy's answer, or why it could not be asked).
    pub fn judged(case: Case, answer: Result<Value, String>, raw: bool) -> Self {
        let known = if case.is_hedge() {
            expect::HEDGE_FIELDS
        } else if raw {
            expect::RAW_FIELDS
        } else {
            expect::DECISION_FIELDS
        };
        let mut problems = Vec::new();
        if let Err(unknown) = expect::check_fields(&case.expect, known) {
            problems.push(unknown);
        }
        let expected = Value::Object(case.expect);
        let actual = match answer {
            Ok(actual) => {
                problems.extend(expect::differences(&expected, &actual));
                Some(actual)
            }
            Err(error) => {
                problems.push(format!("could not be asked: {error}"));
                None
            }
        };
        Outcome {
            line: case.line,
            name: case.name,
            input: case.input,
            expect: expected,
            actual,
            problems,
        }
    }

    fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The run's report.
pub struct Report {
    policy: String,
    cases: String,
    raw: bool,
    outcomes: Vec<Outcome>,
}

impl Report {
    pub fn new(policy: &Path, cases: &Path, raw: bool) -> Self {
        Report {
            policy: policy.display().to_string(),
            cases: cases.display().to_string(),
            raw,
            outcomes: Vec::new(),
        }
    }

    pub fn add(&mut self, outcome: Outcome) {
        self.outcomes.push(outcome);
    }

    pub fn total(&self) -> usize {
        self.outcomes.len()
    }

    pub fn failed(&self) -> usize {
        self.outcomes.iter().filter(|o| !o.passed()).count()
    }

    /// A failing case in words (a passing one writes nothing).
    pub fn write_case_text(&self, outcome: &Outcome, out: &mut impl Write) -> std::io::Result<()> {
        if outcome.passed() {
            return Ok(());
        }
        writeln!(
            out,
            "FAIL {} ({}:{})",
            outcome.name, self.cases, outcome.line
        )?;
        writeln!(out, "  input     {}", outcome.input)?;
        if !outcome.expect.is_null() {
            writeln!(out, "  expected  {}", outcome.expect)?;
        }
        if let Some(actual) = &outcome.actual {
            writeln!(out, "  actual    {actual}")?;
        }
        for problem in &outcome.problems {
            writeln!(out, "  problem   {problem}")?;
        }
        Ok(())
    }

    /// The last line: `N passed, M failed`.
    pub fn write_summary_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        let failed = self.failed();
        writeln!(out, "{} passed, {failed} failed", self.total() - failed)
    }

    pub fn to_json(&self) -> Value {
        let failed = self.failed();
        json!({
            "policy": self.policy,
            "cases_file": self.cases,
            "mode": if self.raw { "raw" } else { "orchestrator" },
            "passed": self.total() - failed,
            "failed": failed,
            "cases": self.outcomes.iter().map(|o| json!({
                "line": o.line,
                "name": o.name,
                "passed": o.passed(),
                "input": o.input,
                "expect": o.expect,
                "actual": o.actual,
                "problems": o.problems,
            })).collect::<Vec<_>>(),
        })
    }
}
