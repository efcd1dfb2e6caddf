//! Helpers shared by the binary's integration tests.
#![allow(dead_code)] // each test binary uses a subset

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The `rebound` binary, without the backtrace variable a developer's shell may set.
pub fn rebound() -> Command {
    let mut command = Command::cargo_bin("rebound").unwrap();
    command.env_remove("RUST_BACKTRACE");
    command
}

/// The standard output of `command`, which must succeed.
pub fn success_stdout(command: &mut Command) -> Vec<u8> {
    command.assert().success().get_output().stdout.clone()
}

/// A component built by ./scripts/build-guests.sh.
pub fn guest(name: &str) -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../build/guests/{name}.wasm"));
    assert!(
        path.is_file(),
        "{}: run ./scripts/build-guests.sh",
        path.display()
    );
    path
}

pub mod server;

/// The source tree these tests belong to.
pub fn tree() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// A PATH holding only the tools of `language` as the tree's scripts installed them, plus the
/// system's directories (clang-14, Debian's cargo), and a `zig` script for Zig.
pub fn tool_path(language: &str, scratch: &Path) -> String {
    let tree = tree();
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let venv = tree.join(".tools/venv/bin");
    let mut dirs = vec![venv.clone()];
    match language {
        "c" | "cpp" => dirs.push(cache.join("rebound-tools/cargo/bin")),
        "go" => {
            dirs.push(cache.join("rebound-tools/cargo/bin"));
            dirs.push(tree.join(".tools/bin"));
        }
        "zig" => {
            dirs.push(cache.join("rebound-tools/cargo/bin"));
            let bin = scratch.join("zig-bin");
            std::fs::create_dir_all(&bin).unwrap();
            let zig = bin.join("zig");
            std::fs::write(
                &zig,
                format!(
                    "#!/bin/sh\nexec {} -m ziglang \"$@\"\n",
                    venv.join("python").display()
                ),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&zig, std::fs::Permissions::from_mode(0o755)).unwrap();
            dirs.push(bin);
        }
        "javascript" | "typescript" => dirs.push(tree.join(".tools/node/node_modules/.bin")),
        _ => {}
    }
    dirs.push("/usr/local/bin".into());
    dirs.push("/usr/bin".into());
    dirs.push("/bin".into());
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    std::env::join_paths(dirs).unwrap().into_string().unwrap()
}

/// The first problem `rebound test --json` reported for its `i`-th case.
pub fn case_problem(report: &serde_json::Value, i: usize) -> String {
    report["cases"][i]["problems"][0]
        .as_str()
        .unwrap_or_else(|| panic!("case {i} has no problem: {report}"))
        .to_owned()
}

/// The commands of each step of the CI workflow `rebound new` wrote into `project` that runs
/// commands, in order.
pub fn workflow_runs(project: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(project.join(".github/workflows/policy.yml")).unwrap();
    let documents = yaml_rust2::YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("the workflow is not YAML: {e}\n{text}"));
    let steps = documents[0]["jobs"]["test"]["steps"]
        .as_vec()
        .unwrap_or_else(|| panic!("no jobs.test.steps:\n{text}"));
    steps
        .iter()
        .filter_map(|step| step["run"].as_str().map(str::to_owned))
        .collect()
}

/// Runs `command`, which must succeed; its standard output. A failure shows the command and
/// both of its streams.
pub fn run(command: &mut std::process::Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}
