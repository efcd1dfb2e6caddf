//! The compiled-artifact file: a component's machine code bound to the component it was
//! compiled from and the engine configuration it was compiled for. The artifact cache keeps
//! its entries in this form, and `rebound push --precompile` ships one beside a component in
//! an OCI registry.
//!
//! The file is a magic line, the component's sha256, the engine's digest (the sha256 of its
//! compatibility hash: the wasmtime version, the target, the compiler flags and every setting
//! compilation depends on), a sha256 over the magic line, those two and the payload, then
//! wasmtime's serialised component (the payload).

use std::hash::{Hash, Hasher};
use std::io::Write;

use sha2::{Digest, Sha256};
use wasmtime::Engine;

use super::compiler::EngineSettings;
use super::engine_error::EngineError;

/// The first line of every artifact of this format.
pub(super) const MAGIC: &[u8] = b"rebound-artifact-v3\n";
/// The start shared by every version of the format.
const MAGIC_FAMILY: &[u8] = b"rebound-artifact-";
/// After the magic line: the component's sha256, the engine's digest, then the sha256 of the
/// magic line, those two and the payload.
const HEADER_LEN: usize = 32 + 32 + 32;

/// Feeds a `Hash` implementation into sha256, so the engine's digest is the same in every
/// process.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        unreachable!("only the digest is read")
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// The digest of `engine`'s compatibility hash: equal for two engines whose machine code is
/// interchangeable.
pub(super) fn engine_digest(engine: &Engine) -> [u8; 32] {
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.finalize().into()
}

/// The sha256 an artifact carries: over the magic line, the binding and the payload.
fn artifact_digest(component_sha256: &[u8; 32], engine: &[u8; 32], payload: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(MAGIC);
    hasher.update(component_sha256);
    hasher.update(engine);
    hasher.update(payload);
    hasher.finalize().into()
}

/// Writes the artifact of `payload` (wasmtime's serialised component), compiled from the
/// component whose sha256 is `component_sha256` for the engine whose digest is `engine`.
pub(super) fn write(
    out: &mut impl Write,
    component_sha256: &[u8; 32],
    engine: &[u8; 32],
    payload: &[u8],
) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(component_sha256)?;
    out.write_all(engine)?;
    out.write_all(&artifact_digest(component_sha256, engine, payload))?;
    out.write_all(payload)
}

/// The payload of `bytes` if it is an intact artifact compiled from the component whose
/// sha256 is `component_sha256` for the engine whose digest is `engine`; otherwise why not.
pub(super) fn payload<'a>(
    bytes: &'a [u8],
    component_sha256: &[u8; 32],
    engine: &[u8; 32],
) -> Result<&'a [u8], &'static str> {
    let Some((header, payload)) = bytes
        .strip_prefix(MAGIC)
        .filter(|rest| rest.len() > HEADER_LEN)
        .map(|rest| rest.split_at(HEADER_LEN))
    else {
        return Err(
            if bytes.starts_with(MAGIC_FAMILY) && !bytes.starts_with(MAGIC) {
                "written by another version of rebound"
            } else {
                "corrupt (not a compiled artifact, or truncated)"
            },
        );
    };
    let (bound_component, rest) = header.split_at(32);
    let (bound_engine, digest) = rest.split_at(32);
    if bound_component != component_sha256 {
        return Err("compiled from another component");
    }
    if bound_engine != engine {
        return Err("compiled for another engine configuration");
    }
    if digest != artifact_digest(component_sha256, engine, payload) {
        return Err("corrupt (sha256 mismatch)");
    }
    Ok(payload)
}

/// A component compiled ahead of time for an engine configuration, in the artifact format:
/// what `rebound push --precompile` ships beside the component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledArtifact {
    bytes: Vec<u8>,
    engine: [u8; 32],
}

impl CompiledArtifact {
    /// Compiles `component` for an engine with `settings` (the settings a host's
    /// configuration gives its engine), with the component model's concurrency if it imports
    /// WASI 0.3, as a host compiles it. The error is wasmtime's explanation.
    pub fn compile(settings: &EngineSettings, component: &[u8]) -> Result<Self, EngineError> {
        let settings = match super::wasi::imports_wasi_0_3(component) {
            true => settings.with_concurrency(),
            false => *settings,
        };
        let engine = Engine::new(&settings.config()).map_err(|e| EngineError::of(&e))?;
        let payload = engine
            .precompile_component(component)
            .map_err(|e| EngineError::of(&e))?;
        let engine = engine_digest(&engine);
        let mut bytes = Vec::with_capacity(MAGIC.len() + HEADER_LEN + payload.len());
        let component_sha256: [u8; 32] = Sha256::digest(component).into();
        write(&mut bytes, &component_sha256, &engine, &payload)
            .expect("writing into memory cannot fail");
        Ok(CompiledArtifact { bytes, engine })
    }

    /// The artifact's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The digest of the engine configuration it was compiled for, in hex: a host uses the
    /// artifact only when its own engine has this digest.
    pub fn engine_digest(&self) -> String {
        hex::encode(self.engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPONENT: [u8; 32] = [1; 32];
    const ENGINE: [u8; 32] = [2; 32];

    fn artifact(payload: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        write(&mut bytes, &COMPONENT, &ENGINE, payload).unwrap();
        bytes
    }

    /// docs/registry.md "Precompiled components": an artifact is used only for the component
    /// and the engine it is bound to, and only intact.
    #[test]
    fn an_artifact_serves_only_its_component_and_engine_intact() {
        let bytes = artifact(b"machine code");
        assert_eq!(
            payload(&bytes, &COMPONENT, &ENGINE),
            Ok(&b"machine code"[..])
        );
        assert_eq!(
            payload(&bytes, &[3; 32], &ENGINE),
            Err("compiled from another component")
        );
        assert_eq!(
            payload(&bytes, &COMPONENT, &[3; 32]),
            Err("compiled for another engine configuration")
        );
        let mut damaged = bytes.clone();
        *damaged.last_mut().unwrap() ^= 1;
        assert_eq!(
            payload(&damaged, &COMPONENT, &ENGINE),
            Err("corrupt (sha256 mismatch)")
        );
        assert_eq!(
            payload(&bytes[..MAGIC.len() + HEADER_LEN], &COMPONENT, &ENGINE),
            Err("corrupt (not a compiled artifact, or truncated)")
        );
        let mut older = bytes;
        older[MAGIC.len() - 2] = b'2';
        assert_eq!(
            payload(&older, &COMPONENT, &ENGINE),
            Err("written by another version of rebound")
        );
    }
}
