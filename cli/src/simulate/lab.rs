//! The runs of a sweep: every cell of its axes, for every compared policy and every seed, on
//! every core, with a progress bar. Each run has registries of its own (the policy state of
//! each client starts empty) in one engine the runs share, and is reduced to a [`Sample`] as
//! it ends, so a map of thousands of runs holds no timelines.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use rebound::config::RegistryConfig;
use rebound::distribution::RegistryCredentials;
use rebound::registry::PolicyRegistry;
use rebound::wasm::WasmRuntime;

use super::scenario::Scenario;
use super::summary::{CellStats, Sample};
use super::sweep::{self, Axis};

/// A cell of the sweep: its values (one per axis) and the scenario they make.
pub struct Cell {
    /// One value per axis.
    pub values: Vec<f64>,
    /// The scenario with those values set.
    pub scenario: Scenario,
}

/// What a sweep ran and measured.
pub struct Lab {
    /// The axes.
    pub axes: Vec<Axis>,
    /// Seeds per cell and policy.
    pub seeds: u64,
    /// The cells, each with one [`CellStats`] per compared policy, in the scenario's order.
    pub cells: Vec<(Cell, Vec<CellStats>)>,
    /// Runs made.
    pub runs: usize,
    /// Attempts simulated in all.
    pub attempts: u64,
    /// How long they took.
    pub took: Duration,
}

/// Reads every cell's scenario: a key that names no field, or a value its field refuses, stops
/// the sweep before anything runs.
pub fn cells(path: &Path, axes: &[Axis], first_seed: Option<u64>) -> anyhow::Result<Vec<Cell>> {
    sweep::cells(axes)
        .into_iter()
        .map(|values| {
            let settings: Vec<(&str, f64)> = (axes.iter().map(|a| a.key.as_str()))
                .zip(values.iter().copied())
                .collect();
            let mut scenario = Scenario::load_with(path, &settings)
                .with_context(|| format!("sweep cell {}", sweep::describe(axes, &values)))?;
            if let Some(seed) = first_seed {
                scenario.seed = seed;
            }
            Ok(Cell { values, scenario })
        })
        .collect()
}

/// The engine and credentials every run's registries share.
struct Shared<'c> {
    config: &'c RegistryConfig,
    runtime: WasmRuntime,
    credentials: RegistryCredentials,
}

impl Shared<'_> {
    /// Runs `policy` over `scenario` with `seed`, with fresh registries, one per client.
    fn run(
        &self,
        tokio: &tokio::runtime::Runtime,
        scenario: &Scenario,
        policy: &str,
        seed: u64,
    ) -> anyhow::Result<Sample> {
        let mut scenario = scenario.clone();
        scenario.seed = seed;
        let registries = (0..scenario.clients)
            .map(|_| {
                PolicyRegistry::with_credentials(
                    super::only(self.config, policy),
                    self.runtime.clone(),
                    self.credentials.clone(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let arrivals = super::arrivals::arrivals(&scenario);
        let run = tokio.block_on(super::engine::run(
            &scenario,
            &registries,
            policy,
            &arrivals,
        ))?;
        Ok(Sample::of(&run, &scenario))
    }
}

/// A progress bar of `runs` runs on standard error (drawn only when it is a terminal).
fn progress(runs: usize) -> ProgressBar {
    let bar = ProgressBar::new(runs as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {pos}/{len} runs, {per_sec}, {eta} left",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Runs every cell of `cells` for every policy of `policies` and `seeds` seeds (the cell's seed
/// and the next ones), with `config`'s policies.
pub fn run(
    cells: Vec<Cell>,
    axes: Vec<Axis>,
    seeds: u64,
    config: &RegistryConfig,
) -> anyhow::Result<Lab> {
    let policies = cells
        .first()
        .map(|c| c.scenario.compare.policies.clone())
        .unwrap_or_default();
    let shared = Shared {
        config,
        runtime: PolicyRegistry::runtime_for(config)?,
        credentials: crate::oci::credentials()?,
    };
    let jobs: Vec<(usize, usize, u64)> = (0..cells.len())
        .flat_map(|c| (0..policies.len()).flat_map(move |p| (0..seeds).map(move |s| (c, p, s))))
        .collect();
    let bar = progress(jobs.len());
    let started = Instant::now();
    let samples = jobs
        .par_iter()
        .map_init(
            || tokio::runtime::Builder::new_current_thread().build(),
            |tokio, &(c, p, s)| {
                let tokio = tokio.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
                let cell = &cells[c];
                let seed = cell.scenario.seed.wrapping_add(s);
                let sample = shared
                    .run(tokio, &cell.scenario, &policies[p], seed)
                    .with_context(|| {
                        format!(
                            "sweep cell {}, policy `{}`, seed {seed}",
                            sweep::describe(&axes, &cell.values),
                            policies[p]
                        )
                    });
                bar.inc(1);
                sample
            },
        )
        .collect::<anyhow::Result<Vec<Sample>>>()?;
    bar.finish_and_clear();
    let took = started.elapsed();
    let attempts = samples.iter().map(|s| s.attempts).sum();
    let per_cell = policies.len() * seeds as usize;
    let cells = cells
        .into_iter()
        .zip(samples.chunks(per_cell.max(1)))
        .map(|(cell, samples)| {
            let stats = (policies.iter().zip(samples.chunks(seeds as usize)))
                .map(|(policy, samples)| CellStats::of(policy, samples))
                .collect();
            (cell, stats)
        })
        .collect();
    Ok(Lab {
        axes,
        seeds,
        cells,
        runs: jobs.len(),
        attempts,
        took,
    })
}
