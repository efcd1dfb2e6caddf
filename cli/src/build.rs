//! `rebound build [DIR]`: builds the policy project in DIR (its `policy.toml`, written by
//! `rebound new`) into `NAME.wasm` with its language's own tools (`project::steps`), then
//! writes the project's metadata (name, version, description, parameter schema) into it. A
//! missing tool is named with how to install it; a failing one with its output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};

use crate::project::{self, Language, Manifest, RustRoute};

/// Options of `rebound build`.
#[derive(clap::Args)]
pub struct Args {
    /// The project directory (with `policy.toml`); the current directory by default.
    dir: Option<PathBuf>,
}

/// `program` on PATH (or as given, when it is a path).
fn find(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| program.into());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Whether rustup's wasm32 target is installed, else whether Debian's rustc-web can build std
/// for it.
fn rust_route() -> anyhow::Result<RustRoute> {
    let rustup_has_target = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|line| line.trim() == "wasm32-unknown-unknown")
        });
    if rustup_has_target {
        return Ok(RustRoute::Rustup);
    }
    if Path::new("/usr/bin/rustc").is_file()
        && Path::new("/usr/bin/cargo").is_file()
        && Path::new("/usr/lib/rustlib/src/rust/library").is_dir()
    {
        return Ok(RustRoute::Debian);
    }
    bail!("no Rust toolchain for wasm32-unknown-unknown: `rustup target add wasm32-unknown-unknown`, or without rustup Debian's `apt install rustc-web cargo-web rust-web-src lld-22`")
}

/// Runs `rebound build`.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let manifest_path = dir.join("policy.toml");
    let text = std::fs::read_to_string(&manifest_path).with_context(|| {
        format!(
            "cannot read {}: a policy project has one (`rebound new LANG NAME` writes it)",
            manifest_path.display()
        )
    })?;
    let manifest: Manifest = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", manifest_path.display(), e.to_string().trim()))?;
    let metadata = manifest.metadata();
    let policy = manifest.policy;
    let route = match policy.language {
        Language::Rust => rust_route()?,
        _ => RustRoute::Rustup,
    };
    let rust_target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("target"));
    let steps = project::steps(&policy, route, &std::path::absolute(&rust_target)?);
    // Every tool is looked for before the first runs, so a missing one costs no time.
    let missing: Vec<String> = steps
        .iter()
        .filter(|step| find(&step.program).is_none())
        .map(|step| {
            format!(
                "  {} is not installed (or not on PATH): {}",
                step.program, step.install
            )
        })
        .collect();
    if !missing.is_empty() {
        let mut missing = missing;
        missing.dedup();
        bail!("cannot build {}:\n{}", policy.name, missing.join("\n"));
    }
    for step in &steps {
        writeln!(out, "$ {}", project::shell(std::slice::from_ref(step)))?;
        out.flush()?;
        let mut command = Command::new(find(&step.program).expect("checked above"));
        command
            .args(&step.args)
            .envs(step.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&dir)
            .stdin(Stdio::null());
        let output = command
            .output()
            .with_context(|| format!("cannot run {}", step.program))?;
        if !output.status.success() {
            bail!(
                "{} failed ({}):\n{}{}",
                step.program,
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        if let Some(file) = &step.stdout_to {
            let file = dir.join(file);
            std::fs::write(&file, &output.stdout)
                .with_context(|| format!("cannot write {}", file.display()))?;
        }
    }
    let component = dir.join(format!("{}.wasm", policy.name));
    let bytes = std::fs::read(&component)
        .with_context(|| format!("the build wrote no {}", component.display()))?;
    // The metadata section: name, version, description, parameter schema (policy.toml).
    let bytes = metadata.append_to(bytes);
    std::fs::write(&component, &bytes)
        .with_context(|| format!("cannot write {}", component.display()))?;
    let sha256: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    writeln!(
        out,
        "built {} ({} bytes, sha256 {sha256})",
        component.display(),
        bytes.len()
    )?;
    Ok(())
}
