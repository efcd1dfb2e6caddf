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

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound::wasm::{CacheStats, CodeOrigin, WasmRuntime};
use rebound::{reasons, Decision, DecisionContext, Request, RequestType};
use support::{guest, rebound, success_stdout};

const REGISTRY: &str = "/usr/bin/docker-registry";

/// A registry server on a free loopback port, storing in a temporary directory; killed when
/// dropped.
struct Registry {
    child: Child,
    address: String,
    _dir: tempfile::TempDir,
    _auth: Option<tempfile::TempDir>,
}

impl Registry {
    fn start() -> Registry {
        Self::start_with("")
    }

    /// A registry that requires HTTP basic authentication as `user` with `password`.
    fn start_with_user(user: &str, password: &str) -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let htpasswd = dir.path().join("htpasswd");
        let hash = bcrypt::hash(password, 4).unwrap();
        std::fs::write(&htpasswd, format!("{user}:{hash}\n")).unwrap();
        let mut registry = Self::start_with(&format!(
            "auth:\n  htpasswd:\n    realm: rebound-test\n    path: {}\n",
            htpasswd.display()
        ));
        registry._auth = Some(dir);
        registry
    }

    /// A registry whose configuration ends with `extra`.
    fn start_with(extra: &str) -> Registry {
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
                "version: 0.1\nlog:\n  level: error\nstorage:\n  delete:\n    enabled: true\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n{extra}",
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
            _auth: None,
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
    let decide_now = || decide_with(&policies);
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

/// `rebound` with no registry credentials but those `home` (its `HOME` and Docker directory)
/// holds and `variables` give.
fn rebound_at(home: &Path, variables: &[(&str, &str)]) -> assert_cmd::Command {
    let mut command = rebound();
    for variable in [
        "REGISTRY_AUTH_FILE",
        "XDG_RUNTIME_DIR",
        "XDG_CONFIG_HOME",
        "DOCKER_CONFIG",
        "REBOUND_REGISTRY",
        "REBOUND_REGISTRY_USERNAME",
        "REBOUND_REGISTRY_PASSWORD",
        "REBOUND_REGISTRY_TOKEN",
    ] {
        command.env_remove(variable);
    }
    command
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"));
    for (name, value) in variables {
        command.env(name, value);
    }
    command
}

/// The standard error of `command`, which must fail.
fn failure_stderr(command: &mut assert_cmd::Command) -> String {
    String::from_utf8(command.assert().failure().get_output().stderr.clone()).unwrap()
}

/// docs/registry.md "Private registries": against a registry requiring basic authentication,
/// `push`, `pull` and a configuration's `component = { oci }` use the credentials of the
/// Docker auth file (`~/.docker/config.json`) or of the `REBOUND_REGISTRY*` variables; without
/// any, the refusal names the registry and where credentials were looked for; a wrong one is
/// refused naming where it came from.
#[test]
fn a_private_registry_is_reached_with_the_credentials_of_the_auth_file_or_the_variables() {
    let registry = Registry::start_with_user("ci", "s3cr3t");
    let reference = registry.reference("private");
    let component = guest("best_effort");
    let component = component.to_str().unwrap();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();

    let refused = failure_stderr(rebound_at(home, &[]).args(["push", component, &reference]));
    assert!(
        refused.contains(&format!("the registry {} refused access", registry.address))
            && refused.contains(&format!("no credential for {}", registry.address))
            && refused.contains(".docker/config.json"),
        "{refused}"
    );

    // Docker's auth file: `auth` is the base64 of `user:password`.
    std::fs::create_dir_all(home.join(".docker")).unwrap();
    std::fs::write(
        home.join(".docker/config.json"),
        format!(
            "{{\"auths\": {{\"{}\": {{\"auth\": \"Y2k6czNjcjN0\"}}}}}}",
            registry.address
        ),
    )
    .unwrap();
    success_stdout(rebound_at(home, &[]).args(["push", component, &reference]));
    let pulled = home.join("pulled.wasm");
    success_stdout(rebound_at(home, &[]).args([
        "pull",
        &reference,
        "-o",
        pulled.to_str().unwrap(),
    ]));
    assert_eq!(
        std::fs::read(&pulled).unwrap(),
        std::fs::read(component).unwrap()
    );
    let best = sha256_of("best_effort");
    let file = config(
        home,
        "private.toml",
        &home.join("policy-cache"),
        &format!("{{ oci = \"{reference}\", sha256 = \"{best}\" }}"),
    );
    let answer = success_stdout(
        rebound_at(home, &[])
            .args(["eval", "--config", file.to_str().unwrap()])
            .write_stdin("{\"reason\": \"KV_LOCKED\"}\n"),
    );
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["decision"], "retry");

    // The variables, for the registry they name; they come before the auth file.
    let address = registry.address.as_str();
    let with_password = |password: &'static str| {
        [
            ("REBOUND_REGISTRY", address),
            ("REBOUND_REGISTRY_USERNAME", "ci"),
            ("REBOUND_REGISTRY_PASSWORD", password),
        ]
    };
    let empty = tempfile::tempdir().unwrap();
    success_stdout(
        rebound_at(empty.path(), &with_password("s3cr3t")).args(["push", component, &reference]),
    );
    let refused =
        failure_stderr(rebound_at(home, &with_password("wrong")).args(["pull", &reference]));
    assert!(
        refused.contains("refused access")
            && refused
                .contains("the user name and password from REBOUND_REGISTRY_USERNAME were refused"),
        "{refused}"
    );
    let half = failure_stderr(
        rebound_at(empty.path(), &[("REBOUND_REGISTRY_USERNAME", "ci")]).args(["pull", &reference]),
    );
    assert!(half.contains("REBOUND_REGISTRY_PASSWORD"), "{half}");
}

