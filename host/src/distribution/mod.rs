//! Why a module of its own: a policy that a team ships the way Spin, wasmCloud and Kubewarden
//! ship components — pushed to an OCI registry, signed, pulled by every host that runs it —
//! crosses a trust boundary that a file on disk does not, and everything about that crossing
//! lives here, apart from the registry that only asks for a verified file. Components use the
//! CNCF OCI Wasm artifact layout (one `application/wasm` layer). [`push`] and [`pull`] speak the
//! distribution protocol through `oci-client` with the credential given for the registry
//! ([`RegistryCredentials`]); every pull is bounded in bytes and time (`pull`). [`push`] can add
//! the component's compiled artifact for one engine configuration as a second layer (`rebound
//! push --precompile`), and [`sign`] pushes a signature of a pushed artifact in cosign's format
//! ([`ComponentSigner`]), which a registry configured with [`TrustedKey`]s checks before a
//! component loads. What a registry fetched is kept on disk, keyed by digest (`store`).
//! Feature `oci`.

use std::collections::BTreeMap;
use std::future::Future;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer, PushResponse};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::{Client, Reference};
use sha2::{Digest, Sha256};

use crate::wasm::CompiledArtifact;

mod credentials;
mod pull;
mod signature;
mod store;

pub use credentials::{
    Credential, CredentialsError, RegistryCredentials, PASSWORD_VARIABLE, REGISTRY_VARIABLE,
    TOKEN_VARIABLE, USERNAME_VARIABLE,
};
pub use pull::{pull, COMPILED_SIZE_FACTOR, MAX_SIGNATURES, MAX_SIGNATURE_BYTES};
pub use signature::{ComponentSigner, TrustedKey};
pub(crate) use store::{install_precompiled, Fetched, OciStore};

/// The layer media type of a Wasm component (CNCF OCI Wasm artifact).
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The config media type of a Wasm artifact (CNCF OCI Wasm artifact).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a component compiled ahead of time for one engine configuration
/// (`rebound push --precompile`): a compiled artifact (`rebound::wasm::CompiledArtifact`).
pub const COMPILED_LAYER_MEDIA_TYPE: &str = "application/vnd.rebound.compiled-component.v1";
/// The annotation of a compiled layer naming the engine digest it was compiled for.
pub const ENGINE_ANNOTATION: &str = "dev.rebound.engine";
/// The older wasm-to-oci layer type, also accepted when pulling.
const LEGACY_LAYER_MEDIA_TYPE: &str = oci_client::manifest::WASM_LAYER_MEDIA_TYPE;

/// Why a component could not be pushed, pulled or resolved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// The reference is not `registry/repository:tag` (or `@sha256:…`).
    #[error("`{reference}` is not an OCI reference (expected registry/repository:tag): {message}")]
    Reference {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        message: String,
    },
    /// The registry answered with an error or could not be reached.
    #[error("{action} {reference}: {message}")]
    Registry {
        /// `cannot push` / `cannot pull`.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The client's explanation.
        message: String,
    },
    /// The registry refused access: no credential for it, or a refused one.
    #[error(
        "{action} {reference}: the registry {registry} refused access (HTTP 401/403): {credential}"
    )]
    Unauthorized {
        /// `cannot push to` / `cannot pull`.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The registry (`host[:port]`).
        registry: String,
        /// What was given for it: none found (and where it was looked for), or which was
        /// refused.
        credential: String,
    },
    /// Under a `[trust]` table, the artifact has no signature by a trusted key.
    #[error("{reference} ({digest}) is refused: {reason}; the [trust] table lets only components signed by one of its keys load")]
    Untrusted {
        /// The reference.
        reference: String,
        /// The artifact's manifest digest.
        digest: String,
        /// What is missing or wrong: every signature found and why it does not hold.
        reason: String,
    },
    /// The artifact holds no Wasm layer.
    #[error("{reference} holds no Wasm component layer (its layers: {layers})")]
    NoWasmLayer {
        /// The reference.
        reference: String,
        /// The media types of its layers.
        layers: String,
    },
    /// The pulled bytes do not have the digest they were asked for.
    #[error("{reference}: the registry sent content with sha256 {found}, expected {expected}")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// The digest asked for (hex).
        expected: String,
        /// The digest received (hex).
        found: String,
    },
    /// The registry cannot be reached and nothing is cached for the reference.
    #[error("{reference}: {cause}; no copy of it is cached in {store}, so it cannot be loaded")]
    Unavailable {
        /// The reference.
        reference: String,
        /// Why pulling failed.
        cause: String,
        /// The store looked in.
        store: String,
    },
    /// The blob is larger than its limit: refused before the download when its size was
    /// known, cut off as it arrived when not.
    #[error("{reference}: the {what} is larger than the limit of {limit} bytes{}; it is not downloaded", size.map_or_else(String::new, |size| format!(" ({size} bytes)")))]
    TooLarge {
        /// The reference.
        reference: String,
        /// What was pulled: `component`, `compiled layer`.
        what: &'static str,
        /// Its size, when the manifest or the registry's answer said it.
        size: Option<u64>,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The local store could not be written or read.
    #[error("OCI store {path}: {error}")]
    Store {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
}

/// A pushed component: where, and its digest (the `sha256` to pin it with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The manifest's URL in the registry.
    pub manifest_url: String,
    /// The component's sha256 (hex): the layer's digest.
    pub sha256: String,
    /// The compiled layer's sha256 (hex), when one was pushed: the `precompiled` pin.
    pub precompiled: Option<String>,
    /// The manifest's digest (`sha256:HEX`): what a signature signs.
    pub manifest_digest: String,
}

