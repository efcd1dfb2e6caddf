//! A policy project outside this tree: `rebound new LANG NAME
//! DIR` in a temporary directory, `rebound build` there with only that language's tools on
//! PATH, `rebound test` with the cases the template ships (passing, then failing after an
//! edit that breaks a rule), and the component served by a running `rebound serve`, which
//! swaps the rebuilt one in — for every language (SpiderMonkey: new, build and test). The
//! tools are the ones the tree's scripts installed (`scripts/build-guests.sh` runs first in
//! `scripts/test.sh`).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use sha2::{Digest, Sha256};
use support::server::Server;
use support::{rebound, success_stdout, tool_path, tree, workflow_runs};

/// `rebound build` in `dir` with `path`; the Rust target directory is the tree's guest one, so
/// std (built from source on the Debian route) is not built again.
fn build(dir: &Path, path: &str) {
    let said = build_with(dir, path, &[]);
    assert!(said.contains("built "), "{said}");
}

/// [`build`] with more arguments; what it printed.
fn build_with(dir: &Path, path: &str, args: &[&str]) -> String {
    let output = rebound()
        .arg("build")
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", tree().join("build/guest-target"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "rebound build in {}:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// docs/authoring.md "Reproducible builds": building the project in `dir` again, nothing
/// changed, leaves its component as it is; and for the languages whose tools build
/// reproducibly, a forced rebuild gives the same bytes.
fn builds_again_to_the_same_bytes(dir: &Path, path: &str, component: &Path, reproducible: bool) {
    let sha = |file: &Path| format!("{:x}", Sha256::digest(std::fs::read(file).unwrap()));
    if dir.join("Cargo.lock").exists() {
        // The first build wrote Cargo.lock, an input: it was not stamped.
        let said = build_with(dir, path, &[]);
        assert!(said.contains("built "), "{said}");
    }
    let first = sha(component);
    let said = build_with(dir, path, &[]);
    assert!(said.contains("up to date: "), "{said}");
    assert_eq!(sha(component), first);
    if reproducible {
        let said = build_with(dir, path, &["--force"]);
        assert!(said.contains("built "), "{said}");
        assert_eq!(
            sha(component),
            first,
            "a forced rebuild gives the same bytes"
        );
    }
}

/// The artifact cache (`XDG_CACHE_HOME`) of the project in `dir`: `rebound test` and
/// `rebound serve` share it as they would a user's, so a component is compiled once.
fn cache_home(dir: &Path) -> PathBuf {
    dir.parent().unwrap().join("cache")
}

/// `rebound test NAME.wasm` in `dir`: its last line and whether it passed.
fn test(dir: &Path, name: &str) -> (String, bool) {
    let output = rebound()
        .args(["test", &format!("{name}.wasm")])
        .current_dir(dir)
        .env("XDG_CACHE_HOME", cache_home(dir))
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    (
        stdout.lines().last().unwrap_or_default().to_owned(),
        output.status.success(),
    )
}

/// `rebound new LANG NAME DIR` writes a project that builds and passes its cases.
fn new_build_test(language: &str, source: &str) -> (tempfile::TempDir, PathBuf, String) {
    new_build_test_with(language, source, &[])
}

/// `new_build_test` with more options of `rebound new`.
fn new_build_test_with(
    language: &str,
    source: &str,
    options: &[&str],
) -> (tempfile::TempDir, PathBuf, String) {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("project");
    let name = format!("my-{language}-policy");
    // The guest SDK of this checkout: the crate registry's is the default (tested from the
    // packaged crates by `packages::a_user_outside_the_tree_builds_installs_and_authors`).
    let sdk = tree().join("guest-sdk");
    let sdk = match language {
        "rust" => vec!["--sdk", sdk.to_str().unwrap()],
        _ => vec![],
    };
    let said = success_stdout(
        rebound()
            .args(["new", language, &name, dir.to_str().unwrap()])
            .args(sdk)
            .args(options),
    );
    let said = String::from_utf8(said).unwrap();
    assert!(said.contains("rebound build"), "{said}");
    for file in [
        source,
        "policy.toml",
        "wit/policy.wit",
        "tests.jsonl",
        "README.md",
        ".github/workflows/policy.yml",
    ] {
        assert!(dir.join(file).is_file(), "{language}: no {file}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("wit/policy.wit")).unwrap(),
        std::fs::read_to_string(tree().join("wit/policy.wit")).unwrap()
    );
    // The workflow installs the published `rebound` and runs what the README says.
    let runs = workflow_runs(&dir);
    let install = format!(
        "cargo install --locked rebound-cli@{}\n",
        env!("CARGO_PKG_VERSION")
    );
    assert!(runs.contains(&install), "{language}: {runs:?}");
    assert_eq!(
        runs[runs.len() - 3..],
        [
            "rebound build\n".to_owned(),
            format!("rebound test {name}.wasm tests.jsonl\n"),
            format!("rebound check {name}.wasm\n"),
        ],
        "{language}"
    );
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        readme.contains("rebound build") && readme.contains(&format!("rebound test {name}.wasm")),
        "{readme}"
    );
    let path = tool_path(language, scratch.path());
    build(&dir, &path);
    assert_eq!(test(&dir, &name), ("6 passed, 0 failed".to_owned(), true));
    (scratch, dir, path)
}

/// Breaks the template's rule (best effort before `max_attempts`): the cases catch it.
fn edit_and_fail(dir: &Path, source: &str, from: &str, to: &str, path: &str, name: &str) {
    let file = dir.join(source);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "{source} no longer has `{from}`");
    std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
    build(dir, path);
    let (last, passed) = test(dir, name);
    assert!(
        !passed && last.ends_with(" failed") && !last.ends_with(" 0 failed"),
        "{last}"
    );
}

