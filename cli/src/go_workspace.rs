//! The Go workspace a Go policy builds in: the policy's own module (the package
//! `wit_component/export_rebound_policy_strategy` the generated bindings call), the bindings
//! wit-bindgen writes into `gen/` (module `wit_component`), and `witpkg/`, this project's
//! implementation of the part of `go.bytecodealliance.org/pkg` the bindings import (that module
//! comes only from the Go module proxy), tied together by a `go.work`. Also the WASI preview-1
//! adapter the component is made with.

use std::path::{Path, PathBuf};

use anyhow::Context;
use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;

use crate::project::GO_ADAPTER;

/// The files of the workspace besides the policy's source, relative to its root.
pub fn files() -> Vec<(PathBuf, String)> {
    let witpkg = [
        ("go.mod", include_str!("../templates/go-witpkg/go.mod")),
        (
            "wit/types/types.go",
            include_str!("../templates/go-witpkg/wit/types/types.go"),
        ),
        (
            "wit/runtime/runtime.go",
            include_str!("../templates/go-witpkg/wit/runtime/runtime.go"),
        ),
    ];
    let mut files = vec![
        (
            PathBuf::from("go.mod"),
            "module wit_component/export_rebound_policy_strategy\n\ngo 1.25\n".to_owned(),
        ),
        (
            PathBuf::from("go.work"),
            "go 1.25\n\nuse (\n\t.\n\t./gen\n\t./witpkg\n)\n".to_owned(),
        ),
    ];
    files.extend(witpkg.map(|(path, text)| (Path::new("witpkg").join(path), text.to_owned())));
    files
}

/// Writes the workspace into `root` around `source` (a single policy file, copied in as
/// `policy.go`).
pub fn write(root: &Path, source: &Path) -> anyhow::Result<()> {
    for (path, text) in files() {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a file in a directory"))?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    std::fs::copy(source, root.join("policy.go"))
        .with_context(|| format!("cannot read {}", source.display()))?;
    Ok(())
}

/// Writes the WASI preview-1 adapter into `gen`.
pub fn write_adapter(gen: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(gen).with_context(|| format!("cannot create {}", gen.display()))?;
    let path = gen.join(GO_ADAPTER);
    std::fs::write(&path, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER)
        .with_context(|| format!("cannot write {}", path.display()))
}