/// The error of `action` on `reference` that the client reported as `error`: a refusal of
/// access names the registry and the credential.
fn registry_error(
    action: &'static str,
    reference: &str,
    image: &Reference,
    credentials: &RegistryCredentials,
    error: OciDistributionError,
) -> OciError {
    let refused = match &error {
        OciDistributionError::AuthenticationFailure(_)
        | OciDistributionError::UnauthorizedError { .. } => true,
        OciDistributionError::ServerError { code, .. } => matches!(code, 401 | 403),
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|e| matches!(e.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)),
        _ => false,
    };
    if refused {
        let registry = image.resolve_registry();
        return OciError::Unauthorized {
            action,
            reference: reference.to_owned(),
            registry: registry.to_owned(),
            credential: credentials.describe(registry),
        };
    }
    OciError::Registry {
        action,
        reference: reference.to_owned(),
        message: format!("{error}"),
    }
}

fn parse(reference: &str) -> Result<Reference, OciError> {
    reference.parse().map_err(|e| OciError::Reference {
        reference: reference.to_owned(),
        message: format!("{e}"),
    })
}

/// A client speaking plain HTTP to loopback registries (a local registry, tests) and HTTPS to
/// every other.
fn client(reference: &Reference) -> Client {
    let registry = reference.resolve_registry().to_owned();
    let loopback = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .any(|host| registry == *host || registry.starts_with(&format!("{host}:")));
    let protocol = if loopback {
        ClientProtocol::HttpsExcept(vec![registry])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        ..ClientConfig::default()
    })
}

/// Runs `future` to completion on a runtime of its own, on a thread of its own, so it can be
/// called from synchronous code and from inside another runtime alike.
fn block_on<T: Send>(future: impl Future<Output = T> + Send) -> T {
    // rustls needs a process-wide crypto provider; installing it twice is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime for the OCI client")
                    .block_on(future)
            })
            .join()
            .expect("the OCI client thread")
    })
}

