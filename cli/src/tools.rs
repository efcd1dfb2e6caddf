//! Where `rebound build` and `rebound doctor` find a language's tools: on PATH, then in the
//! directory the project's installer fills — `$REBOUND_TOOLS` when set, else the `.tools/bin`
//! of the Rebound checkout this binary was built from (`scripts/polyglot-toolchain.sh` and
//! `scripts/guest-toolchain.sh` link every tool there), when it exists.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The installer's directory: `$REBOUND_TOOLS`, else the checkout's `.tools/bin` if present.
pub fn installed_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("REBOUND_TOOLS") {
        return Some(PathBuf::from(dir));
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/bin");
    checkout
        .is_dir()
        .then(|| checkout.canonicalize().unwrap_or(checkout))
}

/// The directories searched, in order: PATH's, then the installer's.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    dirs.extend(installed_dir());
    dirs
}

/// `program` on PATH or in the installer's directory (or as given, when it is a path).
pub fn find(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| program.into());
    }
    search_dirs()
        .into_iter()
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// PATH with the installer's directory after it, for the tools' own children (a tool that
/// runs another finds it where `rebound` did).
pub fn child_path() -> OsString {
    std::env::join_paths(search_dirs()).unwrap_or_default()
}

/// Where [`find`] looked, for a message: "on PATH and in DIR", or "on PATH".
pub fn looked() -> String {
    match installed_dir() {
        Some(dir) => format!("on PATH and in {}", dir.display()),
        None => "on PATH (set REBOUND_TOOLS to the directory a Rebound checkout's \
                 scripts/polyglot-toolchain.sh filled)"
            .to_owned(),
    }
}
