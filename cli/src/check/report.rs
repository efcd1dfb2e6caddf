//! The report of `rebound check`: what loaded, what was asked, which rules hold, and every
//! input that breaks one — in words or as JSON.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rebound::wasm::{PolicyPre, WasmStrategyConfig, WitVersion, HOST_PACKAGE};
use rebound::{PolicyFailureKind, RetryAction};
use serde_json::{json, Value};

use super::grid::Input;
use super::hedging::{self, Hedged};
use super::invariants::{self, Answer, Question, Rule, Violation};

/// Distinct problems listed per rule in the human report (the JSON report lists every
/// violation, and every distinct problem with its count).
const SHOWN_PER_RULE: usize = 20;

/// The violations of one rule grouped by problem, in the order first met: each problem, how
/// many inputs have it, and the first of them.
fn grouped<'a>(violations: &[&'a Violation]) -> Vec<(&'a str, usize, Question)> {
    let mut groups: Vec<(&str, usize, Question)> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for v in violations {
        match index.get(v.problem.as_str()) {
            Some(&at) => groups[at].1 += 1,
            None => {
                index.insert(&v.problem, groups.len());
                groups.push((&v.problem, 1, v.input));
            }
        }
    }
    groups
}

/// What the component is.
struct Loaded {
    version: String,
    wit_version: WitVersion,
    imports: Vec<String>,
    metadata: Option<rebound::wasm::PolicyMetadata>,
}

/// What the grid asked and the policy answered.
struct Checked {
    /// The inputs asked: the whole grid, or the part asked before the check stopped.
    inputs: Vec<Input>,
    /// How many inputs the grid has.
    grid_size: usize,
    first: Vec<Answer>,
    /// The hedging questions and the first pass's answers, for a component that hedges.
    hedges: Option<Hedged>,
    violations: Vec<Violation>,
}

impl Checked {
    fn input_json(&self, question: Question) -> Value {
        match (question, &self.hedges) {
            (Question::Decision(i), _) => self.inputs[i].to_json(),
            (Question::Hedge(i), Some(hedges)) => hedges.questions[i].to_json(),
            (Question::Hedge(_), None) => Value::Null,
        }
    }

    fn describe_input(&self, question: Question) -> String {
        match (question, &self.hedges) {
            (Question::Decision(i), _) => self.inputs[i].describe(),
            (Question::Hedge(i), Some(hedges)) => hedges.questions[i].describe(),
            (Question::Hedge(_), None) => String::new(),
        }
    }

    fn answer_json(&self, question: Question) -> Value {
        match (question, &self.hedges) {
            (Question::Decision(i), _) => invariants::to_json(&self.first[i].result),
            (Question::Hedge(i), Some(hedges)) => hedging::to_json(&hedges.first[i]),
            (Question::Hedge(_), None) => Value::Null,
        }
    }

    /// Whether `rule` judged any answer: a hedging rule only when the component hedges.
    fn applies(&self, rule: Rule) -> bool {
        !rule.hedging_only() || self.hedges.is_some()
    }
}

/// The report, filled in as the check goes.
pub struct Report {
    policy: String,
    deadline_ms: u64,
    loaded: Option<Loaded>,
    load_error: Option<String>,
    checked: Option<Checked>,
}

impl Report {
    /// A report on the component at `path`, run with `config`.
    pub fn new(path: &Path, config: &WasmStrategyConfig) -> Self {
        Report {
            policy: path.display().to_string(),
            deadline_ms: config.limits.deadline_ms,
            loaded: None,
            load_error: None,
            checked: None,
        }
    }

    /// The component loaded: it implements the host's package version.
    pub fn loaded(&mut self, component: &PolicyPre) {
        self.loaded = Some(Loaded {
            version: component.version().to_owned(),
            wit_version: component.wit_version(),
            imports: component.imports().to_vec(),
            metadata: component.metadata().cloned(),
        });
    }

    /// The component did not load (or did not configure), for `why`.
    pub fn not_loaded(&mut self, why: String) {
        self.load_error = Some(why);
    }

    /// Whether the policy loaded and configured.
    pub fn is_loaded(&self) -> bool {
        self.load_error.is_none() && self.loaded.is_some()
    }

    /// The grid's two passes over `inputs`, the first `inputs.len()` of its `grid_size`, and
    /// the hedging questions' for a component that hedges.
    pub fn checked(
        &mut self,
        inputs: Vec<Input>,
        grid_size: usize,
        (first, second): (Vec<Answer>, &[Answer]),
        hedges: Option<Hedged>,
    ) {
        let mut violations = invariants::violations(&inputs, &first, second);
        if let Some(hedges) = &hedges {
            violations.extend(hedging::violations(
                &hedges.questions,
                &hedges.first,
                &hedges.second,
            ));
        }
        self.checked = Some(Checked {
            violations,
            inputs,
            grid_size,
            first,
            hedges,
        });
    }

