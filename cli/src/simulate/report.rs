//! What a sweep reports: a table of every cell and policy (or the same as JSON, every cell's
//! statistics), and the assertions checked over them — the first that fails names its cell
//! and policy and makes `rebound simulate` exit with status 1.

use std::io::Write;

use serde_json::{json, Value};

use super::assertion::Assertion;
use super::lab::Lab;
use super::sweep::{describe, round};

/// The arrival rate of cell `cell`'s scenario, for the `rate` metric.
fn rate(lab: &Lab, cell: usize) -> f64 {
    lab.cells[cell].0.scenario.workload.rate_per_s
}

/// The sweep as JSON: the axes, the definition of recovery, every cell with each policy's
/// statistics.
pub fn json(lab: &Lab, scenario: &str) -> Value {
    let recovery = lab.cells.first().map(|(c, _)| &c.scenario.recovery);
    json!({
        "scenario": scenario,
        "axes": lab.axes.iter().map(|a| json!({
            "key": a.key,
            "values": a.values.iter().map(|v| round(*v)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "seeds": lab.seeds,
        "runs": lab.runs,
        "attempts": lab.attempts,
        "threads": rayon::current_num_threads(),
        "took_s": lab.took.as_secs_f64(),
        "recovery": recovery.map(|r| json!({
            "goodput_share": r.goodput_share,
            "hold_s": r.hold_s,
            "within_s": r.within_s,
        })),
        "cells": lab.cells.iter().map(|(cell, stats)| json!({
            "values": lab.axes.iter().zip(&cell.values)
                .map(|(a, v)| (a.key.clone(), json!(round(*v))))
                .collect::<serde_json::Map<_, _>>(),
            "policies": stats,
        })).collect::<Vec<_>>(),
    })
}

/// The sweep as a table, one row per cell and policy.
pub fn table(out: &mut impl Write, lab: &Lab) -> std::io::Result<()> {
    let keys: Vec<&str> = lab.axes.iter().map(|a| a.key.as_str()).collect();
    let mut head = keys.clone();
    head.extend([
        "policy",
        "P(not recovered)",
        "95 % interval",
        "median recovery s",
        "goodput/s after",
        "goodput/s during",
        "cancelled/run",
        "load ×",
    ]);
    writeln!(out, "| {} |", head.join(" | "))?;
    let aligns: Vec<&str> = (0..head.len())
        .map(|i| if i == keys.len() { "---" } else { "---:" })
        .collect();
    writeln!(out, "| {} |", aligns.join(" | "))?;
    for (cell, stats) in &lab.cells {
        for s in stats {
            let values: Vec<String> = cell.values.iter().map(|v| round(*v).to_string()).collect();
            let median = s
                .median_recovery_s
                .map_or_else(|| "never".into(), |m| format!("{m:.1}"));
            writeln!(
                out,
                "| {}{} | {:.3} | {:.3}–{:.3} | {median} | {:.1} | {:.1} | {:.1} | {:.2} |",
                values.iter().map(|v| format!("{v} | ")).collect::<String>(),
                s.policy,
                s.p_no_recovery,
                s.p_no_recovery_low,
                s.p_no_recovery_high,
                s.goodput_after_faults,
                s.goodput_during_faults,
                s.cancelled,
                s.load_amplification,
            )?;
        }
    }
    Ok(())
}

/// Checks every assertion for every cell and policy: the failures, each naming its cell,
/// policy and the two sides' values.
pub fn failures(lab: &Lab, assertions: &[Assertion]) -> Vec<String> {
    let mut failed = Vec::new();
    for assertion in assertions {
        for (c, (cell, stats)) in lab.cells.iter().enumerate() {
            for s in stats {
                let (holds, left, right) = assertion.check(s, rate(lab, c));
                if !holds {
                    let at = describe(&lab.axes, &cell.values);
                    let at = if at.is_empty() {
                        "the scenario".into()
                    } else {
                        format!("cell {at}")
                    };
                    failed.push(format!(
                        "assertion `{}` fails at {at}, policy `{}`: {} against {}",
                        assertion.text(),
                        s.policy,
                        round(left),
                        round(right),
                    ));
                }
            }
        }
    }
    failed
}
