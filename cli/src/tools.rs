//! Where `rebound build` and `rebound doctor` find a language's tools: first in the project's
//! own `node_modules/.bin` (where `npm install` puts the tools a JavaScript or TypeScript
//! project pins, as `npx` finds them), then on PATH, then in the directory the project's
//! installer fills — `$REBOUND_TOOLS` when set, else the `.tools/bin` of the Rebound checkout
//! this binary was built from (`scripts/polyglot-toolchain.sh` and `scripts/guest-toolchain.sh`
//! link every tool there), when it exists.

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

/// Where a project's own npm tools are.
fn project_bin(project: &Path) -> PathBuf {
    project.join("node_modules/.bin")
}

/// The directories searched for `project`'s tools, in order: its `node_modules/.bin`, PATH's,
/// then the installer's.
fn search_dirs(project: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![project_bin(project)];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.extend(installed_dir());
    dirs
}

/// `program` for the project in `project` (or as given, when it is a path).
pub fn find(program: &str, project: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| program.into());
    }
    search_dirs(project)
        .into_iter()
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// The directories [`find`] searches, as a PATH for the tools' own children (a tool that runs
/// another finds it where `rebound` did).
pub fn child_path(project: &Path) -> OsString {
    std::env::join_paths(search_dirs(project)).unwrap_or_default()
}

/// Where [`find`] looked for `project`'s tools, for a message.
pub fn looked(project: &Path) -> String {
    let local = project_bin(project);
    match installed_dir() {
        Some(dir) => format!("in {}, on PATH and in {}", local.display(), dir.display()),
        None => format!(
            "in {} and on PATH (set REBOUND_TOOLS to the directory a Rebound checkout's \
             scripts/polyglot-toolchain.sh filled)",
            local.display()
        ),
    }
}
