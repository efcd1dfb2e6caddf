//! Helpers shared by the binary's integration tests.
#![allow(dead_code)] // each test binary uses a subset

use std::path::PathBuf;

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

/// The first problem `rebound test --json` reported for its `i`-th case.
pub fn case_problem(report: &serde_json::Value, i: usize) -> String {
    report["cases"][i]["problems"][0]
        .as_str()
        .unwrap_or_else(|| panic!("case {i} has no problem: {report}"))
        .to_owned()
}
