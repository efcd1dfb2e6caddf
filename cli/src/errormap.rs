//! `rebound errormap FILE`: validates a KV error map (reference 004), summarises it, or looks
//! one status code up: name, attributes, retry spec and what the host does with it.

use std::path::{Path, PathBuf};

use std::io::Write;

use anyhow::Context;
use rebound::errormap::{ErrorMap, ErrorMapVerdict};
use serde_json::json;

use crate::classify::parse_number;

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

/// Reads and parses the error map at `path`; errors name the file and the field.
pub fn load(path: &Path) -> anyhow::Result<ErrorMap> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read error map {}", path.display()))?;
    ErrorMap::parse(&text).with_context(|| format!("{} is not a valid error map", path.display()))
}

/// Validates, then summarises or looks up.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let map = load(&args.file)?;
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
