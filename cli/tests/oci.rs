//! Policies shipped through an OCI registry, against a real registry
//! server started by the test (Debian's `docker-registry`, installed by
//! `scripts/test-services.sh`): `rebound push` and `rebound pull` on the real binary;
//! `component = { oci, sha256 }` resolved at load into the artifact cache; a moved tag (the
//! pinned digest wins; an unpinned tag is resolved again only by an explicit reload); the
//! registry down at start with a cached artifact (it serves) and without one (a clear error).

use crate::support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rebound::registry::{PolicyRegistry, RegistryConfig};
use rebound::wasm::WasmRuntime;
use rebound::{reasons, Decision, Request, RequestType};
use support::{guest, rebound, success_stdout};

const REGISTRY: &str = "/usr/bin/docker-registry";

/// A registry server on a free loopback port, storing in a temporary directory; killed when
/// dropped.
struct Registry {
    child: Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        assert!(
            Path::new(REGISTRY).exists(),
            "{REGISTRY} is missing: ./scripts/test-services.sh installs Debian's docker-registry"
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("127.0.0.1:{port}");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let child = Command::new(REGISTRY)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the registry did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Registry {
            child,
            address,
            _dir: dir,
        }
    }

    fn reference(&self, tag: &str) -> String {
        format!("{}/policies/retry:{tag}", self.address)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sha256_of(name: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(std::fs::read(guest(name)).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn push(name: &str, reference: &str) -> String {
    let out = success_stdout(rebound().args(["push", guest(name).to_str().unwrap(), reference]));
    String::from_utf8(out).unwrap()
}

/// The configuration file `dir/name` whose default policy is `component`, with its artifact
/// cache in `cache`.
fn config(dir: &Path, name: &str, cache: &Path, component: &str) -> PathBuf {
    let file = dir.join(name);
    std::fs::write(
        &file,
        format!(
            "default_policy = \"p\"\ncache_dir = \"{}\"\n[watch]\nenabled = false\n[policies.p]\ncomponent = {component}\n",
            cache.display()
        ),
    )
    .unwrap();
    file
}

/// `rebound eval --config FILE` on a KV_LOCKED failure of a get: `retry` (best effort) or
/// `cancel` (fail fast), and the deciding version; or the error.
fn decide(config: &Path) -> Result<(String, String), String> {
    let output = rebound()
        .args(["eval", "--config", config.to_str().unwrap()])
        .write_stdin("{\"reason\": \"KV_LOCKED\"}\n")
        .output()
        .unwrap();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    Ok((
        answer["decision"].as_str().unwrap().to_owned(),
        answer["version"].as_str().unwrap().to_owned(),
    ))
}

/// `rebound push` prints the digest to pin; `rebound pull` gets the same bytes back.
#[test]
fn push_then_pull_round_trips_the_component() {
    let registry = Registry::start();
    let reference = registry.reference("1.0");
    let said = push("best_effort", &reference);
    let digest = sha256_of("best_effort");
    assert!(
        said.contains(&format!(
            "component = {{ oci = \"{reference}\", sha256 = \"{digest}\" }}"
        )),
        "{said}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pulled.wasm");
    let said = success_stdout(rebound().args(["pull", &reference, "-o", out.to_str().unwrap()]));
    assert!(String::from_utf8(said).unwrap().contains(&digest));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(guest("best_effort")).unwrap()
    );
    // Without -o, the repository's name in the current directory.
    success_stdout(rebound().current_dir(dir.path()).args(["pull", &reference]));
    assert!(dir.path().join("retry.wasm").is_file());
}

/// A pinned component is fetched by its digest: moving the tag to another component changes
/// nothing, even with an empty cache; the registry down, the cached copy serves; down with
/// nothing cached, loading fails saying so.
#[test]
fn a_pinned_component_keeps_its_digest_and_serves_from_the_cache_offline() {
    let registry = Registry::start();
    let reference = registry.reference("stable");
    push("best_effort", &reference);
    let best = sha256_of("best_effort");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let pinned = config(
        dir.path(),
        "pinned.toml",
        &cache,
        &format!("{{ oci = \"{reference}\", sha256 = \"{best}\" }}"),
    );
    assert_eq!(
        decide(&pinned).unwrap(),
        ("retry".into(), best[..12].into())
    );

    push("fail_fast", &reference); // the tag moves
    let fresh = dir.path().join("fresh-cache");
    let pinned_fresh = config(
        dir.path(),
        "fresh.toml",
        &fresh,
        &format!("{{ oci = \"{reference}\", sha256 = \"{best}\" }}"),
    );
    assert_eq!(
        decide(&pinned_fresh).unwrap(),
        ("retry".into(), best[..12].into()),
        "the pinned digest wins over the moved tag"
    );

    drop(registry); // the registry goes down
    assert_eq!(
        decide(&pinned).unwrap(),
        ("retry".into(), best[..12].into()),
        "served from the cache"
    );
    let empty = config(
        dir.path(),
        "empty.toml",
        &dir.path().join("empty-cache"),
        &format!("{{ oci = \"{reference}\", sha256 = \"{best}\" }}"),
    );
    let error = decide(&empty).unwrap_err();
    assert!(
        error.contains("policy `p`")
            && error.contains(&reference)
            && error.contains("no copy of it is cached"),
        "{error}"
    );
}

/// An unpinned tag is resolved when the registry loads and again at an explicit reload, never
/// on its own; the registry down, the copy last pulled for the tag serves.
#[test]
fn an_unpinned_tag_moves_only_on_an_explicit_reload() {
    let registry = Registry::start();
    let reference = registry.reference("latest");
    push("best_effort", &reference);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let file = config(
        dir.path(),
        "unpinned.toml",
        &cache,
        &format!("{{ oci = \"{reference}\" }}"),
    );
    let runtime = WasmRuntime::new(64 << 20).unwrap();
    let policies =
        PolicyRegistry::with_runtime(RegistryConfig::load(&file).unwrap(), runtime).unwrap();
    let decide_now = || {
        let mut request = Request::new(1, RequestType::Get, Duration::from_secs(2)).unwrap();
        block_on(policies.maybe_retry(&mut request, &reasons::KV_LOCKED))
            .unwrap()
            .decision
    };
    assert!(matches!(decide_now(), Decision::Retry(_)));
    let status = policies.policy_status("p").unwrap();
    assert_eq!(status.active.source, format!("oci:{reference}"));

    push("fail_fast", &reference);
    assert!(
        matches!(decide_now(), Decision::Retry(_)),
        "the tag is not followed on its own"
    );
    policies.reload("p").unwrap();
    assert!(
        matches!(decide_now(), Decision::Fail(_)),
        "an explicit reload resolves the tag again"
    );

    drop(registry);
    assert!(
        matches!(decide(&file).unwrap().0.as_str(), "cancel"),
        "the registry down, the copy last pulled for the tag serves"
    );
}

/// Drives a future on a current-thread runtime (a decision completes without waiting).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}
