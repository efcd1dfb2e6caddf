//! Spec: the systemd unit of docs/deploy.md "systemd" (`examples/deploy/rebound.service`) is one
//! systemd accepts: `systemd-analyze verify` finds every key known and, with `ExecStart`
//! pointed at this build, the command there. (The container image: `container.rs`.)

use crate::support::tree;

use std::process::Command;

#[test]
fn the_systemd_unit_verifies_with_every_key_known() {
    let unit = std::fs::read_to_string(tree().join("examples/deploy/rebound.service")).unwrap();
    assert!(
        unit.contains("ExecStart=/usr/local/bin/rebound serve "),
        "{unit}"
    );
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("rebound.service");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/rebound", env!("CARGO_BIN_EXE_rebound")),
    )
    .unwrap();
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian's systemd; ./scripts/test-services.sh installs it)");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && said.trim().is_empty(), "{said}");
}
