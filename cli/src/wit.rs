//! `rebound wit`: the WIT package `rebound:policy` a policy targets, as this binary implements
//! it — the newest version, or any released one with `--version` — printed or written into a
//! directory, so an author outside this repository gets the exact interface of the host they
//! deploy to.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use rebound::wasm::WitVersion;

/// Options of `rebound wit`.
#[derive(clap::Args)]
pub struct Args {
    /// The version to print (e.g. 0.1.0); the newest by default.
    #[arg(long, value_name = "VERSION")]
    version: Option<String>,
    /// Writes `DIR/policy.wit` (creating DIR) instead of printing.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Lists the released versions this host loads, one per line, the newest last.
    #[arg(long, conflicts_with_all = ["version", "out"])]
    list: bool,
    /// TypeScript declarations of the version instead of its WIT (`DIR/rebound-policy.d.ts`
    /// with `--out`), for a policy written in TypeScript or a JavaScript editor's checks.
    #[arg(long)]
    typescript: bool,
}

/// Runs `rebound wit`.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    if args.list {
        for version in WitVersion::ALL {
            writeln!(out, "{}", version.package())?;
        }
        return Ok(());
    }
    let version = match &args.version {
        None => WitVersion::CURRENT,
        Some(number) => match WitVersion::from_number(number.trim_start_matches('v')) {
            Some(version) => version,
            None => {
                let known: Vec<&str> = WitVersion::ALL.iter().map(|v| v.number()).collect();
                bail!(
                    "--version {number}: no such released version of rebound:policy; this host has {}",
                    known.join(", ")
                )
            }
        },
    };
    let (text, file_name) = if args.typescript {
        (
            crate::wit_typescript::declarations(version)?,
            "rebound-policy.d.ts",
        )
    } else {
        (version.wit().to_owned(), "policy.wit")
    };
    match &args.out {
        None => out.write_all(text.as_bytes())?,
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
            let file = dir.join(file_name);
            std::fs::write(&file, text)
                .with_context(|| format!("cannot write {}", file.display()))?;
            writeln!(out, "wrote {} ({})", file.display(), version.package())?;
        }
    }
    Ok(())
}
