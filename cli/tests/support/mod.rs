//! Helpers shared by the binary's integration tests.

use std::path::PathBuf;

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