/// An ECDSA P-256 key pair made with openssl as a user would: the private key (SEC1 PEM) and
/// the public key (PEM).
fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let (private, public) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.pub")),
    );
    let openssl = |args: &[&str]| {
        let status = Command::new("openssl").args(args).status().unwrap();
        assert!(status.success(), "openssl {args:?}");
    };
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    openssl(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-out",
        &path(&private),
    ]);
    openssl(&[
        "pkey",
        "-in",
        &path(&private),
        "-pubout",
        "-out",
        &path(&public),
    ]);
    (private, public)
}

/// `config` with a `[trust]` table trusting `key`.
fn trusting(dir: &Path, name: &str, component: &str, key: &Path) -> PathBuf {
    let file = config(dir, name, &dir.join(format!("{name}-cache")), component);
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&format!("[trust]\nkeys = [\"{}\"]\n", key.display()));
    std::fs::write(&file, text).unwrap();
    file
}

/// The manifest digest `rebound push` printed.
fn manifest_digest(said: &str) -> String {
    let line = said.lines().find(|l| l.starts_with("  digest")).unwrap();
    line.split_whitespace().last().unwrap().to_owned()
}

/// docs/registry.md "Signed policies": under a `[trust]` table an OCI component loads only
/// when a signature by a trusted key holds for its manifest (`rebound push --sign`, cosign's
/// format); an unsigned one, one signed by another key and one carrying a signature made for
/// another digest are refused, naming why. A signature removed from the registry refuses the
/// next reload, and the running version keeps serving, the refusal in the status.
#[test]
fn under_a_trust_table_only_components_signed_by_a_trusted_key_load() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (release, release_pub) = key_pair(dir, "release");
    let (other, _) = key_pair(dir, "other");
    let push_as = |name: &str, tag: &str, key: Option<&Path>| {
        let reference = registry.reference(tag);
        let mut command = rebound();
        command.args(["push", guest(name).to_str().unwrap(), &reference]);
        if let Some(key) = key {
            command.arg("--sign").arg(key);
        }
        let said = String::from_utf8(success_stdout(&mut command)).unwrap();
        (reference, manifest_digest(&said), said)
    };
    let under_trust = |name: &str, reference: &str| {
        let component = format!("{{ oci = \"{reference}\" }}");
        trusting(dir, name, &component, &release_pub)
    };

    let (signed, signed_digest, said) = push_as("best_effort", "signed", Some(&release));
    assert!(
        said.contains(&format!(
            "signed    {}",
            signed.replace(
                ":signed",
                &format!(":{}.sig", signed_digest.replace(':', "-"))
            )
        )),
        "{said}"
    );
    let signed_config = under_trust("signed", &signed);
    assert_eq!(decide(&signed_config).unwrap().0, "retry");

    let (unsigned, unsigned_digest, _) = push_as("fail_fast", "unsigned", None);
    let refused = decide(&under_trust("unsigned", &unsigned)).unwrap_err();
    assert!(
        refused.contains("is refused")
            && refused.contains(&unsigned_digest)
            && refused.contains("no signature"),
        "{refused}"
    );

    let (foreign, _, _) = push_as("no_retry_for_robots", "foreign", Some(&other));
    let refused = decide(&under_trust("foreign", &foreign)).unwrap_err();
    assert!(
        refused.contains("does not verify with any trusted key"),
        "{refused}"
    );

    // The release signature of `signed`, copied to where the signature of `unsigned` goes.
    let manifests = format!("http://{}/v2/policies/retry/manifests", registry.address);
    let oci_manifest = "application/vnd.oci.image.manifest.v1+json";
    let signature_of = |digest: &str| format!("{manifests}/{}.sig", digest.replace(':', "-"));
    let copied = ureq::get(&signature_of(&signed_digest))
        .header("Accept", oci_manifest)
        .call()
        .unwrap()
        .body_mut()
        .read_to_vec()
        .unwrap();
    ureq::put(&signature_of(&unsigned_digest))
        .header("Content-Type", oci_manifest)
        .send(&copied[..])
        .unwrap();
    let refused = decide(&under_trust("copied", &unsigned)).unwrap_err();
    assert!(
        refused.contains(&format!(
            "it signs \"{signed_digest}\", not {unsigned_digest}"
        )),
        "{refused}"
    );

    // The signature of `signed` removed: the next reload is refused, the running version serves.
    let policies = PolicyRegistry::new(RegistryConfig::load(&signed_config).unwrap()).unwrap();
    let decide_now = || decide_with(&policies);
    assert!(matches!(decide_now(), Decision::Retry(_)));
    let stored = ureq::get(&signature_of(&signed_digest))
        .header("Accept", oci_manifest)
        .call()
        .unwrap();
    let stored = stored.headers()["Docker-Content-Digest"]
        .to_str()
        .unwrap()
        .to_owned();
    ureq::delete(&format!("{manifests}/{stored}"))
        .call()
        .unwrap();
    let error = policies.reload("p").unwrap_err().to_string();
    assert!(error.contains("no signature"), "{error}");
    assert!(
        matches!(decide_now(), Decision::Retry(_)),
        "the running version serves"
    );
    let status = policies.policy_status("p").unwrap();
    assert_eq!(status.reload_failures, 1);
}

