//! `rebound reasons`: the reason table (reference 001 "RetryReason", reference 003 for the
//! Cassandra kinds) with both flags, the stage at which each reason arises and what it means.

use std::io::Write;

use rebound::ReasonKind;
use rebound::Stage;
use serde::Serialize;

/// Options of `rebound reasons`.
#[derive(clap::Args)]
pub struct Args {
    /// One JSON object per reason, in an array.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    name: &'static str,
    aliases: &'static [&'static str],
    allows_non_idempotent_retry: bool,
    always_retry: bool,
    stage: Stage,
    meaning: &'static str,
}

fn rows() -> Vec<Row> {
    ReasonKind::ALL
        .iter()
        .filter(|k| **k != ReasonKind::Other)
        .map(|k| Row {
            name: k.name(),
            aliases: k.aliases(),
            allows_non_idempotent_retry: k.allows_non_idempotent_retry(),
            always_retry: k.always_retry(),
            stage: k.stage(),
            meaning: k.meaning(),
        })
        .collect()
}

/// Prints the table.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let rows = rows();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    writeln!(
        out,
        "{:width$}  non-idempotent retry  always retry  stage        aliases",
        "reason"
    )?;
    for row in &rows {
        writeln!(
            out,
            "{:width$}  {:20}  {:12}  {:11}  {}",
            row.name,
            row.allows_non_idempotent_retry,
            row.always_retry,
            format!("{:?}", row.stage),
            row.aliases.join(", ")
        )?;
        writeln!(out, "    {}", row.meaning)?;
    }
    Ok(())
}
