//! Loading a policy component: compile once, check the world, the package version and the
//! imports against what the host grants, and pre-instantiate.

use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::engine_error::EngineError;
use super::cache::ArtifactCache;
use super::metadata::PolicyMetadata;
use super::runtime::WasmRuntime;
use super::wasi;
use super::world::{WitVersion, WorldPre};

/// The newest WIT package (and version) this host implements; components built for every
/// earlier released version load too ([`WitVersion::ALL`]).
pub const HOST_PACKAGE: &str = WitVersion::CURRENT.package();
const PACKAGE_PREFIX: &str = "rebound:policy/";
const EXPORTED_INTERFACE: &str = "strategy";

/// What each version grants, for error messages: `0.1.0: types, host; 0.2.0: …`.
fn granted_by_version() -> String {
    let versions: Vec<String> = WitVersion::ALL
        .iter()
        .map(|v| format!("{}: {}", v.number(), v.granted_interfaces().join(", ")))
        .collect();
    versions.join("; ")
}

/// The versions this host loads, for error messages: `0.1.0, 0.2.0, 0.3.0`.
fn loadable_versions() -> String {
    let numbers: Vec<&str> = WitVersion::ALL.iter().map(|v| v.number()).collect();
    numbers.join(", ")
}

/// Why a component could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read policy file {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// Not a valid component (or not one wasmtime can compile).
    #[error("policy `{policy}` is not a valid WebAssembly component: {message}")]
    Compile {
        /// The policy.
        policy: String,
        /// wasmtime's explanation.
        message: String,
    },
    /// The component imports what the host does not grant.
    #[error("policy `{policy}` imports what the host does not grant: {}; a policy may import only the {PACKAGE_PREFIX} interfaces of the version it was built for ({}) and the inert WASI 0.2 interfaces (io, clocks, random, cli, filesystem, sockets)", .imports.join(", "), granted_by_version())]
    ForbiddenImports {
        /// The policy.
        policy: String,
        /// The imports that are not granted.
        imports: Vec<String>,
    },
    /// The component was built against a version of the WIT package this host does not load,
    /// or mixes versions.
    #[error("policy `{policy}` was built for {found}; this host loads rebound:policy {} (one version per component): incompatible package version", loadable_versions())]
    IncompatibleVersion {
        /// The policy.
        policy: String,
        /// The import or export with the other version.
        found: String,
    },
    /// The component's metadata section (`rebound:policy`) cannot be read.
    #[error("policy `{policy}` has an unreadable metadata section: {message}")]
    Metadata {
        /// The policy.
        policy: String,
        /// What is wrong with it.
        message: String,
    },
    /// The component does not export the strategy interface.
    #[error("policy `{policy}` is not a rebound:policy/retry-policy component: it does not export {PACKAGE_PREFIX}{EXPORTED_INTERFACE} of version {} (its exports: [{}])", loadable_versions(), .exports.join(", "))]
    WrongWorld {
        /// The policy.
        policy: String,
        /// What it exports.
        exports: Vec<String>,
    },
    /// The exports or imports have the right names but the wrong types.
    #[error("policy `{policy}` does not match {version}: {message}")]
    Mismatch {
        /// The policy.
        policy: String,
        /// The version of `rebound:policy` it names.
        version: WitVersion,
        /// wasmtime's explanation.
        message: String,
    },
    /// The policy rejected its configuration parameters, or failed while configuring.
    #[error("policy `{policy}` failed to configure: {message}")]
    Configure {
        /// The policy.
        policy: String,
        /// The policy's error or the failure.
        message: String,
    },
}

/// The metadata section of policy `name`'s component `bytes`, if it has one.
pub(crate) fn read_metadata(name: &str, bytes: &[u8]) -> Result<Option<PolicyMetadata>, LoadError> {
    PolicyMetadata::from_component(bytes).map_err(|error| LoadError::Metadata {
        policy: name.to_owned(),
        message: error.to_string(),
    })
}

/// Splits `rebound:policy/NAME@VERSION` into (NAME, VERSION).
fn ours(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(PACKAGE_PREFIX)?.split_once('@')
}

