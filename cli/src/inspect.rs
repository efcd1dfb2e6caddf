//! `rebound inspect POLICY.wasm`: what a component is, read from its bytes without compiling
//! it — the version of `rebound:policy` it was built for and the hosts that accept it, its
//! imports and exports, and the metadata its build wrote: the `rebound:policy` section
//! `rebound build` writes (name, version, description, parameter schema) and the OCI annotation
//! sections `wasm-tools metadata add` writes (version, description, authors, …).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use rebound::wasm::{PolicyMetadata, WitVersion};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use wasmparser::{Parser, Payload};

/// Options of `rebound inspect`.
#[derive(clap::Args)]
pub struct Args {
    /// The component.
    policy: PathBuf,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The metadata sections read, in the order shown.
const METADATA_SECTIONS: [&str; 7] = [
    "version",
    "description",
    "authors",
    "licenses",
    "source",
    "homepage",
    "revision",
];

/// What the component's top level declares.
#[derive(Default)]
struct Contents {
    imports: Vec<String>,
    exports: Vec<String>,
    metadata: Map<String, Value>,
}

/// Reads the component's top-level imports, exports and metadata sections.
fn read(bytes: &[u8]) -> Result<Contents, String> {
    if !bytes.starts_with(b"\0asm") {
        return Err("not WebAssembly (it does not start with `\\0asm`)".to_owned());
    }
    read_sections(bytes).map_err(|e| e.message().to_owned())?
}

/// [`read`], with wasmparser's errors; a core module is an error of its own.
fn read_sections(bytes: &[u8]) -> Result<Result<Contents, String>, wasmparser::BinaryReaderError> {
    let mut contents = Contents::default();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::Version { encoding, .. } => {
                if depth == 0 && encoding == wasmparser::Encoding::Module {
                    return Ok(Err(
                        "a core WebAssembly module, not a component (wrap it with `wasm-tools component new`)".to_owned(),
                    ));
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    contents.imports.push(import?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader {
                    contents.exports.push(export?.name.name.to_owned());
                }
            }
            Payload::CustomSection(section)
                if depth == 1 && METADATA_SECTIONS.contains(&section.name()) =>
            {
                let text = String::from_utf8_lossy(section.data()).into_owned();
                contents
                    .metadata
                    .insert(section.name().to_owned(), text.into());
            }
            _ => {}
        }
    }
    Ok(Ok(contents))
}

/// The version of `rebound:policy` whose strategy the component exports: `Ok(None)` when it
/// exports none, `Err(export)` for a version no host has released.
fn built_for(exports: &[String]) -> Result<Option<WitVersion>, String> {
    let Some(export) = exports
        .iter()
        .find(|e| e.starts_with("rebound:policy/strategy@"))
    else {
        return Ok(None);
    };
    let number = export.trim_start_matches("rebound:policy/strategy@");
    WitVersion::from_number(number)
        .map(Some)
        .ok_or_else(|| export.clone())
}

/// Runs `rebound inspect`.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.policy)
        .with_context(|| format!("cannot read policy {}", args.policy.display()))?;
    let contents = match read(&bytes) {
        Ok(contents) => contents,
        Err(error) => bail!(
            "{} is not a WebAssembly component: {error}",
            args.policy.display()
        ),
    };
    let sha256: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let policy_metadata = PolicyMetadata::from_component(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.policy.display()))?;
    // A section whose schema no host could apply (docs/authoring.md "The metadata section").
    if let Some(Err(e)) = policy_metadata.as_ref().map(PolicyMetadata::check_schema) {
        anyhow::bail!(
            "{}: section `rebound:policy`: params.{}: {}",
            args.policy.display(),
            e.field,
            e.message
        );
    }
    let version = built_for(&contents.exports);
    let interface = match &version {
        Ok(Some(version)) => format!("{version}: {}", version.accepted_by()),
        Ok(None) => "none: it exports no rebound:policy/strategy, so no host loads it".to_owned(),
        Err(export) => {
            let loads: Vec<&str> = WitVersion::ALL.iter().map(|v| v.number()).collect();
            format!(
                "{export}: a version this host does not load (it loads {})",
                loads.join(", ")
            )
        }
    };
    if args.json {
        let report = json!({
            "policy": args.policy.display().to_string(),
            "bytes": bytes.len(),
            "sha256": sha256,
            "built_for": version.as_ref().ok().and_then(|v| v.map(WitVersion::package)),
            "interface": interface,
            "host_loads": WitVersion::ALL.map(WitVersion::package),
            "imports": contents.imports,
            "exports": contents.exports,
            "metadata": contents.metadata,
            "policy_metadata": policy_metadata,
        });
        writeln!(out, "{report}")?;
        return Ok(());
    }
    writeln!(out, "rebound inspect {}", args.policy.display())?;
    writeln!(out, "  size       {} bytes", bytes.len())?;
    writeln!(out, "  sha256     {sha256}")?;
    writeln!(out, "  interface  {interface}")?;
    writeln!(out, "  imports    {}", contents.imports.join(", "))?;
    writeln!(out, "  exports    {}", contents.exports.join(", "))?;
    match &policy_metadata {
        None => writeln!(
            out,
            "  policy     no rebound:policy section (no name, version, parameter schema)"
        )?,
        Some(meta) => write_policy_metadata(meta, out)?,
    }
    if contents.metadata.is_empty() {
        writeln!(
            out,
            "  metadata   none (no version, description, … sections)"
        )?;
    }
    for (key, value) in &contents.metadata {
        writeln!(out, "  {key:<10} {}", value.as_str().unwrap_or_default())?;
    }
    Ok(())
}

/// The `rebound:policy` section in words: name, version, description, one line per parameter.
pub fn write_policy_metadata(meta: &PolicyMetadata, out: &mut impl Write) -> std::io::Result<()> {
    let name = meta.name.as_deref().unwrap_or("(unnamed)");
    let version = meta.version.as_deref().unwrap_or("(no version)");
    writeln!(out, "  policy     {name} {version}")?;
    if let Some(description) = &meta.description {
        writeln!(out, "  about      {description}")?;
    }
    for (param, spec) in &meta.params {
        let mut facts = vec![serde_json::to_value(spec.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()];
        if let Some(default) = &spec.default {
            facts.push(format!("default {default}"));
        }
        if let Some(min) = spec.min {
            facts.push(format!("min {min}"));
        }
        if let Some(max) = spec.max {
            facts.push(format!("max {max}"));
        }
        let about = spec
            .description
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        writeln!(out, "  param      {param} ({}){about}", facts.join(", "))?;
    }
    Ok(())
}