/// The `precompiled = "…"` pin `rebound push --precompile` printed.
fn precompiled_pin(said: &str) -> String {
    let start = said.find("precompiled = \"").expect("a precompiled pin") + 15;
    said[start..start + 64].to_owned()
}

/// How the default policy of the configuration `file` got its machine code on a new host, and
/// the cache's counters: loaded with the engine that configuration gives.
fn load_origin(file: &Path) -> (Option<CodeOrigin>, CacheStats) {
    let policies = PolicyRegistry::new(RegistryConfig::load(file).unwrap()).unwrap();
    let origin = policies.policy_status("p").unwrap().active.origin;
    (origin, policies.status().cache.unwrap())
}

/// docs/registry.md "Precompiled components": a component pushed with `--precompile` and
/// pinned with `precompiled` loads from its compiled layer on a host with the same engine
/// configuration (nothing compiled); a layer compiled for another engine configuration, one
/// compiled from another component and one the registry does not hold are refused, and the
/// component is compiled as without them.
#[test]
fn a_precompiled_component_loads_without_compiling_where_the_engine_matches() {
    let registry = Registry::start();
    let reference = registry.reference("compiled");
    let said = String::from_utf8(success_stdout(rebound().args([
        "push",
        guest("best_effort").to_str().unwrap(),
        &reference,
        "--precompile",
    ])))
    .unwrap();
    assert!(said.contains("  compiled  "), "{said}");
    let precompiled = precompiled_pin(&said);
    let best = sha256_of("best_effort");
    let dir = tempfile::tempdir().unwrap();
    let host = |name: &str, pin: &str| {
        config(
            dir.path(),
            &format!("{name}.toml"),
            &dir.path().join(format!("{name}-cache")),
            &format!("{{ oci = \"{reference}\", sha256 = \"{best}\", precompiled = \"{pin}\" }}"),
        )
    };
    let (origin, cache) = load_origin(&host("matching", &precompiled));
    assert_eq!(origin, Some(CodeOrigin::Cached), "{cache:?}");
    assert_eq!((cache.hits, cache.misses), (1, 0));
    assert_eq!(
        decide(&host("matching", &precompiled)).unwrap(),
        ("retry".into(), best[..12].into())
    );

    // Compiled for another engine configuration: optimised.
    let speed = dir.path().join("speed.toml");
    std::fs::write(
        &speed,
        "default_policy = \"p\"\n[engine]\noptimization = \"speed\"\n[policies.p]\nbuiltin = \"fail-fast\"\n",
    )
    .unwrap();
    let other_engine = registry.reference("speed");
    let said = String::from_utf8(success_stdout(rebound().args([
        "push",
        guest("best_effort").to_str().unwrap(),
        &other_engine,
        "--precompile",
        "--config",
        speed.to_str().unwrap(),
    ])))
    .unwrap();
    let (origin, _) = load_origin(&host("other-engine", &precompiled_pin(&said)));
    assert_eq!(origin, Some(CodeOrigin::Compiled));

    // Compiled from another component, in the same repository.
    let said = String::from_utf8(success_stdout(rebound().args([
        "push",
        guest("fail_fast").to_str().unwrap(),
        &registry.reference("other-component"),
        "--precompile",
    ])))
    .unwrap();
    let (origin, _) = load_origin(&host("other-component", &precompiled_pin(&said)));
    assert_eq!(origin, Some(CodeOrigin::Compiled));

    // Not in the registry.
    let (origin, _) = load_origin(&host("missing", &"0".repeat(64)));
    assert_eq!(origin, Some(CodeOrigin::Compiled));
}

