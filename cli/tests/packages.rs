//! Spec: the published crates work from their packages alone (docs/releasing.md "What the
//! packages are checked to do"). The crates are packaged and put in a registry this test
//! creates (a git index and `.crate` files, nothing of the source tree reachable by path); then,
//! as a user outside the tree: an application depending on `rebound-core` by version, with the
//! executor guide's dependencies, builds and decides with the executor, `cargo install` installs the `rebound` binary from the registry,
//! and that binary starts a Rust policy project (depending on `rebound-guest` by version) whose
//! CI workflow's build, test and check steps pass.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use support::{run, tool_path, tree, workflow_runs};

/// The crates published, in the order a registry must receive them.
const PUBLISHED: [&str; 8] = [
    "rebound-core",
    "rebound-guest",
    "rebound-cli",
    "rebound-scylla",
    "rebound-couchbase",
    "rebound-reqwest",
    "rebound-tonic",
    "rebound-aws",
];

/// What a registry's index calls crates.io, for the dependencies that come from there.
const CRATES_IO_INDEX: &str = "https://github.com/rust-lang/crates.io-index";

/// The same cargo that runs these tests, without the variables a developer's shell may set
/// for the tree.
fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for variable in ["CARGO_TARGET_DIR", "RUSTFLAGS", "CARGO_BUILD_TARGET_DIR"] {
        command.env_remove(variable);
    }
    command
}

/// Where the index keeps `name`'s versions (names of four letters or more).
fn index_path(name: &str) -> PathBuf {
    assert!(name.len() >= 4, "{name}");
    Path::new(&name[..2]).join(&name[2..4]).join(name)
}

/// The index line of `package` (as `cargo metadata` describes it) whose `.crate` file has
/// sha256 `cksum`: its normal and build dependencies, the tree's own crates from this registry
/// and every other from crates.io.
fn index_line(package: &Value, cksum: &str) -> Value {
    let deps: Vec<Value> = package["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|dep| dep["kind"] != "dev")
        .map(|dep| {
            let mut line = json!({
                "name": dep["rename"].as_str().or(dep["name"].as_str()),
                "req": dep["req"],
                "features": dep["features"],
                "optional": dep["optional"],
                "default_features": dep["uses_default_features"],
                "target": dep["target"],
                "kind": dep["kind"].as_str().unwrap_or("normal"),
            });
            if dep["rename"].is_string() {
                line["package"] = dep["name"].clone();
            }
            if dep["path"].is_null() {
                assert!(
                    PUBLISHED.iter().all(|name| dep["name"] != *name),
                    "{} depends on {} by version only: give it a path in the tree",
                    package["name"],
                    dep["name"]
                );
                line["registry"] = CRATES_IO_INDEX.into();
            } else {
                assert!(
                    PUBLISHED.iter().any(|name| dep["name"] == *name),
                    "{} depends by path on {}, which is not published",
                    package["name"],
                    dep["name"]
                );
            }
            line
        })
        .collect();
    json!({
        "name": package["name"],
        "vers": package["version"],
        "deps": deps,
        "cksum": cksum,
        "features": {},
        "features2": package["features"],
        "yanked": false,
        "rust_version": package["rust_version"],
        "v": 2,
    })
}

/// The workspace's packages, as `cargo metadata` describes them.
fn workspace_metadata() -> Value {
    let said = run(cargo().current_dir(tree()).args([
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--locked",
    ]));
    serde_json::from_str(&said).unwrap()
}

/// Packages the published crates and writes a registry of them under `dir`: `index/` (a git
/// repository) and `crates/`. Returns the index's URL.
fn local_registry(dir: &Path) -> String {
    let tree = tree();
    let mut package = cargo();
    package
        .current_dir(&tree)
        .args([
            "package",
            "--locked",
            "--no-verify",
            "--allow-dirty",
            "--quiet",
        ])
        .arg("--target-dir")
        .arg(dir.join("package-target"));
    for name in PUBLISHED {
        package.args(["-p", name]);
    }
    run(&mut package);
    let metadata = workspace_metadata();
    let index = dir.join("index");
    let crates = dir.join("crates");
    std::fs::create_dir_all(&crates).unwrap();
    std::fs::create_dir_all(&index).unwrap();
    std::fs::write(
        index.join("config.json"),
        json!({ "dl": format!("file://{}/{{crate}}-{{version}}.crate", crates.display()) })
            .to_string(),
    )
    .unwrap();
    for name in PUBLISHED {
        let package = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|package| package["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not a member of the workspace"));
        let file = format!("{name}-{}.crate", package["version"].as_str().unwrap());
        let bytes = std::fs::read(dir.join("package-target/package").join(&file)).unwrap();
        std::fs::write(crates.join(&file), &bytes).unwrap();
        let cksum = hex(&Sha256::digest(&bytes));
        let path = index.join(index_path(name));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{}\n", index_line(package, &cksum))).unwrap();
    }
    let git = |args: &[&str]| {
        run(Command::new("git")
            .current_dir(&index)
            .args([
                "-c",
                "user.name=rebound-tests",
                "-c",
                "user.email=tests@localhost",
            ])
            .args(args))
    };
    git(&["init", "--quiet"]);
    git(&["add", "--all"]);
    git(&["commit", "--quiet", "--message", "the packaged crates"]);
    format!("file://{}", index.display())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A cargo configuration for everything under `dir`: the registry `local`, crates.io's
/// `rebound-core` and `rebound-guest` taken from it (as if published there), and the index fetched
/// by git itself (Debian's cargo, which builds the Rust policies here, cannot fetch a git index
/// with its system libgit2).
fn user_configuration(dir: &Path, index: &str) {
    let version = env!("CARGO_PKG_VERSION");
    let configuration = format!(
        "[registries.local]\nindex = \"{index}\"\n\n[net]\ngit-fetch-with-cli = true\n\n[patch.crates-io]\n\
         rebound-core = {{ version = \"{version}\", registry = \"local\" }}\n\
         rebound-guest = {{ version = \"{version}\", registry = \"local\" }}\n"
    );
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    std::fs::write(dir.join(".cargo/config.toml"), configuration).unwrap();
}

/// A cargo configuration file in `dir` holding the tree's dev profile: a build with it in the
/// tree's build directory finds the dependencies the tree's tests compiled.
fn tree_profile(dir: &Path) -> PathBuf {
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(tree().join("Cargo.toml")).unwrap()).unwrap();
    let mut profile = toml::Table::new();
    profile.insert("dev".into(), manifest["profile"]["dev"].clone());
    let mut profiles = toml::Table::new();
    profiles.insert("profile".into(), profile.into());
    let path = dir.join("tree-profile.toml");
    std::fs::write(&path, toml::to_string(&profiles).unwrap()).unwrap();
    path
}

