//! `rebound simulate` with `--sweep`, `--seeds`, `--assert` or `--tune`: the scenario's cells
//! read and checked before anything runs, the runs (`lab`), the map, the table or JSON, the
//! assertions' verdict, and with `--tune` the search for the least restrictive mitigation.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use super::lab::{self, Cell, Lab};
use super::sweep::{round, Axis};
use super::{map, report, tune, Args};

/// Every cell of the sweep `args` asks for, restricted to the policies it names.
fn cells(args: &Args) -> anyhow::Result<Vec<Cell>> {
    let mut cells = lab::cells(&args.scenario, &args.sweep, args.seed)?;
    for cell in &mut cells {
        super::restrict(args, &mut cell.scenario)?;
    }
    Ok(cells)
}

/// Writes `lab`'s map where `args` says; its path and title.
fn write_map(args: &Args, lab: &Lab) -> anyhow::Result<(PathBuf, String)> {
    let path = (args.chart.clone())
        .unwrap_or_else(|| PathBuf::from(format!("{}-map.svg", super::stem(args))));
    let title = format!(
        "{}: P(not recovered) by policy, {} seeds a cell",
        super::stem(args),
        lab.seeds
    );
    std::fs::write(&path, map::render(lab, &title))
        .with_context(|| format!("cannot write the map to {}", path.display()))?;
    Ok((path, title))
}

/// Runs the sweep `args` asks for (or the tuning), prints its table (or JSON), writes its map
/// and checks its assertions.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    if args.sweep.len() > 2 {
        anyhow::bail!(
            "--sweep: a map has two axes at most, got {}: {}",
            args.sweep.len(),
            (args.sweep.iter().map(|a| a.key.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let cells = cells(args)?;
    let config_path = cells[0].scenario.compare.config.clone();
    let config = crate::config_file::load(&config_path)?;
    super::check_compared(args, &cells[0].scenario, &config)?;
    let seeds = args.seeds.unwrap_or(1);
    if let Some(tuning) = &args.tune {
        return run_tune(args, tuning, &config_path, out);
    }
    let lab = lab::run(cells, args.sweep.clone(), seeds, &config)?;
    let (map_path, title) = write_map(args, &lab)?;
    if args.json {
        let mut report = report::json(&lab, &args.scenario.display().to_string());
        report["map"] = json!(map_path.display().to_string());
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(
            out,
            "{title}: {} runs, {} attempts in {:.1} s on {}\n",
            lab.runs,
            lab.attempts,
            lab.took.as_secs_f64(),
            match rayon::current_num_threads() {
                1 => "1 thread".to_owned(),
                n => format!("{n} threads"),
            }
        )?;
        report::table(out, &lab)?;
        writeln!(out, "\nmap: {}", map_path.display())?;
    }
    let failures = report::failures(&lab, &args.assertions);
    if let Some(first) = failures.first() {
        let checks = args.assertions.len() * lab.cells.len() * lab.cells[0].1.len();
        anyhow::bail!("{first} ({} of {checks} checks failed)", failures.len());
    }
    Ok(())
}

/// Runs the tuning: every value tried, in order, until one holds in every cell.
fn run_tune(
    args: &Args,
    tuning: &Axis,
    config_path: &std::path::Path,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let search = tune::search(
        tuning,
        config_path,
        || cells(args),
        (&args.sweep, args.seeds.unwrap_or(1)),
        &args.assertions,
    )?;
    let criterion = if args.assertions.is_empty() {
        "recovered in every seed of every cell".to_owned()
    } else {
        let texts: Vec<&str> = args.assertions.iter().map(|a| a.text()).collect();
        format!("met `{}` in every cell", texts.join("` and `"))
    };
    let map = match &search.found {
        Some((_, lab)) => Some(write_map(args, lab)?.0),
        None => None,
    };
    if args.json {
        let mut report = (search.found.as_ref()).map_or_else(
            || json!({}),
            |(_, lab)| report::json(lab, &args.scenario.display().to_string()),
        );
        report["tune"] = json!({
            "key": tuning.key,
            "criterion": criterion,
            "tried": search.tried,
            "found": search.found.as_ref().map(|(v, _)| round(*v)),
        });
        report["map"] = json!(map.as_ref().map(|m| m.display().to_string()));
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(
            out,
            "| {} | failing cells | cancelled/run | goodput/s lost during the faults |",
            tuning.key
        )?;
        writeln!(out, "| ---: | ---: | ---: | ---: |")?;
        for t in &search.tried {
            writeln!(
                out,
                "| {} | {} | {:.1} | {:.1} |",
                t.value, t.failing, t.cancelled, t.goodput_lost_during_faults
            )?;
        }
        if let (Some((value, _)), Some(last)) = (&search.found, search.tried.last()) {
            writeln!(
                out,
                "\n{} = {}: the least restrictive value tried that {criterion}; its price: {:.1} requests cancelled a run, {:.1} successes a second lost while the faults last",
                tuning.key,
                round(*value),
                last.cancelled,
                last.goodput_lost_during_faults
            )?;
        }
        if let Some(map) = &map {
            writeln!(out, "map: {}", map.display())?;
        }
    }
    if search.found.is_none() {
        anyhow::bail!(
            "--tune {}: no value from {} to {} {criterion}",
            tuning.key,
            round(tuning.values[0]),
            round(*tuning.values.last().unwrap_or(&tuning.values[0]))
        );
    }
    Ok(())
}
