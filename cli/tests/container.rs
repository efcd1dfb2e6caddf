//! Spec: the container image (docs/deploy.md "Container"). Built from the tree's
//! `Containerfile` with Debian's podman, it runs `rebound serve` as the unprivileged user
//! `rebound` on a read-only root file system, decides through a policy mounted read-only at
//! /etc/rebound, caches the compiled policy in its volume, and drains and exits on SIGTERM, its
//! stop signal.
//!
//! No image registry is reachable here, so the `Containerfile`'s two images are replaced by
//! build arguments: the Debian it runs on is made by `debootstrap` from Debian's packages, and
//! the binary is the tree's own build (the `build` stage is skipped). How this machine runs
//! containers: with runc (crun refuses its mixed cgroup v1/v2 layout), on the host's network,
//! with open-file and process limits within the machine's own. `./scripts/test-services.sh`
//! installs podman, runc and debootstrap.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{run, tree};

/// The image the tests' Debian is kept as between runs.
const DEBIAN: &str = "localhost/rebound-test/debian:bookworm";

/// podman with this machine's runtime.
fn podman() -> Command {
    let mut command = Command::new("podman");
    command.args(["--runtime", "runc"]);
    command
}

/// The limits a container is given: the machine's own open-file limit, and a process limit
/// below it (podman's defaults exceed what this machine lets a process set).
fn limits() -> [String; 4] {
    let (_, files) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    [
        "--ulimit".into(),
        format!("nofile={files}:{files}"),
        "--ulimit".into(),
        "nproc=4096:4096".into(),
    ]
}

/// What the container `name` wrote, both streams.
fn logs(name: &str) -> String {
    let output = podman().args(["logs", name]).output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Debian bookworm as an image, made once by `debootstrap` (minimal variant).
fn debian(scratch: &Path) {
    if podman()
        .args(["image", "exists", DEBIAN])
        .status()
        .unwrap()
        .success()
    {
        return;
    }
    let root = scratch.join("debian");
    run(Command::new("debootstrap")
        .args(["--variant=minbase", "bookworm"])
        .arg(&root)
        .arg("http://deb.debian.org/debian"));
    let archive = scratch.join("debian.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&archive)
        .arg("."));
    run(podman().arg("import").arg(&archive).arg(DEBIAN));
}

/// Removes the container when the test ends, however it ends.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman()
            .args(["rm", "--force", "--volumes", &self.0])
            .output();
    }
}

#[test]
fn the_image_serves_a_mounted_policy_as_an_unprivileged_user_and_drains_on_sigterm() {
    let scratch = tempfile::tempdir().unwrap();
    debian(scratch.path());
    let tag = format!("localhost/rebound-test/rebound:{}", std::process::id());
    let binary_tag = format!("localhost/rebound-test/binary:{}", std::process::id());

    // The binary: the tree's build, in an image of its own.
    let context = scratch.path().join("binary");
    std::fs::create_dir(&context).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_rebound"), context.join("rebound")).unwrap();
    std::fs::write(
        context.join("Containerfile"),
        "FROM scratch\nCOPY rebound /usr/local/bin/rebound\n",
    )
    .unwrap();
    run(podman()
        .args(["build", "--quiet", "--tag", &binary_tag])
        .arg(&context));

    // The image, from the tree's Containerfile.
    run(podman()
        .args(["build", "--quiet", "--runtime", "runc", "--network", "host"])
        .args(limits())
        .args(["--build-arg", &format!("RUNTIME_IMAGE={DEBIAN}")])
        .args(["--build-arg", &format!("BINARY_IMAGE={binary_tag}")])
        .args(["--tag", &tag, "--file"])
        .arg(tree().join("Containerfile"))
        .arg(tree()));
    let _images = Images(vec![tag.clone(), binary_tag]);
    let config = run(podman().args([
        "image",
        "inspect",
        "--format",
        "{{.Config.User}} {{.Config.StopSignal}} {{json .Config.Volumes}}",
        &tag,
    ]));
    assert_eq!(
        config.trim(),
        r#"rebound:rebound SIGTERM {"/var/cache/rebound":{}}"#
    );

    // A configuration and its policy, mounted read-only.
    let policies = scratch.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::copy(
        support::guest("best_effort"),
        policies.join("best_effort.wasm"),
    )
    .unwrap();
    std::fs::write(
        policies.join("rebound.toml"),
        "default_policy = \"p\"\npolicy_dir = \"/etc/rebound\"\n[policies.p]\ncomponent = \"best_effort.wasm\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    for (path, mode) in [
        (policies.clone(), 0o755),
        (policies.join("best_effort.wasm"), 0o644),
        (policies.join("rebound.toml"), 0o644),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let name = format!("rebound-test-{}", std::process::id());
    let container = Container(name.clone());
    run(podman()
        .args([
            "run",
            "--detach",
            "--name",
            &name,
            "--network",
            "host",
            "--read-only",
        ])
        .args(limits())
        .arg("--volume")
        .arg(format!("{}:/etc/rebound:ro", policies.display()))
        .arg(&tag)
        .args(["serve", "/etc/rebound/rebound.toml", "--listen"])
        .arg(format!("127.0.0.1:{port}")));

    // One decision through it.
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let answer: serde_json::Value = loop {
        match ureq::post(&format!("{url}/v1/decide"))
            .header("Content-Type", "application/json")
            .send(
                json!({"request": {"type": "get", "retry_attempts": 0}, "reason": "KV_LOCKED"})
                    .to_string(),
            ) {
            Ok(mut response) => break response.body_mut().read_json().unwrap(),
            Err(_) if started.elapsed() < Duration::from_secs(120) => {
                std::thread::sleep(Duration::from_millis(200))
            }
            Err(e) => panic!("no answer from the container: {e}\n{}", logs(&name)),
        }
    };
    assert_eq!(answer["decision"], "retry", "{answer}");
    assert_eq!(answer["policy"], "p", "{answer}");
    assert!(
        !answer["version"].as_str().unwrap().starts_with("builtin:"),
        "not decided by the component: {answer}"
    );

    // It runs as `rebound`, and the compiled policy is in its cache volume.
    let user = run(podman().args(["exec", &name, "id", "--user", "--name"]));
    assert_eq!(user.trim(), "rebound");
    let cached = run(podman().args(["exec", &name, "find", "/var/cache/rebound", "-type", "f"]));
    assert!(!cached.trim().is_empty(), "nothing cached");

    // `podman stop` sends the stop signal: the server drains and exits cleanly.
    run(podman().args(["stop", "--time", "30", &name]));
    let exit = run(podman().args(["inspect", "--format", "{{.State.ExitCode}}", &name]));
    let logs = logs(&name);
    assert_eq!(exit.trim(), "0", "{logs}");
    assert!(
        logs.contains("stopped: every request received was answered"),
        "{logs}"
    );
    drop(container);
}

/// Removes the images the test built when it ends.
struct Images(Vec<String>);

impl Drop for Images {
    fn drop(&mut self) {
        for image in &self.0 {
            let _ = podman().args(["rmi", "--force", image]).output();
        }
    }
}
