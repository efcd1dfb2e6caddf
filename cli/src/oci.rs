//! `rebound push POLICY.wasm REF` and `rebound pull REF`: a policy component to and from an
//! OCI registry (the CNCF OCI Wasm artifact layout, `rebound::registry::oci`). `push` prints
//! the digest to pin in the configuration; `pull` writes the component and checks its digest.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use rebound::registry::oci;

/// Options of `rebound push`.
#[derive(clap::Args)]
pub struct PushArgs {
    /// The component to push.
    policy: PathBuf,
    /// Where: `registry/repository:tag` (plain HTTP for localhost and 127.0.0.1).
    reference: String,
}

/// Options of `rebound pull`.
#[derive(clap::Args)]
pub struct PullArgs {
    /// What: `registry/repository:tag` or `registry/repository@sha256:…`.
    reference: String,
    /// The file to write; `REPOSITORY.wasm` in the current directory by default.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Runs `rebound push`.
pub fn push(args: &PushArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.policy)
        .with_context(|| format!("cannot read policy {}", args.policy.display()))?;
    if !bytes.starts_with(b"\0asm") {
        anyhow::bail!("{} is not WebAssembly", args.policy.display());
    }
    let pushed = oci::push(&bytes, &args.reference)?;
    writeln!(out, "pushed {} ({} bytes)", args.reference, bytes.len())?;
    writeln!(out, "  manifest  {}", pushed.manifest_url)?;
    writeln!(out, "  sha256    {}", pushed.sha256)?;
    writeln!(
        out,
        "pin it:    component = {{ oci = \"{}\", sha256 = \"{}\" }}",
        args.reference, pushed.sha256
    )?;
    Ok(())
}

/// Runs `rebound pull`.
pub fn pull(args: &PullArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let bytes = oci::pull(&args.reference)?;
    let output = match &args.output {
        Some(path) => path.clone(),
        None => {
            let repository = args
                .reference
                .rsplit('/')
                .next()
                .unwrap_or("policy")
                .split(['@', ':'])
                .next()
                .unwrap_or("policy");
            PathBuf::from(format!("{repository}.wasm"))
        }
    };
    std::fs::write(&output, &bytes)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let sha256 = hex_sha256(&bytes);
    writeln!(
        out,
        "pulled {} into {} ({} bytes, sha256 {sha256})",
        args.reference,
        output.display(),
        bytes.len()
    )?;
    Ok(())
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
