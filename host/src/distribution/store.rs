//! Components pulled from OCI registries, on disk for the policy registry: `resolve` gives a
//! local file for `component = { oci = "host/repo:tag", sha256 = "…" }`, kept in the artifact
//! cache's directory (`oci/`): a pinned digest is fetched by digest (the tag is not consulted)
//! and read from the store without the network once there; an unpinned tag is resolved at load
//! and at each explicit reload, and when the registry cannot be reached the copy last pulled
//! for it serves, with a warning. Under a `[trust]` table `resolve_trusted` loads a component
//! only when the registry gives a signature by a trusted key for its manifest, at every load.
//! `install_precompiled` makes a pinned compiled layer (`rebound push --precompile`) the
//! artifact cache's entry, when it was compiled from that component for the host's engine and,
//! under `[trust]`, is a layer of the signed artifact. Every pull is bounded (`oci/pull.rs`).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::credentials::RegistryCredentials;
use super::pull::{
    pull, pull_pinned, pull_within, verify_signature, PullError, COMPILED_SIZE_FACTOR,
};
use super::signature::TrustedKey;
use super::{block_on, check, client, parse, registry_error, wasm_layer, OciError};
use crate::wasm::ArtifactCache;

/// Makes the compiled artifact `sha256:{pin}` of `reference`'s repository (pushed by `rebound
/// push --precompile`) `cache`'s entry for the component in the file `component`, unless the
/// cache has one: fetched by that digest (at most [`COMPILED_SIZE_FACTOR`] times
/// `component_limit`), and installed only when it was compiled from this component for the
/// cache's engine (`ArtifactCache::install`), and, under a `[trust]` table, only when it is a
/// layer of the signed artifact (`signed`: that artifact's layer digests). An artifact that
/// cannot be fetched or is refused is logged, and the component is compiled as without it.
pub(crate) fn install_precompiled(
    policy: &str,
    cache: &ArtifactCache,
    fetched: &Fetched,
    reference: &str,
    pin: &str,
    credentials: &RegistryCredentials,
    component_limit: u64,
) {
    // A component that cannot be read fails its load, which says why.
    let Ok(bytes) = std::fs::read(&fetched.path) else {
        return;
    };
    let sha256: [u8; 32] = Sha256::digest(&bytes).into();
    if cache.entry_path(&sha256).is_file() {
        return;
    }
    let unsigned = (fetched.signed_layers.as_ref())
        .is_some_and(|layers| !layers.iter().any(|layer| layer == &format!("sha256:{pin}")));
    let installed = if unsigned {
        Err("it is not a layer of the signed artifact, and the [trust] table lets only signed code load".to_owned())
    } else {
        let limit = component_limit.saturating_mul(COMPILED_SIZE_FACTOR);
        pull_pinned(reference, pin, credentials, "compiled layer", limit)
            .map_err(|e| e.to_string())
            .and_then(|artifact| cache.install(&sha256, &artifact))
    };
    match installed {
        Ok(()) => tracing::info!(
            policy,
            reference,
            precompiled = pin,
            "the precompiled artifact is installed: the component loads without compiling"
        ),
        Err(why) => tracing::warn!(
            policy,
            reference,
            precompiled = pin,
            why,
            "the precompiled artifact is not used; compiling the component"
        ),
    }
}

/// A component on disk, and under a `[trust]` table the digests of the signed artifact's
/// layers.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    /// The component file.
    pub(crate) path: PathBuf,
    /// The layers of the artifact whose signature was verified; `None` without `[trust]`.
    pub(crate) signed_layers: Option<Vec<String>>,
}

/// Pulled components on disk: `blobs/HEX.wasm` by content digest, and `tags/REF` holding the
/// digest last pulled for an unpinned reference.
#[derive(Debug, Clone)]
pub(crate) struct OciStore {
    dir: PathBuf,
}

impl OciStore {
    /// The store under the artifact cache directory `cache_dir`.
    pub(crate) fn new(cache_dir: &Path) -> Self {
        OciStore {
            dir: cache_dir.join("oci"),
        }
    }

    fn blob(&self, sha256: &str) -> PathBuf {
        self.dir.join("blobs").join(format!("{sha256}.wasm"))
    }

    fn tag(&self, reference: &str) -> PathBuf {
        let name: String = reference
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join("tags").join(name)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), OciError> {
        let io = |source| OciError::Store {
            path: path.display().to_string(),
            error: source,
        };
        std::fs::create_dir_all(path.parent().expect("a store path has a parent")).map_err(io)?;
        let partial = path.with_extension("partial");
        std::fs::write(&partial, bytes).map_err(io)?;
        std::fs::rename(&partial, path).map_err(io)
    }

