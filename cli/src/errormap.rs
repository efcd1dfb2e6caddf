//! `rebound errormap FILE`: validates a KV error map (reference 004), summarises it, or looks
//! one status code up: name, attributes, retry spec and what the host does with it.

use std::path::PathBuf;

use std::io::Write;

use rebound::errormap::ErrorMapVerdict;
use serde_json::json;

use crate::parse::{load_error_map, parse_number};

/// Options of `rebound errormap`.
#[derive(clap::Args)]
pub struct Args {
    /// The error map (JSON, version 1 or 2).
    file: PathBuf,
    /// Look this status code up (decimal or 0x-hex) instead of summarising.
    #[arg(long, value_parser = parse_number::<u16>)]
    code: Option<u16>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Validates, then summarises or looks up.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let map = load_error_map(&args.file)?;
    let report = match args.code {
        Some(code) => {
            let (verdict, entry) = match map.verdict(code) {
                ErrorMapVerdict::Retry(entry) => {
                    ("retry (KV_ERROR_MAP_RETRY_INDICATED)", Some(entry))
                }
                ErrorMapVerdict::NoRetry(entry) => ("not retried: no retry attribute", Some(entry)),
                ErrorMapVerdict::NotInMap => ("not retried: not in the map", None),
            };
            json!({"code": format!("{code:#06x}"), "verdict": verdict, "entry": entry})
        }
        None => {
            let retry = map.entries().filter(|(_, e)| e.retry_indicated()).count();
            let specs = map.entries().filter(|(_, e)| e.retry.is_some()).count();
            json!({
                "file": args.file.display().to_string(),
                "version": map.version(),
                "revision": map.revision(),
                "entries": map.len(),
                "retry_indicated": retry,
                "with_retry_spec": specs,
            })
        }
    };
    if args.json {
        writeln!(out, "{report}")?;
    } else if let Some(object) = report.as_object() {
        for (key, value) in object {
            match value.as_str() {
                Some(text) => writeln!(out, "{key}: {text}")?,
                None => writeln!(out, "{key}: {value}")?,
            }
        }
    }
    Ok(())
}
