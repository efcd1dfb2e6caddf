//! `rebound doctor`: for each policy language, whether `rebound build` would find every tool it
//! runs, where, at which version, and how to get a missing one. It looks as `rebound build` run
//! in the current directory would: that project's `node_modules/.bin` first.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::ValueEnum;
use serde_json::{json, Value};

use crate::build::rust_route;
use crate::project::{self, Engine, Language, Layout, RustRoute};
use crate::tools;

/// Options of `rebound doctor`.
#[derive(clap::Args)]
pub struct Args {
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

/// One tool a language's build runs.
struct Tool {
    program: String,
    found: Option<PathBuf>,
    version: Option<String>,
    install: &'static str,
}

/// What one language (one JavaScript engine) needs.
struct Needs {
    name: String,
    route: Option<String>,
    problem: Option<String>,
    tools: Vec<Tool>,
}

impl Needs {
    fn ready(&self) -> bool {
        self.problem.is_none() && self.tools.iter().all(|tool| tool.found.is_some())
    }
}

/// The first line a tool prints for `--version` (or `version`, Go's and Zig's spelling).
fn version_of(path: &Path, project: &Path) -> Option<String> {
    ["--version", "version"].into_iter().find_map(|arg| {
        let output = Command::new(path)
            .arg(arg)
            .env("PATH", tools::child_path(project))
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = if output.stdout.is_empty() {
            output.stderr
        } else {
            output.stdout
        };
        let line = String::from_utf8_lossy(&text)
            .lines()
            .next()?
            .trim()
            .to_owned();
        (output.status.success() && !line.is_empty()).then_some(line)
    })
}

/// What `language` (on `engine`) needs, looked up for the project in `project`.
fn needs(language: Language, engine: Engine, project: &Path) -> Needs {
    let mut name = language
        .to_possible_value()
        .expect("named")
        .get_name()
        .to_owned();
    if matches!(language, Language::Javascript | Language::Typescript) {
        name = format!(
            "{name} ({})",
            engine.to_possible_value().expect("named").get_name()
        );
    }
    let (route, problem) = match language {
        Language::Rust => match rust_route() {
            Ok(RustRoute::Rustup) => (Some(RustRoute::Rustup), None),
            Ok(RustRoute::Debian) => (Some(RustRoute::Debian), None),
            Err(e) => (None, Some(e.to_string())),
        },
        _ => (None, None),
    };
    let layout = Layout::project("policy", language, Path::new("target"));
    let steps = project::steps(
        language,
        engine,
        &layout,
        route.unwrap_or(RustRoute::Rustup),
    );
    let mut tools: Vec<Tool> = Vec::new();
    for step in steps {
        if tools.iter().any(|tool| tool.program == step.program) {
            continue;
        }
        let found = tools::find(&step.program, project);
        tools.push(Tool {
            version: (found.as_deref()).and_then(|path| version_of(path, project)),
            program: step.program,
            found,
            install: step.install,
        });
    }
    Needs {
        name,
        route: route.map(|route| match route {
            RustRoute::Rustup => "rustup's wasm32-unknown-unknown target".to_owned(),
            RustRoute::Debian => "Debian's rustc-web, std built from source".to_owned(),
        }),
        problem,
        tools,
    }
}

/// Every language, JavaScript on both engines (TypeScript on the default one: its compiler
/// comes first, then JavaScript's tools).
fn every_language(project: &Path) -> Vec<Needs> {
    let mut all = Vec::new();
    for language in Language::value_variants() {
        if *language == Language::Javascript {
            all.push(needs(*language, Engine::Quickjs, project));
            all.push(needs(*language, Engine::Spidermonkey, project));
        } else {
            all.push(needs(*language, Engine::default(), project));
        }
    }
    all
}

/// Runs `rebound doctor`.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let project = std::env::current_dir().unwrap_or_default();
    let all = every_language(&project);
    if args.json {
        let languages: Vec<Value> = all
            .iter()
            .map(|needs| {
                json!({
                    "language": needs.name,
                    "ready": needs.ready(),
                    "route": needs.route,
                    "problem": needs.problem,
                    "tools": needs.tools.iter().map(|tool| json!({
                        "program": tool.program,
                        "found": tool.found.as_ref().map(|p| p.display().to_string()),
                        "version": tool.version,
                        "install": (tool.found.is_none()).then_some(tool.install),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(
            out,
            "{}",
            json!({"looked": tools::looked(&project), "languages": languages})
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "rebound doctor (tools looked for {})",
        tools::looked(&project)
    )?;
    for needs in &all {
        let state = if needs.ready() { "ready" } else { "MISSING" };
        write!(out, "  {:<26} {state}", needs.name)?;
        match (&needs.route, &needs.problem) {
            (Some(route), _) => writeln!(out, " ({route})")?,
            (None, Some(problem)) => writeln!(out, ": {problem}")?,
            (None, None) => writeln!(out)?,
        }
        for tool in &needs.tools {
            match &tool.found {
                Some(path) => writeln!(
                    out,
                    "      {:<16} {} {}",
                    tool.program,
                    tool.version.as_deref().unwrap_or("(version unknown)"),
                    path.display()
                )?,
                None => writeln!(
                    out,
                    "      {:<16} not found: {}",
                    tool.program, tool.install
                )?,
            }
        }
    }
    Ok(())
}