    /// How many violations were found.
    pub fn violations(&self) -> usize {
        self.checked.as_ref().map_or(0, |c| c.violations.len())
    }

    /// Calls of the first pass stopped at their deadline.
    fn timed_out(checked: &Checked) -> usize {
        (checked.first.iter())
            .filter(|answer| {
                matches!(&answer.result, Err(failure) if failure.kind == PolicyFailureKind::Timeout)
            })
            .count()
    }

    /// Answers of the first pass by kind.
    fn answer_counts(checked: &Checked) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for answer in &checked.first {
            let kind = match &answer.result {
                Err(_) => "failed",
                Ok(RetryAction::RetryAfter { .. }) => "retry",
                Ok(RetryAction::NoRetry) => "no_retry",
                Ok(RetryAction::Ignore) => "ignore",
                Ok(RetryAction::Rethrow) => "rethrow",
                Ok(RetryAction::Fail(_)) => "fail",
                Ok(RetryAction::PolicyFailed(_)) => "failed",
                Ok(_) => "other",
            };
            *counts.entry(kind).or_default() += 1;
        }
        counts
    }

    /// How many inputs failed, when the check stopped asking before the end of the grid.
    fn stopped_after(checked: &Checked) -> Option<usize> {
        (checked.inputs.len() < checked.grid_size)
            .then(|| checked.first.iter().filter(|a| a.result.is_err()).count())
    }

    fn slowest(checked: &Checked) -> Duration {
        checked
            .first
            .iter()
            .map(|a| a.took)
            .max()
            .unwrap_or_default()
    }

    /// The component's compatibility with the host's package: the version it was built for,
    /// the versions this host loads; `error` is why it does not run (an incompatible
    /// component, or one that refused its parameters).
    fn interface(&self) -> Value {
        json!({
            "host": HOST_PACKAGE,
            "host_loads": WitVersion::ALL.map(WitVersion::package),
            "built_for": self.loaded.as_ref().map(|l| l.wit_version.package()),
            "accepted_by": self.loaded.as_ref().map(|l| l.wit_version.accepted_by()),
            "compatible": self.loaded.is_some(),
            "error": self.load_error,
        })
    }

    /// The report as JSON.
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "policy": self.policy,
            "interface": self.interface(),
            "passed": self.is_loaded() && self.violations() == 0,
        });
        if let Some(loaded) = &self.loaded {
            out["version"] = loaded.version.clone().into();
            out["imports"] = json!(loaded.imports);
            out["metadata"] = json!(loaded.metadata);
        }
        if let Some(checked) = &self.checked {
            out["grid"] = checked.grid_size.into();
            out["inputs"] = checked.inputs.len().into();
            out["stopped_after_failures"] = json!(Self::stopped_after(checked));
            out["answers"] = json!(Self::answer_counts(checked));
            out["slowest_call_us"] = (Self::slowest(checked).as_micros() as u64).into();
            out["timed_out"] = Self::timed_out(checked).into();
            out["hedging"] = match &checked.hedges {
                None => Value::Null,
                Some(hedges) => json!({
                    "questions": hedges.questions.len(),
                    "answers": hedges.counts(),
                }),
            };
            out["rules"] = Rule::ALL
                .iter()
                .map(|rule| {
                    let broken: Vec<&Violation> = checked
                        .violations
                        .iter()
                        .filter(|v| v.rule == *rule)
                        .collect();
                    let problems: Vec<Value> = grouped(&broken)
                        .into_iter()
                        .map(|(problem, count, example)| {
                            json!({
                                "problem": problem,
                                "count": count,
                                "example": checked.input_json(example),
                            })
                        })
                        .collect();
                    let violations: Vec<Value> = broken
                        .iter()
                        .map(|v| {
                            json!({
                                "input": checked.input_json(v.input),
                                "answer": checked.answer_json(v.input),
                                "problem": v.problem,
                            })
                        })
                        .collect();
                    json!({
                        "rule": rule.name(),
                        "statement": rule.statement(),
                        "holds": violations.is_empty(),
                        "applies": checked.applies(*rule),
                        "problems": problems,
                        "violations": violations,
                    })
                })
                .collect();
        }
        out
    }

    /// The report in words.
    pub fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(out, "rebound check {}", self.policy)?;
        if let Some(loaded) = &self.loaded {
            writeln!(
                out,
                "  interface  {}: {}",
                loaded.wit_version,
                loaded.wit_version.accepted_by()
            )?;
            writeln!(out, "  version    {}", loaded.version)?;
            if let Some(meta) = &loaded.metadata {
                crate::inspect::write_policy_metadata(meta, out)?;
            }
            let wasi = loaded
                .imports
                .iter()
                .filter(|i| i.starts_with("wasi:"))
                .count();
            writeln!(
                out,
                "  imports    {} ({wasi} inert WASI interfaces)",
                loaded.imports.len()
            )?;
        }
        if let Some(why) = &self.load_error {
            writeln!(out, "  FAIL  {why}")?;
            return writeln!(out, "FAIL");
        }
        let Some(checked) = &self.checked else {
            return Ok(());
        };
        let counts = Self::answer_counts(checked);
        let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(
            out,
            "  grid       {} inputs (every reason variant × {} requests × dispatched or not × 4 attempt counts × 3 moments × contexts), each asked twice in opposite orders",
            checked.grid_size,
            super::grid::REQUESTS
        )?;
        if let Some(failures) = Self::stopped_after(checked) {
            writeln!(
                out,
                "  stopped    after {failures} failing inputs: {} of the {} inputs asked (--max-failures 0 asks every one)",
                checked.inputs.len(),
                checked.grid_size
            )?;
        }
        writeln!(out, "  answers    {}", counts.join(", "))?;
        hedging::write_summary(out, checked.hedges.as_ref())?;
        writeln!(
            out,
            "  slowest    {} µs per call (deadline {} ms)",
            Self::slowest(checked).as_micros(),
            self.deadline_ms
        )?;
        for rule in Rule::ALL {
            write_rule(out, rule, checked)?;
        }
        let timed_out = Self::timed_out(checked);
        if timed_out > 0 {
            writeln!(
                out,
                "  hint       {timed_out} calls ran past their {} ms deadline (`wasm trap: interrupt`): on a busy machine a call preempted near its deadline is stopped; `--deadline-ms` gives each call more room",
                self.deadline_ms
            )?;
        }
        let verdict = if self.violations() == 0 {
            "PASS"
        } else {
            "FAIL"
        };
        writeln!(out, "{verdict}")
    }
}

