//! Spec: the deployment examples of docs/deploy.md. The systemd unit
//! (`examples/deploy/rebound.service`) is one systemd accepts: `systemd-analyze verify` finds
//! every key known and, with `ExecStart` pointed at this build, the command there. The
//! Kubernetes sidecar (`examples/deploy/kubernetes-sidecar.yaml`) holds a configuration the
//! registry accepts and agrees with the image (`Containerfile`: its user, command, volumes and
//! probes) and with the server's drain. The container image itself: `container.rs`; the
//! ConfigMap volume's reload: `hot_swap::a_config_map_volume_update_reloads_the_configuration_and_the_component`.

use crate::support::tree;

use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

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

/// The `kind` document of the Kubernetes example.
fn manifest<'a>(documents: &'a [Yaml], kind: &str) -> &'a Yaml {
    documents
        .iter()
        .find(|document| document["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} in the example"))
}

/// The entry of `list` (containers, volumes) called `name`.
fn named<'a>(list: &'a Yaml, name: &str) -> &'a Yaml {
    list.as_vec()
        .unwrap_or_else(|| panic!("not a list: {list:?}"))
        .iter()
        .find(|entry| entry["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in the example"))
}

#[test]
fn the_kubernetes_sidecar_agrees_with_the_image_and_the_server() {
    let text =
        std::fs::read_to_string(tree().join("examples/deploy/kubernetes-sidecar.yaml")).unwrap();
    let documents = YamlLoader::load_from_str(&text).unwrap();

    // The configuration in the ConfigMap is one the registry loads (a pinned OCI component).
    let config_map = manifest(&documents, "ConfigMap");
    let configuration = config_map["data"]["rebound.toml"].as_str().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("rebound.toml");
    std::fs::write(&path, configuration).unwrap();
    let loaded = rebound::config::RegistryConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.watch.enabled, "the ConfigMap is watched");

    let pod = &manifest(&documents, "Deployment")["spec"]["template"]["spec"];
    let sidecar = named(&pod["containers"], "rebound");
    let containerfile = std::fs::read_to_string(tree().join("Containerfile")).unwrap();
    // The image's user and command.
    assert!(containerfile.contains("--uid 10001 "), "{containerfile}");
    assert_eq!(
        sidecar["securityContext"]["runAsUser"].as_i64(),
        Some(10001)
    );
    let args: Vec<&str> = sidecar["args"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "serve",
            "/etc/rebound/rebound.toml",
            "--listen",
            "0.0.0.0:8080"
        ]
    );
    assert!(
        containerfile
            .contains(r#"CMD ["serve", "/etc/rebound/rebound.toml", "--listen", "0.0.0.0:8080"]"#),
        "{containerfile}"
    );
    // The ConfigMap at the configuration's place, and the image's cache volume.
    let mounts: Vec<(&str, &str)> = sidecar["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|mount| {
            (
                mount["name"].as_str().unwrap(),
                mount["mountPath"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        mounts,
        [("config", "/etc/rebound"), ("cache", "/var/cache/rebound")]
    );
    assert!(containerfile.contains(r#"VOLUME ["/var/cache/rebound"]"#));
    let config_volume = named(&pod["volumes"], "config");
    assert_eq!(
        config_volume["configMap"]["name"],
        config_map["metadata"]["name"]
    );
    // Readiness and liveness on the server's endpoints, at its port.
    assert_eq!(
        sidecar["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/ready")
    );
    assert_eq!(
        sidecar["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/health")
    );
    assert_eq!(
        sidecar["readinessProbe"]["httpGet"]["port"].as_i64(),
        Some(8080)
    );
    // The pod waits longer than the server's drain.
    let help = String::from_utf8(
        Command::new(env!("CARGO_BIN_EXE_rebound"))
            .args(["serve", "--help"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let drain_ms: u64 = help
        .split("--drain-timeout-ms <MS>")
        .nth(1)
        .and_then(|rest| rest.split("[default: ").nth(1))
        .and_then(|rest| rest.split(']').next())
        .and_then(|ms| ms.parse().ok())
        .expect("serve --help gives the drain timeout's default");
    let grace_s = pod["terminationGracePeriodSeconds"].as_i64().unwrap() as u64;
    assert!(
        grace_s * 1000 > drain_ms,
        "{grace_s} s, drain {drain_ms} ms"
    );
}