/// How a component's machine code was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeOrigin {
    /// Compiled by cranelift on load.
    Compiled,
    /// Read from the compiled-artifact cache.
    Cached,
}

/// A component's machine code, compiled or read from the cache, not yet checked against the
/// host's world.
#[derive(Clone)]
pub(crate) struct MachineCode {
    component: Component,
    origin: CodeOrigin,
}

impl MachineCode {
    /// Reads the machine code of `bytes` (whose sha256 is `sha256`) from `cache`, or compiles
    /// it and stores it there. The error is wasmtime's explanation.
    pub(crate) fn obtain(
        runtime: &WasmRuntime,
        bytes: &[u8],
        sha256: &[u8; 32],
        cache: Option<&ArtifactCache>,
    ) -> Result<Self, EngineError> {
        let engine = runtime.engine();
        // The cache holds the machine code of the runtime's main engine only: a component that
        // imports WASI 0.3 is compiled for the concurrent one, on every load.
        let concurrent = super::wasi::imports_wasi_0_3(bytes);
        let cache = cache.filter(|_| !concurrent);
        if let Some(component) = cache.and_then(|cache| cache.get(engine, sha256)) {
            return Ok(MachineCode {
                component,
                origin: CodeOrigin::Cached,
            });
        }
        let component = runtime.compile(bytes, concurrent)?;
        if let Some(cache) = cache {
            cache.put(sha256, &component);
        }
        Ok(MachineCode {
            component,
            origin: CodeOrigin::Compiled,
        })
    }
}

/// A compiled, checked, pre-instantiated policy component.
#[derive(Clone)]
pub struct PolicyPre {
    name: String,
    version: String,
    sha256: [u8; 32],
    origin: CodeOrigin,
    imports: std::sync::Arc<[String]>,
    wit_version: WitVersion,
    metadata: Option<std::sync::Arc<PolicyMetadata>>,
    pre: WorldPre,
    runtime: WasmRuntime,
}

impl std::fmt::Debug for PolicyPre {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyPre")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl LoadError {
    /// Why `bytes` (policy `name`) did not compile, in one line: a file that is not WebAssembly
    /// or is a core module says so; otherwise wasmtime's explanation, its lines joined.
    pub(crate) fn compile(name: &str, bytes: &[u8], error: &EngineError) -> LoadError {
        let message = if !bytes.starts_with(b"\0asm") {
            let start: String = String::from_utf8_lossy(&bytes[..bytes.len().min(8)])
                .chars()
                .map(|c| if c.is_control() { '.' } else { c })
                .collect();
            format!("not a WebAssembly file: it does not start with `\\0asm` (it starts with `{start}`)")
        } else if bytes.get(4..8) == Some(&[1, 0, 0, 0]) {
            "a core WebAssembly module, not a component: make one with `wasm-tools component new`"
                .to_owned()
        } else {
            error.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
        };
        LoadError::Compile {
            policy: name.to_owned(),
            message,
        }
    }
}