/// How the policy fared on `rule`: held, or broken, with its distinct problems (the first
/// [`SHOWN_PER_RULE`] of them, each with an example input).
fn write_rule(out: &mut impl Write, rule: Rule, checked: &Checked) -> std::io::Result<()> {
    let broken: Vec<&Violation> = checked
        .violations
        .iter()
        .filter(|v| v.rule == rule)
        .collect();
    if !checked.applies(rule) {
        return writeln!(out, "  n/a   {}: it does not hedge", rule.statement());
    }
    if broken.is_empty() {
        return writeln!(out, "  ok    {}", rule.statement());
    }
    let groups = grouped(&broken);
    writeln!(
        out,
        "  FAIL  {} — {} input(s) break it, {} distinct problem(s):",
        rule.statement(),
        broken.len(),
        groups.len()
    )?;
    for (problem, count, example) in groups.iter().take(SHOWN_PER_RULE) {
        writeln!(out, "        {count} × {problem}")?;
        writeln!(out, "            e.g. {}", checked.describe_input(*example))?;
    }
    if groups.len() > SHOWN_PER_RULE {
        writeln!(
            out,
            "        … and {} more problems (--json lists every one)",
            groups.len() - SHOWN_PER_RULE
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rebound::{PolicyFailure, RetryAction};

    use super::*;

    /// docs/cli.md `rebound check`: a call stopped at its deadline is counted (`timed_out`), and
    /// the report in words says that `--deadline-ms` gives calls room (a call preempted near
    /// its deadline on a busy machine is stopped too); a call that failed otherwise is not
    /// counted.
    #[test]
    fn calls_stopped_at_their_deadline_are_counted_with_a_hint() {
        let inputs: Vec<Input> = (super::super::grid::inputs(&[BTreeMap::new()]).into_iter())
            .take(3)
            .collect();
        let failed = |kind| Answer {
            result: Err(PolicyFailure::new(kind, "stopped")),
            took: Duration::from_millis(10),
        };
        let answered = Answer {
            result: Ok(RetryAction::NoRetry),
            took: Duration::ZERO,
        };
        let first = vec![
            failed(PolicyFailureKind::Timeout),
            failed(PolicyFailureKind::FuelExhausted),
            answered,
        ];
        let mut report = Report::new(Path::new("p.wasm"), &WasmStrategyConfig::default());
        report.checked(inputs, 3, (first.clone(), &first), None);
        assert_eq!(report.to_json()["timed_out"], 1);
        let mut text = Vec::new();
        report.write_text(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("1 calls ran past their 10 ms deadline"),
            "{text}"
        );
        assert!(text.contains("`--deadline-ms`"), "{text}");
    }
}
