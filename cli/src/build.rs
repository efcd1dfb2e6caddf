//! `rebound build [PATH]`: builds a policy into a component with its language's own tools
//! (`project::steps`). PATH is a project (a directory with the `policy.toml` `rebound new`
//! writes: its metadata — name, version, description, parameter schema — is written into the
//! component) or one policy's source (a `.py`, `.js`, `.ts`, `.c`, `.cpp`, `.go` or `.zig`
//! file, or a Rust crate's directory), as `scripts/build-guests.sh` builds the tree's own. A
//! missing tool is named with how to install it; a failing one with its output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use rebound::wasm::PolicyMetadata;

use crate::build_stamp;
use crate::go_workspace;
use crate::project::{self, Engine, Language, Layout, Manifest, RustRoute};
use crate::tools::find;
use crate::wit_typescript;

/// Options of `rebound build`.
#[derive(clap::Args)]
pub struct Args {
    /// A policy project (a directory with `policy.toml`), or one policy's source: a `.py`,
    /// `.js`, `.ts`, `.c`, `.cpp`, `.go` or `.zig` file, or a Rust crate's directory. The
    /// current directory by default.
    path: Option<PathBuf>,
    /// Where to write the component [default: a project's NAME.wasm; a source's name with
    /// `.wasm`, in the current directory].
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// The WIT package a single source is built against [default: wit].
    #[arg(long, value_name = "DIR")]
    wit: Option<PathBuf>,
    /// The JavaScript engine of a single `.js` or `.ts` source [default: quickjs].
    #[arg(long, value_enum)]
    engine: Option<Engine>,
    /// Build a project even if nothing it is built from changed since its last build.
    #[arg(long)]
    force: bool,
}

/// What one build does.
struct Plan {
    /// What is built, for messages.
    name: String,
    language: Language,
    engine: Engine,
    layout: Layout,
    /// How Rust reaches wasm32 (Rust only).
    route: RustRoute,
    /// Where the steps run.
    dir: PathBuf,
    /// A project's metadata, written into the component.
    metadata: Option<PolicyMetadata>,
    /// The scratch directory of a single source's bindings and core module, removed after.
    _work: Option<tempfile::TempDir>,
    /// A project, whose build inputs are stamped (`build_stamp`).
    stamped: bool,
}

