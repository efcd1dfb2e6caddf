//! What a project's last build was made from, so `rebound build` leaves a component alone when
//! nothing it is made from changed. Python and JavaScript components snapshot a language
//! runtime whose heap holds values drawn from the build machine's randomness and clock, so
//! building unchanged sources twice gives different bytes; not rebuilding them keeps one
//! version (docs/authoring.md "Reproducible builds").
//!
//! The inputs are the project's files (every regular file under its directory but what builds
//! make: WebAssembly files — the component, core modules —, the staging file, this stamp,
//! `gen/`, `target/`, `__pycache__/`, `node_modules/`, `.git/`), this binary's version, the
//! language, engine and route, and each tool's file (its path, size and modification time). A
//! build during which an input changed (an edit saved meanwhile, the `Cargo.lock` a first Rust
//! build writes) is not stamped, so the next build runs.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The stamp's file name, in the project's directory.
pub const STAMP: &str = ".rebound-build.json";

/// Directories builds and tools make, never inputs.
const MADE_DIRS: [&str; 5] = ["gen", "target", "__pycache__", "node_modules", ".git"];

/// A build's inputs and what it produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// sha256 of the inputs.
    pub inputs: String,
    /// sha256 of the component they built.
    pub component: String,
}

/// sha256 of `bytes`, in hex.
pub fn hex_sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of the inputs of a build in `dir` writing `outputs`, described by `settings` (the
/// language, engine, route and this binary's version) and run with `tools`.
pub fn inputs(
    dir: &Path,
    outputs: &[PathBuf],
    settings: &str,
    tools: &[PathBuf],
) -> std::io::Result<String> {
    let mut hash = Sha256::new();
    hash.update(settings.as_bytes());
    for tool in tools {
        let meta = std::fs::metadata(tool)?;
        let modified = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        hash.update(format!("\0tool {} {} {modified:?}", tool.display(), meta.len()).as_bytes());
    }
    let outputs: Vec<PathBuf> = outputs
        .iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .collect();
    let walk = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            !(entry.file_type().is_dir() && entry.depth() > 0 && MADE_DIRS.contains(&&*name))
        });
    for entry in walk {
        let entry = entry.map_err(std::io::Error::other)?;
        if !entry.file_type().is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        if name == STAMP || name.ends_with(".wasm") || name.ends_with(".wasm.building") {
            continue;
        }
        let path = entry.path();
        let absolute = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        if outputs.contains(&absolute) {
            continue;
        }
        let relative = path.strip_prefix(dir).unwrap_or(path);
        hash.update(format!("\0file {}\0", relative.display()).as_bytes());
        hash.update(std::fs::read(path)?);
    }
    Ok(hex(&hash.finalize()))
}

/// The stamp in `dir`, if one can be read.
pub fn read(dir: &Path) -> Option<Stamp> {
    serde_json::from_slice(&std::fs::read(dir.join(STAMP)).ok()?).ok()
}

/// Writes `stamp` in `dir`.
pub fn write(dir: &Path, stamp: &Stamp) -> std::io::Result<()> {
    std::fs::write(
        dir.join(STAMP),
        serde_json::to_vec_pretty(stamp).expect("a stamp serialises"),
    )
}
