//! `--tune KEY=FROM..TO[:STEPS]`: the mitigation search. A field of the registry configuration (a
//! budget's `percent`, a throttle's `token_ratio`) is tried from FROM, its least restrictive
//! value, towards TO; each value runs the whole sweep, and the first whose map has no cell
//! that failed to recover (or that meets every `--assert`, when given) is the answer, with its
//! price: the requests it cancelled and the goodput lost while the faults lasted. Values are
//! tried in order rather than bisected, because nothing makes a policy's recovery monotonic in
//! a parameter.

use std::path::Path;

use anyhow::Context;
use rebound::config::RegistryConfig;
use serde::Serialize;

use super::assertion::Assertion;
use super::lab::{self, Cell, Lab};
use super::report;
use super::sweep::{round, Axis};

/// One value tried.
#[derive(Debug, Clone, Serialize)]
pub struct Tried {
    /// The value.
    pub value: f64,
    /// Cells and policies that failed (did not recover in every seed, or failed an assertion).
    pub failing: usize,
    /// Mean requests cancelled per run, over every cell and policy.
    pub cancelled: f64,
    /// Mean arrivals per second minus mean successes per second while the faults lasted.
    pub goodput_lost_during_faults: f64,
}

/// The configuration at `path` with `key` set to `value`.
pub fn config_with(path: &Path, key: &str, value: f64) -> anyhow::Result<RegistryConfig> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        anyhow::bail!(
            "--tune: {} is an Envoy resource; tune a field of a TOML registry configuration",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the configuration {}", path.display()))?;
    let mut table: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", path.display()))?;
    super::setting::set(&mut table, key, value)
        .map_err(|e| anyhow::anyhow!("--tune: {}: {key}: {e}", path.display()))?;
    let text = toml::to_string(&table)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut config = RegistryConfig::parse(&text, path, base)
        .with_context(|| format!("--tune {key}={}", round(value)))?;
    config.file = Some(path.to_owned());
    Ok(config)
}

/// How `lab` fares: what failed and what it cost.
fn fare(lab: &Lab, value: f64, assertions: &[Assertion]) -> Tried {
    let stats: Vec<(f64, &super::summary::CellStats)> = (lab.cells.iter())
        .flat_map(|(cell, stats)| stats.iter().map(|s| (cell.scenario.workload.rate_per_s, s)))
        .collect();
    let failing = if assertions.is_empty() {
        stats.iter().filter(|(_, s)| s.not_recovered > 0).count()
    } else {
        report::failures(lab, assertions).len()
    };
    let n = stats.len().max(1) as f64;
    Tried {
        value: round(value),
        failing,
        cancelled: stats.iter().map(|(_, s)| s.cancelled).sum::<f64>() / n,
        goodput_lost_during_faults: (stats.iter())
            .map(|(rate, s)| rate - s.goodput_during_faults)
            .sum::<f64>()
            / n,
    }
}

/// What the search found: every value tried, and the lab of the answer if there is one.
pub struct Search {
    /// In the order tried.
    pub tried: Vec<Tried>,
    /// The first value that held everywhere, with its lab.
    pub found: Option<(f64, Lab)>,
}

/// Tries `tuning`'s values in order over `cells` (re-read for each), `seeds` seeds a cell.
pub fn search(
    tuning: &Axis,
    config_path: &Path,
    cells: impl Fn() -> anyhow::Result<Vec<Cell>>,
    (axes, seeds): (&[Axis], u64),
    assertions: &[Assertion],
) -> anyhow::Result<Search> {
    let mut tried = Vec::new();
    for value in &tuning.values {
        let config = config_with(config_path, &tuning.key, *value)?;
        let lab = lab::run(cells()?, axes.to_vec(), seeds, &config)?;
        let fared = fare(&lab, *value, assertions);
        tracing::info!(key = tuning.key, value, failing = fared.failing, "tuned");
        let holds = fared.failing == 0;
        tried.push(fared);
        if holds {
            return Ok(Search {
                tried,
                found: Some((*value, lab)),
            });
        }
    }
    Ok(Search { tried, found: None })
}