/// Pushes the component `bytes` to `reference` as a CNCF OCI Wasm artifact, with `compiled`
/// (its artifact for one engine configuration) as a second layer when given.
pub fn push(
    bytes: &[u8],
    reference: &str,
    compiled: Option<&CompiledArtifact>,
    credentials: &RegistryCredentials,
) -> Result<Pushed, OciError> {
    let image = parse(reference)?;
    let mut layers = vec![ImageLayer::new(
        bytes.to_vec(),
        WASM_LAYER_MEDIA_TYPE.to_owned(),
        None,
    )];
    if let Some(compiled) = compiled {
        layers.push(ImageLayer::new(
            compiled.bytes().to_vec(),
            COMPILED_LAYER_MEDIA_TYPE.to_owned(),
            Some(BTreeMap::from([(
                ENGINE_ANNOTATION.to_owned(),
                compiled.engine_digest(),
            )])),
        ));
    }
    let config = Config::new(
        br#"{"architecture":"wasm","os":"wasip2","layerDigests":[]}"#.to_vec(),
        WASM_CONFIG_MEDIA_TYPE.to_owned(),
        None,
    );
    let pushed = push_manifest(&image, &layers, config, &image, credentials)
        .map_err(|e| registry_error("cannot push to", reference, &image, credentials, e))?;
    let manifest_digest = (pushed.manifest_url.rsplit('/').next())
        .filter(|digest| digest.starts_with("sha256:"))
        .ok_or_else(|| OciError::Registry {
            action: "cannot push to",
            reference: reference.to_owned(),
            message: format!(
                "the registry answered the manifest's URL {} without its digest",
                pushed.manifest_url
            ),
        })?
        .to_owned();
    Ok(Pushed {
        manifest_digest,
        manifest_url: pushed.manifest_url,
        sha256: hex::encode(Sha256::digest(bytes)),
        precompiled: compiled.map(|compiled| hex::encode(Sha256::digest(compiled.bytes()))),
    })
}

/// Signs the artifact of `reference`'s repository whose manifest digest is `digest` with
/// `signer`: pushes its signature as cosign does (`signature`), replacing any signature
/// pushed before for that digest. Returns the signature's reference.
pub fn sign(
    reference: &str,
    digest: &str,
    signer: &ComponentSigner,
    credentials: &RegistryCredentials,
) -> Result<String, OciError> {
    let image = parse(reference)?;
    let signature_image = Reference::with_tag(
        image.registry().to_owned(),
        image.repository().to_owned(),
        signature::signature_tag(digest),
    );
    let repository = format!("{}/{}", image.registry(), image.repository());
    let payload = signature::payload(&repository, digest);
    let annotations = BTreeMap::from([(
        signature::SIGNATURE_ANNOTATION.to_owned(),
        signer.sign(&payload),
    )]);
    let diff_id = format!("sha256:{}", hex::encode(Sha256::digest(&payload)));
    let layers = [ImageLayer::new(
        payload,
        signature::SIGNATURE_LAYER_MEDIA_TYPE.to_owned(),
        Some(annotations),
    )];
    let config = Config::new(
        serde_json::to_vec(&serde_json::json!({
            "architecture": "", "os": "", "config": {},
            "rootfs": { "type": "layers", "diff_ids": [diff_id] },
        }))
        .expect("a JSON value serialises"),
        oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE.to_owned(),
        None,
    );
    push_manifest(&signature_image, &layers, config, &image, credentials)
        .map_err(|e| registry_error("cannot sign", reference, &image, credentials, e))?;
    Ok(signature_image.whole())
}

/// Pushes `layers` and `config` to `target` under one manifest, authenticated with the
/// credentials `credentials` hold for `image`'s registry.
fn push_manifest(
    target: &Reference,
    layers: &[ImageLayer],
    config: Config,
    image: &Reference,
    credentials: &RegistryCredentials,
) -> Result<PushResponse, OciDistributionError> {
    let manifest = OciImageManifest::build(layers, &config, None);
    block_on(async {
        client(target)
            .push(
                target,
                layers,
                config,
                &credentials.auth(image.resolve_registry()),
                Some(manifest),
            )
            .await
    })
}

/// The component layer of `manifest`.
fn wasm_layer<'m>(
    reference: &str,
    manifest: &'m OciImageManifest,
) -> Result<&'m OciDescriptor, OciError> {
    (manifest.layers.iter())
        .find(|l| l.media_type == WASM_LAYER_MEDIA_TYPE || l.media_type == LEGACY_LAYER_MEDIA_TYPE)
        .ok_or_else(|| OciError::NoWasmLayer {
            reference: reference.to_owned(),
            layers: (manifest.layers.iter())
                .map(|l| l.media_type.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Checks that `bytes` have the sha256 `expected` (hex).
fn check(reference: &str, bytes: &[u8], expected: &str) -> Result<(), OciError> {
    let found = hex::encode(Sha256::digest(bytes));
    if found != expected {
        return Err(OciError::DigestMismatch {
            reference: reference.to_owned(),
            expected: expected.to_owned(),
            found,
        });
    }
    Ok(())
}
