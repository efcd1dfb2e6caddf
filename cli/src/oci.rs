//! `rebound push POLICY.wasm REF` and `rebound pull REF`: a policy component to and from an
//! OCI registry (the CNCF OCI Wasm artifact layout, `rebound::distribution`). `push` prints
//! the digest to pin in the configuration, and with `--precompile` also pushes the component
//! compiled for the hosts' engine; `pull` writes the component and checks its digest.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rebound::config::RegistryConfig;
use rebound::distribution::{self, ComponentSigner, RegistryCredentials};
use rebound::registry::PolicyRegistry;
use rebound::wasm::CompiledArtifact;

/// Options of `rebound push`.
#[derive(clap::Args)]
pub struct PushArgs {
    /// The component to push.
    policy: PathBuf,
    /// Where: `registry/repository:tag` (plain HTTP for localhost and 127.0.0.1).
    reference: String,
    /// Also push the component compiled for this host's engine configuration (the hosts that
    /// pin it load it without compiling when their engine is the same).
    #[arg(long)]
    precompile: bool,
    /// The configuration whose `[engine]` and policy limits the hosts run with (the engine
    /// `--precompile` compiles for); the defaults when not given.
    #[arg(long, value_name = "FILE", requires = "precompile")]
    config: Option<PathBuf>,
    /// Sign the pushed artifact with this private key (ECDSA P-256, PEM), as `cosign sign
    /// --key` does: hosts with a `[trust]` table load only signed components.
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,
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

/// The credentials for OCI registries where Rebound's variables, Podman and Docker keep them
/// (docs/registry.md "Private registries").
pub fn credentials() -> anyhow::Result<RegistryCredentials> {
    Ok(RegistryCredentials::from_environment()?)
}

/// The registry of `config`, in the engine it asks for, reaching OCI registries with
/// [`credentials`].
pub fn load_registry(config: RegistryConfig) -> anyhow::Result<PolicyRegistry> {
    let runtime = PolicyRegistry::runtime_for(&config)?;
    Ok(PolicyRegistry::with_credentials(
        config,
        runtime,
        credentials()?,
    )?)
}

/// Runs `rebound push`.
pub fn push(args: &PushArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.policy)
        .with_context(|| format!("cannot read policy {}", args.policy.display()))?;
    if !bytes.starts_with(b"\0asm") {
        anyhow::bail!("{} is not WebAssembly", args.policy.display());
    }
    // Read before pushing: a bad key pushes nothing.
    let signer = args
        .sign
        .as_deref()
        .map(ComponentSigner::from_pem_file)
        .transpose()?;
    let compiled = if args.precompile {
        Some(precompile(args, &bytes)?)
    } else {
        None
    };
    let credentials = credentials()?;
    let pushed = distribution::push(&bytes, &args.reference, compiled.as_ref(), &credentials)?;
    writeln!(out, "pushed {} ({} bytes)", args.reference, bytes.len())?;
    writeln!(out, "  manifest  {}", pushed.manifest_url)?;
    writeln!(out, "  digest    {}", pushed.manifest_digest)?;
    writeln!(out, "  sha256    {}", pushed.sha256)?;
    if let Some(signer) = &signer {
        let signature = distribution::sign(
            &args.reference,
            &pushed.manifest_digest,
            signer,
            &credentials,
        )?;
        writeln!(out, "  signed    {signature}")?;
    }
    let mut pin = format!(
        "component = {{ oci = \"{}\", sha256 = \"{}\"",
        args.reference, pushed.sha256
    );
    if let (Some(compiled), Some(digest)) = (&compiled, &pushed.precompiled) {
        writeln!(
            out,
            "  compiled  {digest} ({} bytes, engine {})",
            compiled.bytes().len(),
            &compiled.engine_digest()[..16]
        )?;
        pin.push_str(&format!(", precompiled = \"{digest}\""));
    }
    writeln!(out, "pin it:    {pin} }}")?;
    Ok(())
}

/// A configuration with every engine setting at its default.
const DEFAULTS: &str = "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\n";

/// The component `bytes` compiled for the engine of the configuration `--config` names (or
/// of the defaults), with feedback: a language runtime's component takes seconds.
fn precompile(args: &PushArgs, bytes: &[u8]) -> anyhow::Result<CompiledArtifact> {
    let config = match &args.config {
        Some(path) => RegistryConfig::load(path)?,
        None => RegistryConfig::parse(DEFAULTS, Path::new("<defaults>"), Path::new("."))?,
    };
    let settings = PolicyRegistry::engine_settings(&config);
    eprintln!(
        "compiling {} for the engine of {} …",
        args.policy.display(),
        args.config.as_deref().map_or_else(
            || "the default configuration".to_owned(),
            |p| p.display().to_string()
        )
    );
    CompiledArtifact::compile(&settings, bytes)
        .map_err(|e| anyhow::anyhow!("cannot compile {}: {e}", args.policy.display()))
}

/// Runs `rebound pull`.
pub fn pull(args: &PullArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let limit = rebound::config::EngineConfig::DEFAULT_MAX_COMPONENT_BYTES;
    let bytes = distribution::pull(&args.reference, &credentials()?, limit)?;
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
