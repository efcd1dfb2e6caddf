//! `[source.xds]` over TLS (docs/xds.md "TLS"): the management server (tests/xds/
//! management_server.py) serves TLS with a certificate a test CA signed and asks for a client
//! certificate; `rebound serve`, given the CA and its own certificate, follows it as over
//! plaintext, while one without a client certificate is refused by the server and says why in
//! its status, never connected. The certificates are made with openssl, as a user would.

use std::path::Path;
use std::process::Command;

use crate::support::server::Server;
use crate::xds_source::{acked, control_plane_with, decide, snapshot, wait_for, xds};

/// Runs `openssl COMMAND` in `dir` (its words split on spaces).
fn openssl(dir: &Path, command: &str) {
    let status = Command::new("openssl")
        .current_dir(dir)
        .args(command.split_whitespace())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "openssl {command}");
}

/// A new P-256 key, unencrypted, as `openssl req` takes it.
const NEW_KEY: &str = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

/// A key and a certificate for `name` (`name.key`, `name.pem`) with `extensions`, signed by
/// `ca.pem`.
fn signed(dir: &Path, name: &str, extensions: &str) {
    std::fs::write(dir.join(format!("{name}.ext")), extensions).unwrap();
    openssl(
        dir,
        &format!("req {NEW_KEY} -keyout {name}.key -out {name}.csr -subj /CN={name}"),
    );
    openssl(
        dir,
        &format!(
            "x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
             -out {name}.pem -extfile {name}.ext"
        ),
    );
}

/// A test CA, a server certificate for `localhost` and 127.0.0.1, and a client certificate.
fn certificates(dir: &Path) {
    openssl(
        dir,
        &format!(
            "req -x509 {NEW_KEY} -keyout ca.key -out ca.pem -days 2 -subj /CN=rebound-test-ca"
        ),
    );
    signed(
        dir,
        "server",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    );
    signed(dir, "client", "extendedKeyUsage=clientAuth\n");
}

/// `rebound serve` following the TLS control plane on `port`; `client` adds its certificate.
fn serve(dir: &Path, name: &str, port: u16, client: bool) -> Server {
    let identity = if client {
        "cert_file = \"client.pem\"\nkey_file = \"client.key\"\n"
    } else {
        ""
    };
    let config = format!(
        "default_policy = \"standard\"\n[policies.standard]\nbuiltin = \"fail-fast\"\n\
         [source.xds]\nserver = \"https://localhost:{port}\"\nnode_id = \"{name}\"\n\
         route_configurations = [\"shop-routes\"]\nca_file = \"ca.pem\"\n{identity}"
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, config).unwrap();
    Server::start(&file, "127.0.0.1:0", None)
}

#[test]
fn an_xds_source_follows_a_control_plane_over_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    certificates(path);
    snapshot(path, "1", "unavailable", 3);
    let tls = ["server.pem", "server.key", "ca.pem"].map(|f| path.join(f));
    let (_plane, port) = control_plane_with(path, 0, &tls);

    let server = serve(path, "with-certificate", port, true);
    acked(&server, "1");
    assert_eq!(decide(&server), "retry");
    snapshot(path, "2", "cancelled", 3);
    acked(&server, "2");
    assert_eq!(decide(&server), "cancel");

    // Without a client certificate the server refuses the handshake: never connected, and
    // the status says why.
    let refused = serve(path, "without-certificate", port, false);
    let status = wait_for("the refused stream's error", || {
        let status = xds(&refused);
        status["last_error"].is_string().then_some(status)
    });
    assert_eq!(status["connected"], false, "{status}");
    assert_eq!(status["acks"], 0, "{status}");
}