/// The decision `policies` make on a KV_LOCKED failure of a get.
fn decide_with(policies: &PolicyRegistry) -> Decision {
    let mut request = Request::new(1, RequestType::Get, Duration::from_secs(2)).unwrap();
    block_on(policies.decide(&mut request, &DecisionContext::new(&reasons::KV_LOCKED)))
        .unwrap()
        .decision
}

/// Drives a future on a current-thread runtime (a decision completes without waiting).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

/// The store a configuration of `config`'s shape keeps pulled components in.
fn stored_blobs(cache: &Path) -> usize {
    std::fs::read_dir(cache.join("oci/blobs")).map_or(0, |dir| dir.count())
}

/// SECURITY.md "Policies from registries": a component layer larger than `[engine]
/// max_component_bytes`, by the size its manifest gives, is refused before the download,
/// naming the limit, pinned or not, and nothing is stored.
#[test]
fn a_component_past_the_size_limit_is_refused_before_it_is_downloaded() {
    let registry = Registry::start();
    let reference = registry.reference("large");
    push("best_effort", &reference);
    let size = std::fs::metadata(guest("best_effort")).unwrap().len();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for (name, component) in [
        ("tag", format!("{{ oci = \"{reference}\" }}")),
        (
            "pinned",
            format!(
                "{{ oci = \"{reference}\", sha256 = \"{}\" }}",
                sha256_of("best_effort")
            ),
        ),
    ] {
        let file = config(dir.path(), &format!("{name}.toml"), &cache, &component);
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(&format!("[engine]\nmax_component_bytes = {}\n", size / 2));
        std::fs::write(&file, text).unwrap();
        let refused = decide(&file).unwrap_err();
        assert!(
            refused.contains(&format!("larger than the limit of {} bytes", size / 2))
                && refused.contains("not downloaded"),
            "{name}: {refused}"
        );
        assert_eq!(stored_blobs(&cache), 0, "{name}: nothing stored");
    }
}