impl PolicyPre {
    /// Loads the component file at `path` as policy `name`.
    pub fn load_file(runtime: &WasmRuntime, name: &str, path: &Path) -> Result<Self, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.display().to_string(),
            error: source,
        })?;
        Self::load(runtime, name, &bytes)
    }

    /// Compiles and checks `bytes` as policy `name`.
    pub fn load(runtime: &WasmRuntime, name: &str, bytes: &[u8]) -> Result<Self, LoadError> {
        Self::load_cached(runtime, name, bytes, None)
    }

    /// Checks `bytes` as policy `name`, taking its machine code from `cache` when an entry
    /// exists and compiling (then storing it there) otherwise.
    pub fn load_cached(
        runtime: &WasmRuntime,
        name: &str,
        bytes: &[u8],
        cache: Option<&ArtifactCache>,
    ) -> Result<Self, LoadError> {
        let sha256: [u8; 32] = Sha256::digest(bytes).into();
        let code = MachineCode::obtain(runtime, bytes, &sha256, cache)
            .map_err(|error| LoadError::compile(name, bytes, &error))?;
        let metadata = read_metadata(name, bytes)?;
        Self::from_machine_code(runtime, name, sha256, metadata, code)
    }

    /// Checks already compiled `code` (of a component whose bytes hash to `sha256` and carry
    /// `metadata`) as policy `name` and pre-instantiates it.
    pub(crate) fn from_machine_code(
        runtime: &WasmRuntime,
        name: &str,
        sha256: [u8; 32],
        metadata: Option<PolicyMetadata>,
        code: MachineCode,
    ) -> Result<Self, LoadError> {
        let policy = name.to_owned();
        let MachineCode { component, origin } = code;
        let engine = component.engine();
        let ty = component.component_type();

        let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_owned()).collect();
        let exported = exports
            .iter()
            .find(|e| ours(e).is_some_and(|(iface, _)| iface == EXPORTED_INTERFACE));
        let wit_version = match exported {
            Some(exported) => Some(
                ours(exported)
                    .and_then(|(_, number)| WitVersion::from_number(number))
                    .ok_or_else(|| LoadError::IncompatibleVersion {
                        policy: policy.clone(),
                        found: exported.clone(),
                    })?,
            ),
            None => None,
        };

        let mut forbidden = Vec::new();
        let mut imports_wasi = false;
        let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_owned()).collect();
        for import in imports.iter().map(String::as_str) {
            let Some((iface, number)) = ours(import) else {
                match wasi::is_granted(import) {
                    true => imports_wasi = true,
                    false => forbidden.push(import.to_owned()),
                }
                continue;
            };
            let granted_by = WitVersion::from_number(number)
                .filter(|version| version.granted_interfaces().contains(&iface));
            match (granted_by, wit_version, exported) {
                (None, _, _) => forbidden.push(import.to_owned()),
                (Some(found), Some(built_for), Some(exported)) if found != built_for => {
                    return Err(LoadError::IncompatibleVersion {
                        policy,
                        found: format!("{import} next to {exported}"),
                    })
                }
                (Some(_), _, _) => {}
            }
        }
        if !forbidden.is_empty() {
            return Err(LoadError::ForbiddenImports {
                policy,
                imports: forbidden,
            });
        }
        let Some(wit_version) = wit_version else {
            return Err(LoadError::WrongWorld { policy, exports });
        };

        let pre = WorldPre::new(wit_version, &component, imports_wasi).map_err(|e| {
            LoadError::Mismatch {
                policy: name.to_owned(),
                version: wit_version,
                message: format!("{e:#}"),
            }
        })?;
        let version = hex::encode(&sha256[..6]);
        Ok(PolicyPre {
            name: policy,
            version,
            sha256,
            origin,
            imports: imports.into(),
            wit_version,
            metadata: metadata.map(std::sync::Arc::new),
            pre,
            runtime: runtime.clone(),
        })
    }

    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version: the first 12 hex digits of the component's sha256.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The sha256 of the component's bytes.
    pub fn sha256(&self) -> &[u8; 32] {
        &self.sha256
    }

    /// What the component imports: `rebound:policy` interfaces and inert WASI ones, all
    /// granted (a component importing anything else does not load).
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The version of `rebound:policy` the component was built for.
    pub fn wit_version(&self) -> WitVersion {
        self.wit_version
    }

    /// Whether it hedges: built for the world `hedging-policy` (`rebound:policy@0.5.0` on), it
    /// exports `hedging`.
    pub fn hedges(&self) -> bool {
        self.pre.hedges()
    }

    /// What the policy says about itself (its `rebound:policy` section), if its build wrote it.
    pub fn metadata(&self) -> Option<&PolicyMetadata> {
        self.metadata.as_deref()
    }

    /// Whether the machine code was compiled on load or read from the cache.
    pub fn origin(&self) -> CodeOrigin {
        self.origin
    }

    pub(crate) fn pre(&self) -> &WorldPre {
        &self.pre
    }

    pub(crate) fn runtime(&self) -> &WasmRuntime {
        &self.runtime
    }
}