/// `POST /v1/decide` for a GET after `attempts` retries failing with
/// SERVICE_NOT_AVAILABLE: the decision (`retry`, `fail`, …) and the version that decided.
fn decide(server: &Server, attempts: u32) -> (String, String) {
    let (status, answer) = server.post(
        "/v1/decide",
        json!({"request": {"type": "get", "retry_attempts": attempts}, "reason": "SERVICE_NOT_AVAILABLE"}),
    );
    assert_eq!(status, 200, "{answer}");
    (
        answer["decision"].as_str().unwrap().to_owned(),
        answer["version"].as_str().unwrap().to_owned(),
    )
}

/// The whole path for one language: new, build, test, served by `rebound serve` (which
/// watches the component), edited (the cases fail), rebuilt and hot-swapped in by the watch.
/// The server finds each component already compiled by `rebound test` in the shared cache.
/// `rebound build` publishes the finished component by one rename (docs/authoring.md): the
/// rebuild is one new version, with its metadata, and a rollback returns to the version before
/// the edit.
fn full_path(language: &str, source: &str, from: &str, to: &str) {
    let (_scratch, dir, path) = new_build_test(language, source);
    let name = format!("my-{language}-policy");
    let reproducible = !matches!(language, "python" | "javascript" | "typescript");
    builds_again_to_the_same_bytes(&dir, &path, &dir.join(format!("{name}.wasm")), reproducible);
    let config = dir.join("rebound.toml");
    std::fs::write(
        &config,
        format!("default_policy = \"p\"\npolicy_dir = \".\"\n[watch]\nenabled = true\ndebounce_ms = 200\n[policies.p]\ncomponent = \"{name}.wasm\"\n"),
    )
    .unwrap();
    let cache = cache_home(&dir);
    let server =
        Server::start_with_env(&config, "127.0.0.1:0", None, &[("XDG_CACHE_HOME", &cache)]);
    let (decision, first_version) = decide(&server, 2);
    assert_eq!(decision, "retry");
    // `GET /v1/policies` shows what the policy says about itself.
    let (status, policy) = server.call("GET", "/v1/policies/p", "", None);
    assert_eq!(status, 200, "{policy}");
    assert_eq!(
        policy["active"]["metadata"]["name"],
        name.as_str(),
        "{policy}"
    );

    // A second name for the first build's file: a rebuild that wrote the component in place
    // would change what it holds.
    let component = dir.join(format!("{name}.wasm"));
    let first_bytes = std::fs::read(&component).unwrap();
    let kept = dir.parent().unwrap().join("first-build.wasm");
    std::fs::hard_link(&component, &kept).unwrap();

    edit_and_fail(&dir, source, from, to, &path, &name);
    assert!(
        std::fs::read(&kept).unwrap() == first_bytes,
        "the rebuild replaced the component by a rename, never wrote into the old file"
    );
    // The watch swaps the rebuilt component in; until then the first version answers.
    let started = Instant::now();
    loop {
        let (decision, version) = decide(&server, 2);
        if version != first_version {
            assert_eq!(decision, "cancel", "the edited policy decides");
            break;
        }
        assert_eq!(decision, "retry");
        // Rebuilding and compiling a Python or JavaScript component takes minutes on two cores
        // busy with the other tests' builds.
        if started.elapsed() > Duration::from_secs(360) {
            let (_, log) = server.terminate();
            panic!("the rebuilt component was not swapped in; the server said:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Past the debounce, nothing else was swapped in.
    std::thread::sleep(Duration::from_millis(600));
    let (status, policy) = server.call("GET", "/v1/policies/p", "", None);
    assert_eq!(status, 200, "{policy}");
    assert_eq!(policy["swaps"], 1, "one new version per build: {policy}");
    assert_eq!(
        policy["previous"]["version"],
        first_version.as_str(),
        "{policy}"
    );
    assert_eq!(
        policy["active"]["metadata"]["name"],
        name.as_str(),
        "{policy}"
    );
    let (status, answer) = server.call("POST", "/v1/policies/p/rollback", "", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(decide(&server, 2), ("retry".to_owned(), first_version));
    let (clean, log) = server.terminate();
    assert!(clean, "{log}");
}

#[test]
fn c_project_from_new_to_hot_swap() {
    full_path(
        "c",
        "policy.c",
        "static uint32_t max_attempts = 3;",
        "static uint32_t max_attempts = 1;",
    );
}

#[test]
fn rust_project_from_new_to_hot_swap() {
    full_path(
        "rust",
        "src/lib.rs",
        "params.parse_or(\"max_attempts\", 3)",
        "params.parse_or(\"max_attempts\", 1)",
    );
}

#[test]
fn cpp_project_from_new_to_hot_swap() {
    full_path(
        "cpp",
        "policy.cpp",
        "static uint32_t max_attempts = 3;",
        "static uint32_t max_attempts = 1;",
    );
}

#[test]
fn go_project_from_new_to_hot_swap() {
    full_path(
        "go",
        "policy.go",
        "var maxAttempts uint32 = 3",
        "var maxAttempts uint32 = 1",
    );
}

#[test]
fn zig_project_from_new_to_hot_swap() {
    full_path(
        "zig",
        "policy.zig",
        "var max_attempts: u32 = 3;",
        "var max_attempts: u32 = 1;",
    );
}

#[test]
fn javascript_project_on_quickjs_from_new_to_hot_swap() {
    full_path(
        "javascript",
        "policy.js",
        "let maxAttempts = 3;",
        "let maxAttempts = 1;",
    );
}

/// docs/policy-typescript.md: the TypeScript project, type-checked and compiled by tsc against
/// the declarations `rebound build` writes from the project's WIT, built on QuickJS; the
/// `tsconfig.json` it ships gives an editor the same checks; a misspelled answer is refused by
/// the build with tsc's file, line and words.
#[test]
fn typescript_project_from_new_to_hot_swap() {
    full_path(
        "typescript",
        "policy.ts",
        "let maxAttempts = 3;",
        "let maxAttempts = 1;",
    );
    let (_scratch, dir, path) = new_build_test("typescript", "policy.ts");
    assert!(dir.join("gen/rebound-policy.d.ts").is_file());
    let editor = std::process::Command::new(tree().join(".tools/node/node_modules/.bin/tsc"))
        .args(["-p", "."])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        editor.status.success(),
        "{}",
        String::from_utf8_lossy(&editor.stdout)
    );
    let source = dir.join("policy.ts");
    let text = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, text.replace("\"no-retry\"", "\"no-retri\"")).unwrap();
    let output = rebound()
        .current_dir(&dir)
        .arg("build")
        .env("PATH", &path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success()
            && said.contains("tsc failed")
            && said.contains("policy.ts(")
            && said.contains("\"no-retri\""),
        "{said}"
    );
}

/// SpiderMonkey's 12 MB component: built by componentize-js, compiled by `rebound test`.
/// The same source as QuickJS's, so new, build and test suffice.
#[test]
fn javascript_project_builds_on_spidermonkey_and_passes_its_cases() {
    let (_scratch, dir, _path) =
        new_build_test_with("javascript", "policy.js", &["--engine", "spidermonkey"]);
    let manifest = std::fs::read_to_string(dir.join("policy.toml")).unwrap();
    assert!(manifest.contains("engine = \"spidermonkey\""), "{manifest}");
    // The README shows the commands `rebound build` ran.
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("\ncomponentize-js policy.js "), "{readme}");
}

/// Python's component takes seconds to compile in a debug build, once per build here.
#[test]
fn python_project_from_new_to_hot_swap() {
    full_path(
        "python",
        "policy.py",
        "dict(params).get(\"max_attempts\", \"3\")",
        "dict(params).get(\"max_attempts\", \"1\")",
    );
}

/// `rebound build FILE` builds one source without a project, as `scripts/build-guests.sh`
/// builds the tree's: the tree's C template, against the tree's WIT, passes the template's
/// cases.
#[test]
fn a_single_source_builds_without_a_project() {
    let scratch = tempfile::tempdir().unwrap();
    let tree = tree();
    let output = rebound()
        .arg("build")
        .arg(tree.join("policies/c/template.c"))
        .arg("--wit")
        .arg(tree.join("wit"))
        .current_dir(scratch.path())
        .env("PATH", tool_path("c", scratch.path()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The component is named after the source, in the current directory.
    let component = scratch.path().join("template.wasm");
    let said = success_stdout(
        rebound()
            .arg("test")
            .arg(&component)
            .arg(tree.join("policies/template.tests.jsonl")),
    );
    let said = String::from_utf8(said).unwrap();
    assert!(said.ends_with("6 passed, 0 failed\n"), "{said}");
}

/// Bad input: an unknown language, a bad name, a directory that is not empty, a missing
/// `policy.toml`, a missing tool, a source of no known language, a missing WIT, options that
/// do not apply — each named, with what to do.
#[test]
fn bad_input_is_named() {
    let scratch = tempfile::tempdir().unwrap();
    let fail = |args: &[&str], env_path: Option<&str>| {
        let mut command = rebound();
        command.args(args).current_dir(scratch.path());
        if let Some(path) = env_path {
            command.env("PATH", path).env("REBOUND_TOOLS", path);
        }
        let output = command.output().unwrap();
        assert!(!output.status.success(), "{args:?} succeeded");
        String::from_utf8(output.stderr).unwrap()
    };
    let error = fail(&["new", "cobol", "p"], None);
    assert!(
        error.contains("invalid value 'cobol'") && error.contains("rust"),
        "{error}"
    );
    let error = fail(&["new", "c", "9 lives"], None);
    assert!(error.contains("is not a policy name"), "{error}");
    std::fs::write(scratch.path().join("taken.txt"), "x").unwrap();
    let error = fail(&["new", "c", "p", "."], None);
    assert!(error.contains("is not empty"), "{error}");
    let error = fail(&["build"], None);
    assert!(
        error.contains("policy.toml") && error.contains("rebound new"),
        "{error}"
    );
    success_stdout(
        rebound()
            .args(["new", "c", "p", "proj"])
            .current_dir(scratch.path()),
    );
    let error = fail(&["build", "proj", "--engine", "quickjs"], None);
    assert!(
        error.contains("proj is a project") && error.contains("for a single source"),
        "{error}"
    );
    std::fs::write(scratch.path().join("policy.rb"), "").unwrap();
    let error = fail(&["build", "policy.rb"], None);
    assert!(
        error.contains("cannot tell the language of policy.rb: a source is a .py, .js, .ts, .c, .cpp, .go or .zig file or a Rust crate's directory"),
        "{error}"
    );
    let error = fail(&["build", "missing.c"], None);
    assert!(
        error.contains("missing.c: no such file or directory"),
        "{error}"
    );
    let error = fail(&["build", "proj/policy.c", "--wit", "nowhere"], None);
    assert!(
        error.contains("nowhere: no WIT package there; give --wit DIR, or write one with `rebound wit --out nowhere`"),
        "{error}"
    );
    let error = fail(&["build", "proj/policy.c", "--engine", "quickjs"], None);
    assert!(
        error.contains("--engine is for a JavaScript or TypeScript source"),
        "{error}"
    );
    let error = fail(&["build", "proj"], Some("/nonexistent"));
    assert!(
        error.contains(
            "looked in proj/node_modules/.bin, on PATH and in /nonexistent; `rebound doctor` lists"
        ) && error.contains("wit-bindgen was not found: `cargo install wit-bindgen-cli@0.63.0`")
            && error.contains("clang-14 was not found")
            && error.contains("wasm-tools was not found"),
        "{error}"
    );
}

/// `rebound build` and `rebound doctor` find the tools the tree's installer put in its
/// `.tools/bin` without PATH naming it: a C project builds with only the system's directories
/// on PATH, and the doctor reports every language ready, each tool with where it was found.
/// With nothing installed where it looks, the doctor says so for each language, with how to
/// get each tool.
#[test]
fn tools_are_found_where_the_installer_put_them() {
    let (_scratch, dir, _path) = new_build_test("c", "policy.c");
    let output = rebound()
        .current_dir(&dir)
        .arg("build")
        .env("PATH", "/usr/bin:/bin")
        .env_remove("REBOUND_TOOLS")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let doctor = |path: &str, tools: Option<&str>| {
        let mut command = rebound();
        command.args(["doctor", "--json"]).env("PATH", path);
        match tools {
            Some(tools) => command.env("REBOUND_TOOLS", tools),
            None => command.env_remove("REBOUND_TOOLS"),
        };
        let report: serde_json::Value =
            serde_json::from_slice(&success_stdout(&mut command)).unwrap();
        report
    };
    let report = doctor("/usr/bin:/bin", None);
    let languages = report["languages"].as_array().unwrap();
    assert_eq!(
        languages.len(),
        9,
        "eight languages, JavaScript on two engines: {report}"
    );
    for language in languages {
        assert_eq!(language["ready"], true, "{language}");
        for tool in language["tools"].as_array().unwrap() {
            assert!(tool["found"].is_string(), "{tool}");
        }
    }
    let report = doctor("/nonexistent", Some("/nonexistent"));
    assert!(
        report["looked"].as_str().unwrap().contains("/nonexistent"),
        "{report}"
    );
    for language in report["languages"].as_array().unwrap() {
        assert_eq!(language["ready"], false, "{language}");
        let tools = language["tools"].as_array().unwrap();
        let missing: Vec<_> = tools
            .iter()
            .filter(|tool| tool["found"].is_null())
            .collect();
        assert!(!missing.is_empty(), "{language}");
        assert!(
            missing.iter().all(|tool| tool["install"].is_string()),
            "{language}"
        );
    }
}

/// docs/authoring.md: a JavaScript or TypeScript project's own tools, which `npm install` puts
/// in its `node_modules/.bin`, are found there first (as `npx` finds them) with nothing on PATH
/// or in the installer's directory; `rebound doctor` run in the project finds them too; the
/// generated `.gitignore` keeps `node_modules/` out of version control.
#[test]
fn a_project_s_own_npm_tools_are_found_and_kept_out_of_git() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("project");
    success_stdout(rebound().args(["new", "typescript", "my-ts-policy", dir.to_str().unwrap()]));
    let ignored = std::fs::read_to_string(dir.join(".gitignore")).unwrap();
    assert!(
        ignored.lines().any(|line| line == "/node_modules/"),
        "{ignored}"
    );
    let bin = dir.join("node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["tsc", "componentize-qjs"] {
        let script = bin.join(tool);
        let said = format!("#!/bin/sh\necho \"the project's own {tool} ran\" >&2\nexit 3\n");
        std::fs::write(&script, said).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let output = rebound()
        .arg("build")
        .current_dir(&dir)
        .env("PATH", "/usr/bin:/bin")
        .env("REBOUND_TOOLS", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("the project's own tsc ran"), "{stderr}");
    let report = success_stdout(
        rebound()
            .args(["doctor", "--json"])
            .current_dir(&dir)
            .env("PATH", "/usr/bin:/bin")
            .env("REBOUND_TOOLS", "/nonexistent"),
    );
    let report: serde_json::Value = serde_json::from_slice(&report).unwrap();
    let typescript = (report["languages"].as_array().unwrap().iter())
        .find(|language| language["language"] == "typescript (quickjs)")
        .unwrap();
    for tool in typescript["tools"].as_array().unwrap() {
        let found = tool["found"].as_str().unwrap_or("");
        assert!(found.starts_with(bin.to_str().unwrap()), "{tool}");
    }
}

/// `rebound build` writes the project's metadata (policy.toml's name,
/// version, description and parameter schema) into the component; `inspect` reads it back, and
/// a host's configuration whose `params` do not match the schema is refused at load as a
/// configuration error naming the file, the line and the field, before `configure` runs.
#[test]
fn metadata_round_trips_and_bad_parameters_are_configuration_errors() {
    let (_scratch, dir, _path) = new_build_test("c", "policy.c");
    let component = dir.join("my-c-policy.wasm");
    let report: serde_json::Value = serde_json::from_slice(&success_stdout(rebound().args([
        "inspect",
        "--json",
        component.to_str().unwrap(),
    ])))
    .unwrap();
    let meta = &report["policy_metadata"];
    assert_eq!(meta["name"], "my-c-policy");
    assert_eq!(meta["version"], "0.1.0");
    assert_eq!(meta["params"]["max_attempts"]["type"], "integer");
    assert_eq!(meta["params"]["max_attempts"]["default"], 3);

    let config = dir.join("rebound.toml");
    let decide_with = |params: &str| {
        std::fs::write(
            &config,
            format!("default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = false\n[policies.p]\ncomponent = \"my-c-policy.wasm\"\nparams = {params}\n"),
        )
        .unwrap();
        let output = rebound()
            .args(["eval", "--config", config.to_str().unwrap()])
            .write_stdin("{\"reason\": \"KV_LOCKED\"}\n")
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    assert!(decide_with("{ max_attempts = 5 }").0);
    let (ok, error) = decide_with("{ max_attemps = 5 }");
    let file = config.display().to_string();
    assert!(
        !ok && error.contains(&format!("{file}:7:10: policies.p.params.max_attemps: the policy takes no parameter `max_attemps`; it takes max_attempts")),
        "{error}"
    );
    let (ok, error) = decide_with("{ max_attempts = \"many\" }");
    assert!(
        !ok && error.contains("policies.p.params.max_attempts: expected an integer, got `many`"),
        "{error}"
    );
    let (ok, error) = decide_with("{ max_attempts = -1 }");
    assert!(!ok && error.contains("-1 is out of range"), "{error}");
    // `rebound test` applies the same schema to each case's `params`, naming the case's line
    // and the field: a case cannot pass with parameters no host would load.
    let cases = dir.join("params.tests.jsonl");
    std::fs::write(
        &cases,
        concat!(
            r#"{"params": {"max_attempts": 5}, "request": {"type": "get"}, "reason": "KV_LOCKED", "expect": {"decision": "retry"}}"#,
            "\n",
            r#"{"params": {"max_attemps": 5}, "request": {"type": "get"}, "reason": "KV_LOCKED", "expect": {"decision": "retry"}}"#,
            "\n",
            r#"{"params": {"max_attempts": -1}, "request": {"type": "get"}, "reason": "KV_LOCKED", "expect": {"decision": "cancel"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let output = rebound()
        .args([
            "test",
            "--json",
            component.to_str().unwrap(),
            cases.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["passed"], 1, "{report}");
    let problem = |i: usize| support::case_problem(&report, i);
    assert!(
        problem(1)
            .contains("policy.params.max_attemps: the policy takes no parameter `max_attemps`"),
        "{}",
        problem(1)
    );
    assert!(
        problem(2).contains("policy.params.max_attempts: -1 is out of range"),
        "{}",
        problem(2)
    );
    assert_eq!(report["cases"][2]["line"], 3, "{report}");

    // A policy.toml whose default does not fit its own type is refused before anything is
    // built, naming the file and the field.
    let manifest = dir.join("policy.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(
        text.contains("min = 0\n"),
        "integer bounds are written as integers: {text}"
    );
    std::fs::write(
        &manifest,
        text.replace("default = 3", "default = \"twenty\""),
    )
    .unwrap();
    let output = rebound().current_dir(&dir).arg("build").output().unwrap();
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(
        !output.status.success()
            && error.contains(
                "policy.toml: params.max_attempts.default: expected an integer, got \"twenty\""
            ),
        "{error}"
    );
}