/// SECURITY.md "Policies from registries": under a `[trust]` table a precompiled layer is
/// native code from the registry, so it is installed only when it is a layer of the artifact
/// whose signature holds; one pushed beside it, unsigned, is not used and the component is
/// compiled.
#[test]
fn under_a_trust_table_a_precompiled_layer_must_be_part_of_the_signed_artifact() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (release, release_pub) = key_pair(dir, "release");
    let guest_path = guest("best_effort");
    let signed_with_layer = registry.reference("signed-with-layer");
    let said = String::from_utf8(success_stdout(rebound().args([
        "push",
        guest_path.to_str().unwrap(),
        &signed_with_layer,
        "--precompile",
        "--sign",
        release.to_str().unwrap(),
    ])))
    .unwrap();
    let pin = precompiled_pin(&said);
    let best = sha256_of("best_effort");
    let host = |name: &str, reference: &str| {
        let component =
            format!("{{ oci = \"{reference}\", sha256 = \"{best}\", precompiled = \"{pin}\" }}");
        trusting(dir, name, &component, &release_pub)
    };
    let (origin, _) = load_origin(&host("signed", &signed_with_layer));
    assert_eq!(
        origin,
        Some(CodeOrigin::Cached),
        "the signed artifact's own layer"
    );

    // The component alone, signed; the same compiled layer pushed beside it, unsigned.
    let signed_alone = registry.reference("signed-alone");
    success_stdout(rebound().args([
        "push",
        guest_path.to_str().unwrap(),
        &signed_alone,
        "--sign",
        release.to_str().unwrap(),
    ]));
    success_stdout(rebound().args([
        "push",
        guest_path.to_str().unwrap(),
        &registry.reference("unsigned-layer"),
        "--precompile",
    ]));
    let (origin, _) = load_origin(&host("unsigned-layer", &signed_alone));
    assert_eq!(
        origin,
        Some(CodeOrigin::Compiled),
        "a layer outside the signed artifact"
    );
}

/// Uploads `bytes` as a blob of the test repository; its digest.
fn upload_blob(registry: &Registry, bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = format!("sha256:{}", hex_of(&Sha256::digest(bytes)));
    let base = format!(
        "http://{}/v2/policies/retry/blobs/uploads/",
        registry.address
    );
    let started = ureq::post(&base).send_empty().unwrap();
    let location = started.headers()["Location"].to_str().unwrap().to_owned();
    let location = if location.starts_with("http") {
        location
    } else {
        format!("http://{}{location}", registry.address)
    };
    let separator = if location.contains('?') { '&' } else { '?' };
    ureq::put(&format!("{location}{separator}digest={digest}"))
        .header("Content-Type", "application/octet-stream")
        .send(bytes)
        .unwrap();
    digest
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SECURITY.md "Policies from registries": a signature whose payload the manifest says is
/// larger than 64 KiB is not read (its size is checked before the download), and the
/// component it would sign is refused, naming why.
#[test]
fn an_oversized_signature_payload_is_not_read() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let (_, release_pub) = key_pair(dir.path(), "release");
    let reference = registry.reference("huge-signature");
    let said = push("best_effort", &reference);
    let digest = manifest_digest(&said);
    let payload = vec![b'x'; 300 << 10];
    let layer = upload_blob(&registry, &payload);
    let config = upload_blob(&registry, b"{}");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": 2},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": layer,
            "size": payload.len(),
            "annotations": {"dev.cosignproject.cosign/signature": "MEUCIQ=="}
        }]
    });
    ureq::put(&format!(
        "http://{}/v2/policies/retry/manifests/{}.sig",
        registry.address,
        digest.replace(':', "-")
    ))
    .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
    .send(manifest.to_string().as_bytes())
    .unwrap();
    let component = format!("{{ oci = \"{reference}\" }}");
    let refused = decide(&trusting(dir.path(), "huge", &component, &release_pub)).unwrap_err();
    assert!(
        refused.contains("larger than 65536 bytes; not read"),
        "{refused}"
    );
}