/// The first block of `language` in `guide`.
fn first_block(guide: &str, language: &str) -> String {
    let text = std::fs::read_to_string(tree().join(guide)).unwrap();
    let fence = format!("```{language}\n");
    let start = text.find(&fence).expect("a block") + fence.len();
    let end = start + text[start..].find("```").unwrap();
    text[start..end].to_owned()
}

#[test]
fn a_user_outside_the_tree_builds_installs_and_authors() {
    let scratch = tempfile::tempdir().unwrap();
    let index = local_registry(&scratch.path().join("registry"));
    let user = scratch.path().join("user");
    user_configuration(&user, &index);
    let version = env!("CARGO_PKG_VERSION");
    // The application's intermediate artifacts go to the tree's build directory, shared as far
    // as cargo allows (the same dependencies with the same settings are not compiled again);
    // its final ones to a directory of the test's own.
    let build_dir = tree().join("target");
    let target = scratch.path().join("target");

    // (a) An application on `rebound-core` by version: the executor guide's dependencies and example.
    let app = user.join("app");
    std::fs::create_dir_all(app.join("src")).unwrap();
    std::fs::write(
        app.join("Cargo.toml"),
        format!(
            "[package]\nname = \"outside\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
             {}\n[workspace]\n",
            first_block("docs/executor.md", "toml")
        ),
    )
    .unwrap();
    std::fs::write(
        app.join("src/main.rs"),
        first_block("docs/executor.md", "rust"),
    )
    .unwrap();
    // The tree's lock file as the start: the same versions as the tree's build.
    std::fs::copy(tree().join("Cargo.lock"), app.join("Cargo.lock")).unwrap();
    let said = run(cargo()
        .current_dir(&app)
        .env("CARGO_BUILD_BUILD_DIR", &build_dir)
        .env("CARGO_TARGET_DIR", &target)
        .arg("--config")
        .arg(tree_profile(&user))
        .args(["run", "--quiet"]));
    assert!(
        said.contains("\"requestId\":1") && said.contains("\"tenant\":\"acme\""),
        "{said}"
    );
    let lock = std::fs::read_to_string(app.join("Cargo.lock")).unwrap();
    let rebound = lock
        .split("\n\n")
        .find(|entry| entry.contains("name = \"rebound-core\"\n"))
        .unwrap();
    assert!(
        rebound.contains("source = \"registry+file://"),
        "not from the registry:\n{rebound}"
    );

    // (b) The binary, installed from the registry (`cargo install` reads only the user's
    // configuration, so the file is named). Installing from a registry ignores a build
    // directory, and the tree's target directory would receive this `rebound` in place of the
    // one other tests run meanwhile: it builds in a target directory of its own, kept for the
    // next run, without debug information.
    let root = user.join("root");
    run(cargo()
        .current_dir(&user)
        .env("CARGO_TARGET_DIR", tree().join("target/packages"))
        .arg("--config")
        .arg(user.join(".cargo/config.toml"))
        .args(["--config", "profile.dev.debug=false"])
        .args(["install", "--quiet", "--locked", "--debug"])
        .args(["--registry", "local", "rebound-cli", "--version", version])
        .arg("--root")
        .arg(&root));
    let rebound = root.join("bin/rebound");
    let said = run(Command::new(&rebound).arg("--version"));
    assert_eq!(said.trim(), format!("rebound {version}"));

    // (c) A Rust policy project from that binary, on `rebound-guest` by version.
    let project = user.join("outside-policy");
    run(Command::new(&rebound)
        .args(["new", "rust", "outside-policy"])
        .arg(&project));
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("rebound-guest = \"{version}\"")) && !manifest.contains("path"),
        "{manifest}"
    );
    // Its CI workflow installs this version of `rebound-cli` with `cargo install` (as above,
    // from crates.io), then runs `rebound build`, `test` and `check`. Those three run here with
    // the binary installed above and the tools the tree's scripts installed; the install steps
    // need GitHub's runner (rustup's wasm32 target cannot be downloaded on this machine).
    let runs = workflow_runs(&project);
    assert!(
        runs.contains(&format!("cargo install --locked rebound-cli@{version}\n")),
        "{runs:?}"
    );
    let path = format!(
        "{}:{}",
        root.join("bin").display(),
        tool_path("rust", scratch.path())
    );
    let mut ran = Vec::new();
    for commands in runs
        .iter()
        .filter(|commands| commands.starts_with("rebound "))
    {
        ran.push(run(Command::new("bash")
            .args(["-e", "-c", commands])
            .current_dir(&project)
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", tree().join("build/guest-target"))));
    }
    assert_eq!(ran.len(), 3, "{runs:?}");
    assert!(ran[0].contains("built "), "{}", ran[0]);
    assert!(ran[1].contains("6 passed, 0 failed"), "{}", ran[1]);
    let lock = std::fs::read_to_string(project.join("Cargo.lock")).unwrap();
    assert!(
        lock.contains("name = \"rebound-guest\"\nversion = \"0.6.0\"\nsource = \"registry+file://"),
        "rebound-guest not from the registry:\n{lock}"
    );
}

/// Spec: every published crate's name is free on crates.io or already this project's
/// (docs/releasing.md "Names"). `cargo info` asks the public index: no crate of that name, or
/// one with the manifest's description. A name another crate holds would give a user's
/// `cargo add` someone else's library, and the registry above would hide that, since its
/// `[patch]` answers for crates.io.
#[test]
fn published_names_are_free_on_crates_io_or_this_project_s() {
    let metadata = workspace_metadata();
    let outside = tempfile::tempdir().unwrap();
    for name in PUBLISHED {
        let ours = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|package| package["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not a package of the workspace"))["description"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no description"))
            .to_owned();
        let asked = cargo()
            .current_dir(outside.path())
            .args(["info", name, "--registry", "crates-io", "--quiet"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&asked.stdout);
        let error = String::from_utf8_lossy(&asked.stderr);
        if asked.status.success() {
            // The first line names the crate and its keywords, the second is its description.
            let theirs = said.lines().nth(1).unwrap_or_default();
            assert_eq!(
                theirs, ours,
                "`{name}` on crates.io is another crate:\n{said}"
            );
        } else {
            assert!(
                error.contains(&format!("could not find `{name}`")),
                "crates.io could not be asked about `{name}`:\n{error}"
            );
        }
    }
}