/// Whether rustup's wasm32 target is installed, else whether Debian's rustc-web can build std
/// for it.
pub fn rust_route() -> anyhow::Result<RustRoute> {
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

/// The Rust crate in `dir`: its library's file name (without `.wasm`) and Cargo's target
/// directory, as `cargo metadata` reports them (so a crate in a workspace, a renamed library
/// and `CARGO_TARGET_DIR` are all honoured).
fn rust_crate(dir: &Path, route: RustRoute) -> anyhow::Result<(String, PathBuf)> {
    let cargo = match route {
        RustRoute::Rustup => "cargo",
        RustRoute::Debian => "/usr/bin/cargo",
    };
    let manifest = dir.join("Cargo.toml");
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {cargo} metadata"))?;
    if !output.status.success() {
        bail!(
            "{}: cargo metadata failed:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let manifest = manifest.canonicalize()?;
    let library = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|package| {
            package["manifest_path"]
                .as_str()
                .is_some_and(|path| Path::new(path) == manifest)
        })
        .flat_map(|package| package["targets"].as_array().into_iter().flatten())
        .find(|target| {
            target["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "cdylib"))
        })
        .and_then(|target| target["name"].as_str());
    let Some(library) = library else {
        bail!(
            "{}: the crate has no `cdylib` library (`[lib] crate-type = [\"cdylib\"]`), so it builds no component",
            manifest.display()
        );
    };
    let target = metadata["target_directory"]
        .as_str()
        .context("cargo metadata gave no target directory")?;
    Ok((library.replace('-', "_"), target.into()))
}

/// The plan for the project in `dir`.
fn project_plan(dir: &Path, args: &Args) -> anyhow::Result<Plan> {
    if args.wit.is_some() || args.engine.is_some() {
        bail!(
            "{} is a project: its policy.toml names the engine and its wit/ is the WIT; --wit and --engine are for a single source",
            dir.display()
        );
    }
    let manifest_path = dir.join("policy.toml");
    let text = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let manifest: Manifest = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", manifest_path.display(), e.to_string().trim()))?;
    // A schema no host could apply is refused before anything is built.
    manifest.metadata().check_schema().map_err(|e| {
        anyhow::anyhow!(
            "{}: params.{}: {}",
            manifest_path.display(),
            e.field,
            e.message
        )
    })?;
    let policy = &manifest.policy;
    let mut layout = Layout::project(&policy.name, policy.language, Path::new("target"));
    let mut route = RustRoute::Rustup;
    if policy.language == Language::Rust {
        route = rust_route()?;
        (layout.module, layout.rust_target) = rust_crate(dir, route)?;
    }
    if let Some(out) = &args.out {
        layout.output = std::path::absolute(out)?;
    }
    Ok(Plan {
        name: policy.name.clone(),
        language: policy.language,
        engine: policy.engine.unwrap_or_default(),
        layout,
        route,
        dir: dir.to_owned(),
        metadata: Some(manifest.metadata()),
        _work: None,
        stamped: true,
    })
}

/// The language of the source at `path`: a Rust crate's directory, or a file by its extension.
fn source_language(path: &Path) -> anyhow::Result<Language> {
    if path.is_dir() {
        if !path.join("Cargo.toml").is_file() {
            bail!(
                "{} has neither policy.toml (a project: `rebound new LANG NAME` writes one) nor Cargo.toml (a Rust crate)",
                path.display()
            );
        }
        return Ok(Language::Rust);
    }
    Ok(match path.extension().and_then(|e| e.to_str()) {
        Some("py") => Language::Python,
        Some("js") => Language::Javascript,
        Some("ts") => Language::Typescript,
        Some("c") => Language::C,
        Some("cpp" | "cc" | "cxx") => Language::Cpp,
        Some("go") => Language::Go,
        Some("zig") => Language::Zig,
        _ => bail!(
            "cannot tell the language of {}: a source is a .py, .js, .ts, .c, .cpp, .go or .zig file or a Rust crate's directory",
            path.display()
        ),
    })
}

/// The WIT package a source in `language` is built against: `--wit` or `wit`, which must exist;
/// none for a Rust crate, whose bindings come from the guest SDK.
fn wit_for(language: Language, args: &Args) -> anyhow::Result<PathBuf> {
    let wit = args.wit.clone().unwrap_or_else(|| PathBuf::from("wit"));
    if language == Language::Rust {
        if args.wit.is_some() {
            bail!(
                "--wit is not for a Rust crate: its bindings come from the guest SDK it depends on"
            );
        }
    } else if !wit.is_dir() {
        bail!(
            "{}: no WIT package there; give --wit DIR, or write one with `rebound wit --out {}`",
            wit.display(),
            wit.display()
        );
    }
    Ok(wit)
}

/// The plan for one policy's source at `path`, built in the current directory.
fn source_plan(path: &Path, args: &Args) -> anyhow::Result<Plan> {
    if !path.exists() {
        bail!("{}: no such file or directory", path.display());
    }
    let language = source_language(path)?;
    if args.engine.is_some() && !matches!(language, Language::Javascript | Language::Typescript) {
        bail!(
            "--engine is for a JavaScript or TypeScript source, not {}",
            path.display()
        );
    }
    let wit = wit_for(language, args)?;
    let work = tempfile::Builder::new()
        .prefix("rebound-build-")
        .tempdir()
        .context("cannot create a scratch directory")?;
    let route = match language {
        Language::Rust => rust_route()?,
        _ => RustRoute::Rustup,
    };
    let (module, rust_target) = match language {
        Language::Rust => rust_crate(path, route)?,
        _ => (
            path.file_stem()
                .map(|stem| stem.to_string_lossy().replace('-', "_"))
                .unwrap_or_default(),
            PathBuf::new(),
        ),
    };
    let output = args
        .out
        .clone()
        .unwrap_or_else(|| format!("{module}.wasm").into());
    // A Go source builds in a workspace made around it in the scratch directory.
    let source = if language == Language::Go {
        go_workspace::write(work.path(), path)?;
        work.path().join("policy.go")
    } else {
        path.to_owned()
    };
    Ok(Plan {
        name: path.display().to_string(),
        language,
        engine: args.engine.unwrap_or_default(),
        layout: Layout {
            source,
            wit,
            work: work.path().to_owned(),
            module,
            rust_target,
            output,
        },
        route,
        dir: PathBuf::from("."),
        metadata: None,
        _work: Some(work),
        stamped: false,
    })
}

/// Where the tools write `output` before it is finished: beside it, hidden
/// (`.NAME.wasm.building`), so the rename that publishes it stays on one filesystem.
fn staged(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    output.with_file_name(format!(".{name}.building"))
}

/// Where each of `steps`' tools is: every tool looked for before the first runs, so a missing
/// one costs no time.
fn tools_of(plan: &Plan, steps: &[project::Step]) -> anyhow::Result<Vec<PathBuf>> {
    let mut missing: Vec<String> = steps
        .iter()
        .filter(|step| find(&step.program, &plan.dir).is_none())
        .map(|step| format!("  {} was not found: {}", step.program, step.install))
        .collect();
    if !missing.is_empty() {
        missing.dedup();
        bail!(
            "cannot build {} (looked {}; `rebound doctor` lists every language's tools):\n{}",
            plan.name,
            crate::tools::looked(&plan.dir),
            missing.join("\n")
        );
    }
    Ok(steps
        .iter()
        .filter_map(|step| find(&step.program, &plan.dir))
        .collect())
}

/// What the steps read from the generated directory: Go's WASI adapter, and the declarations
/// of the WIT a TypeScript policy is checked against by tsc.
fn write_generated(plan: &Plan) -> anyhow::Result<()> {
    let gen = plan.dir.join(&plan.layout.work).join("gen");
    if plan.language == Language::Go {
        go_workspace::write_adapter(&gen)?;
    }
    if plan.language == Language::Typescript {
        let declarations = wit_typescript::declarations_of_dir(&plan.dir.join(&plan.layout.wit))?;
        std::fs::create_dir_all(&gen)
            .with_context(|| format!("cannot create {}", gen.display()))?;
        let file = gen.join(project::TS_DECLARATIONS);
        std::fs::write(&file, declarations)
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(())
}

/// Runs `step` in the plan's directory; a failed step's half-written output (`staged`) is
/// removed and its output shown.
fn run_step(step: &project::Step, plan: &Plan, staged: &Path) -> anyhow::Result<()> {
    let program = find(&step.program, &plan.dir).expect("checked before the first step");
    let mut command = Command::new(program);
    command
        .args(&step.args)
        .env("PATH", crate::tools::child_path(&plan.dir))
        .envs(step.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&plan.dir)
        .stdin(Stdio::null());
    let output = command
        .output()
        .with_context(|| format!("cannot run {}", step.program))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(staged);
        bail!(
            "{} failed ({}):\n{}{}",
            step.program,
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    if let Some(file) = &step.stdout_to {
        let file = plan.dir.join(file);
        std::fs::write(&file, &output.stdout)
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(())
}

/// The finished component: the `staged` build with a project's metadata section (name,
/// version, description, parameter schema) appended, moved to `component` by one rename.
fn publish(plan: &Plan, staged: &Path, component: &Path) -> anyhow::Result<Vec<u8>> {
    let mut bytes = std::fs::read(staged)
        .with_context(|| format!("the build wrote no {}", staged.display()))?;
    if let Some(metadata) = &plan.metadata {
        bytes = metadata.append_to(bytes);
        std::fs::write(staged, &bytes)
            .with_context(|| format!("cannot write {}", staged.display()))?;
    }
    std::fs::rename(staged, component).with_context(|| {
        format!(
            "cannot move {} to {}",
            staged.display(),
            component.display()
        )
    })?;
    Ok(bytes)
}

/// Runs `rebound build`.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let path = args.path.clone().unwrap_or_else(|| PathBuf::from("."));
    let plan = if path.join("policy.toml").is_file() {
        project_plan(&path, args)?
    } else if path == Path::new(".") {
        bail!(
            "no policy.toml here: a policy project has one (`rebound new LANG NAME` writes it); or name a source to build: `rebound build FILE`"
        );
    } else {
        source_plan(&path, args)?
    };
    // The tools write beside the component, under a hidden name; the finished component (its
    // metadata appended) replaces the old one by one rename, so a host watching the file sees
    // one new version per build and never a component without its metadata.
    let component = plan.dir.join(&plan.layout.output);
    let mut layout = plan.layout.clone();
    layout.output = staged(&plan.layout.output);
    let staged = plan.dir.join(&layout.output);
    let steps = project::steps(plan.language, plan.engine, &layout, plan.route);
    let tools = tools_of(&plan, &steps)?;
    // A project's inputs, stamped: unchanged since the component was built, it is left alone.
    let settings = format!(
        "rebound {} {:?} {:?} {:?} {}",
        env!("CARGO_PKG_VERSION"),
        plan.language,
        plan.engine,
        plan.route,
        plan.layout.output.display()
    );
    let outputs = [component.clone(), staged.clone()];
    let inputs = |dir: &Path| build_stamp::inputs(dir, &outputs, &settings, &tools);
    let before = if plan.stamped {
        Some(inputs(&plan.dir).context("cannot read the project's files")?)
    } else {
        None
    };
    if let (Some(before), false) = (&before, args.force) {
        let current = std::fs::read(&component).ok();
        if let (Some(stamp), Some(bytes)) = (build_stamp::read(&plan.dir), current) {
            let sha256 = build_stamp::hex_sha256(&bytes);
            if &stamp.inputs == before && stamp.component == sha256 {
                writeln!(
                    out,
                    "up to date: {} ({} bytes, sha256 {sha256}): nothing it is built from changed (--force rebuilds)",
                    component.display(),
                    bytes.len()
                )?;
                return Ok(());
            }
        }
    }
    write_generated(&plan)?;
    for step in &steps {
        writeln!(out, "$ {}", project::shell(std::slice::from_ref(step)))?;
        out.flush()?;
        run_step(step, &plan, &staged)?;
    }
    let bytes = publish(&plan, &staged, &component)?;
    let sha256 = build_stamp::hex_sha256(&bytes);
    // Stamped only if no input changed while it was built (an edit saved meanwhile rebuilds).
    if let Some(before) = before {
        if inputs(&plan.dir).ok().as_ref() == Some(&before) {
            let stamp = build_stamp::Stamp {
                inputs: before,
                component: sha256.clone(),
            };
            build_stamp::write(&plan.dir, &stamp)
                .with_context(|| format!("cannot write {}", build_stamp::STAMP))?;
        }
    }
    writeln!(
        out,
        "built {} ({} bytes, sha256 {sha256})",
        component.display(),
        bytes.len()
    )?;
    Ok(())
}