    /// The cached blob with digest `sha256`, if it is there and intact.
    fn cached(&self, sha256: &str) -> Option<PathBuf> {
        let path = self.blob(sha256);
        let bytes = std::fs::read(&path).ok()?;
        (hex::encode(Sha256::digest(&bytes)) == sha256).then_some(path)
    }

    /// A local file holding the component `reference` names (see the module docs), pulled
    /// at most `limit` bytes.
    pub(crate) fn resolve(
        &self,
        reference: &str,
        pinned: Option<&str>,
        credentials: &RegistryCredentials,
        limit: u64,
    ) -> Result<PathBuf, OciError> {
        if let Some(pin) = pinned {
            if let Some(path) = self.cached(pin) {
                return Ok(path);
            }
            return match pull_pinned(reference, pin, credentials, "component", limit) {
                Ok(bytes) => {
                    let path = self.blob(pin);
                    self.write(&path, &bytes)?;
                    Ok(path)
                }
                Err(error @ (OciError::DigestMismatch { .. } | OciError::TooLarge { .. })) => {
                    Err(error)
                }
                Err(error) => Err(self.unavailable(reference, error)),
            };
        }
        match pull(reference, credentials, limit) {
            Ok(bytes) => {
                let sha256 = hex::encode(Sha256::digest(&bytes));
                let path = self.blob(&sha256);
                self.write(&path, &bytes)?;
                self.write(&self.tag(reference), sha256.as_bytes())?;
                Ok(path)
            }
            Err(error @ OciError::Registry { .. }) => {
                let cached = std::fs::read_to_string(self.tag(reference))
                    .ok()
                    .and_then(|sha256| self.cached(sha256.trim()));
                match cached {
                    Some(path) => {
                        tracing::warn!(reference, %error,
                            "registry unreachable: the copy last pulled for this tag serves");
                        Ok(path)
                    }
                    None => Err(self.unavailable(reference, error)),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// A local file holding the component `reference` names, under a `[trust]` table: the
    /// registry is asked for the artifact's manifest and its signatures at every load, and a
    /// signature by one of `keys` must hold for that manifest, or nothing loads (not even a
    /// stored copy: verification fails closed). With `pinned`, the manifest must also hold
    /// that component. The component is pulled, at most `limit` bytes, only once the
    /// signature holds.
    pub(crate) fn resolve_trusted(
        &self,
        reference: &str,
        pinned: Option<&str>,
        keys: &[TrustedKey],
        credentials: &RegistryCredentials,
        limit: u64,
    ) -> Result<Fetched, OciError> {
        let image = parse(reference)?;
        let error = |e| registry_error("cannot pull", reference, &image, credentials, e);
        let untrusted = |digest: &str, reason: String| OciError::Untrusted {
            reference: reference.to_owned(),
            digest: digest.to_owned(),
            reason,
        };
        let (sha256, pulled, signed_layers) = block_on(async {
            let client = client(&image);
            let auth = credentials.auth(image.resolve_registry());
            let (manifest, digest) = client
                .pull_image_manifest(&image, &auth)
                .await
                .map_err(error)?;
            let key = verify_signature(&client, &image, &digest, keys, &auth)
                .await
                .map_err(|reason| untrusted(&digest, reason))?;
            let layer = wasm_layer(reference, &manifest)?;
            let sha256 = layer.digest.trim_start_matches("sha256:").to_owned();
            if let Some(pin) = pinned.filter(|pin| *pin != sha256) {
                return Err(untrusted(
                    &digest,
                    format!("it holds the component sha256:{sha256}, not the pinned sha256:{pin}; pin its manifest (`@{digest}`) or its new sha256"),
                ));
            }
            tracing::debug!(reference, digest, key = %key.display(), "signature verified");
            let signed: Vec<String> = manifest.layers.iter().map(|l| l.digest.clone()).collect();
            if self.cached(&sha256).is_some() {
                return Ok((sha256, None, signed));
            }
            let bytes = pull_within(&client, &image, layer, Some(layer.size), limit)
                .await
                .map_err(|e| match e {
                    PullError::Registry(e) => error(e),
                    PullError::TooLarge { size } => OciError::TooLarge {
                        reference: reference.to_owned(),
                        what: "component",
                        size,
                        limit,
                    },
                })?;
            check(reference, &bytes, &sha256)?;
            Ok((sha256, Some(bytes), signed))
        })?;
        let path = self.blob(&sha256);
        if let Some(bytes) = pulled {
            self.write(&path, &bytes)?;
        }
        Ok(Fetched {
            path,
            signed_layers: Some(signed_layers),
        })
    }

    fn unavailable(&self, reference: &str, cause: OciError) -> OciError {
        OciError::Unavailable {
            reference: reference.to_owned(),
            cause: cause.to_string(),
            store: self.dir.display().to_string(),
        }
    }
}
