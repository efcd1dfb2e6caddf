//! A registry is a remote party, and what it serves is read into memory and written to disk:
//! so every blob is pulled within a limit known before the download starts. A size the
//! manifest gives past the limit is refused before anything is fetched; a registry whose
//! bytes run past the limit anyway (no size, or a wrong one) is cut off as they arrive. A
//! component is held to `[engine] max_component_bytes`, its compiled layer to eight times
//! that, and a signature's payload to [`MAX_SIGNATURE_BYTES`], at most [`MAX_SIGNATURES`] of
//! them read, all verified before the component itself is pulled.

use std::path::PathBuf;

use futures_util::{Stream, StreamExt};
use oci_client::client::AsLayerDescriptor;
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use sha2::{Digest, Sha256};

use super::credentials::RegistryCredentials;
use super::signature::{self as signature, TrustedKey};
use super::{block_on, check, client, parse, registry_error, wasm_layer, OciError};

/// The largest signature payload read: a simple-signing payload is a few hundred bytes.
pub const MAX_SIGNATURE_BYTES: u64 = 64 << 10;

/// The most signatures of one artifact looked at.
pub const MAX_SIGNATURES: usize = 8;

/// How many times a component's size its compiled layer may be (the shipped Python policy's
/// layer is 2.3 times its component).
pub const COMPILED_SIZE_FACTOR: u64 = 8;

/// Why a bounded pull failed.
#[derive(Debug)]
pub(super) enum PullError {
    /// The registry refused, failed or sent bytes that are not the blob's.
    Registry(OciDistributionError),
    /// The blob is larger than the limit: `size` when the manifest or the answer said it.
    TooLarge { size: Option<u64> },
}

impl From<OciDistributionError> for PullError {
    fn from(error: OciDistributionError) -> Self {
        PullError::Registry(error)
    }
}

/// The bytes of `stream`, refused once past `limit`.
async fn collect_within<S>(mut stream: S, limit: u64) -> Result<Vec<u8>, PullError>
where
    S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Unpin,
{
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| PullError::Registry(OciDistributionError::IoError(e)))?;
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(PullError::TooLarge { size: None });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// `layer` of `image`'s repository, at most `limit` bytes: its size in the manifest
/// (`declared`) is checked before the download, the answer's length as it starts, and the
/// bytes as they arrive; the client checks them against the layer's digest at the end.
pub(super) async fn pull_within(
    client: &Client,
    image: &Reference,
    layer: impl AsLayerDescriptor,
    declared: Option<i64>,
    limit: u64,
) -> Result<Vec<u8>, PullError> {
    if let Some(size) = declared.and_then(|size| u64::try_from(size).ok()) {
        if size > limit {
            return Err(PullError::TooLarge { size: Some(size) });
        }
    }
    let stream = client.pull_blob_stream(image, layer).await?;
    if let Some(length) = stream.content_length.filter(|length| *length > limit) {
        return Err(PullError::TooLarge { size: Some(length) });
    }
    collect_within(stream, limit).await
}

/// The error of a bounded pull of `what` from `reference`.
fn pull_error(
    reference: &str,
    image: &Reference,
    credentials: &RegistryCredentials,
    what: &'static str,
    limit: u64,
    error: PullError,
) -> OciError {
    match error {
        PullError::Registry(e) => registry_error("cannot pull", reference, image, credentials, e),
        PullError::TooLarge { size } => OciError::TooLarge {
            reference: reference.to_owned(),
            what,
            size,
            limit,
        },
    }
}

/// Pulls the component at `reference` (a tag or a manifest digest), at most `limit` bytes: its
/// bytes, checked against the layer's digest.
pub fn pull(
    reference: &str,
    credentials: &RegistryCredentials,
    limit: u64,
) -> Result<Vec<u8>, OciError> {
    let image = parse(reference)?;
    let failed = |e| pull_error(reference, &image, credentials, "component", limit, e);
    block_on(async {
        let client = client(&image);
        let (manifest, _) = client
            .pull_image_manifest(&image, &credentials.auth(image.resolve_registry()))
            .await
            .map_err(|e| failed(e.into()))?;
        let layer = wasm_layer(reference, &manifest)?;
        let bytes = pull_within(&client, &image, layer, Some(layer.size), limit)
            .await
            .map_err(failed)?;
        check(
            reference,
            &bytes,
            layer.digest.trim_start_matches("sha256:"),
        )?;
        Ok(bytes)
    })
}

/// Pulls the blob `sha256:{pin}` of `reference`'s repository, whatever its tag names now, at
/// most `limit` bytes; `what` names it in errors.
pub(super) fn pull_pinned(
    reference: &str,
    pin: &str,
    credentials: &RegistryCredentials,
    what: &'static str,
    limit: u64,
) -> Result<Vec<u8>, OciError> {
    let image = parse(reference)?;
    let digest = format!("sha256:{pin}");
    let pinned = format!("{reference} ({digest})");
    let bytes = block_on(async {
        let client = client(&image);
        let auth = credentials.auth(image.resolve_registry());
        client.auth(&image, &auth, RegistryOperation::Pull).await?;
        pull_within(&client, &image, digest.as_str(), None, limit).await
    })
    .map_err(|e| pull_error(&pinned, &image, credentials, what, limit, e))?;
    check(reference, &bytes, pin)?;
    Ok(bytes)
}

/// The key among `keys` that signed the artifact of `image`'s repository whose manifest
/// digest is `digest`, or why none did: at most [`MAX_SIGNATURES`] signatures are read, each
/// payload at most [`MAX_SIGNATURE_BYTES`].
pub(super) async fn verify_signature(
    client: &Client,
    image: &Reference,
    digest: &str,
    keys: &[TrustedKey],
    auth: &RegistryAuth,
) -> Result<PathBuf, String> {
    let signature_image = Reference::with_tag(
        image.registry().to_owned(),
        image.repository().to_owned(),
        signature::signature_tag(digest),
    );
    let (manifest, _) = client
        .pull_image_manifest(&signature_image, auth)
        .await
        .map_err(|e| {
            format!(
                "no signature could be read from {}: {e}",
                signature_image.whole()
            )
        })?;
    let mut refused = Vec::new();
    let signatures = (manifest.layers.iter())
        .filter(|layer| layer.media_type == signature::SIGNATURE_LAYER_MEDIA_TYPE)
        .take(MAX_SIGNATURES);
    for layer in signatures {
        let Some(signed) =
            (layer.annotations.as_ref()).and_then(|a| a.get(signature::SIGNATURE_ANNOTATION))
        else {
            refused.push("a signature layer without its signature annotation".to_owned());
            continue;
        };
        let payload = match pull_within(
            client,
            &signature_image,
            layer,
            Some(layer.size),
            MAX_SIGNATURE_BYTES,
        )
        .await
        {
            Ok(payload) => payload,
            Err(PullError::TooLarge { .. }) => {
                refused.push(format!(
                    "its payload is larger than {MAX_SIGNATURE_BYTES} bytes; not read"
                ));
                continue;
            }
            Err(PullError::Registry(e)) => {
                refused.push(format!("its payload could not be pulled: {e}"));
                continue;
            }
        };
        if format!("sha256:{}", hex::encode(Sha256::digest(&payload))) != layer.digest {
            refused.push("its payload does not have its layer's digest".to_owned());
            continue;
        }
        match signature::verify(keys, &payload, signed, digest) {
            Ok(key) => return Ok(key.path.clone()),
            Err(why) => refused.push(why),
        }
    }
    Err(if refused.is_empty() {
        format!("{} holds no signature", signature_image.whole())
    } else {
        format!(
            "no signature in {} holds: {}",
            signature_image.whole(),
            refused.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(sizes: &[usize]) -> impl Stream<Item = Result<bytes::Bytes, std::io::Error>> + Unpin {
        futures_util::stream::iter(
            sizes
                .iter()
                .map(|n| Ok(bytes::Bytes::from(vec![7u8; *n])))
                .collect::<Vec<_>>(),
        )
    }

    /// A registry that sends more than the limit is cut off as the bytes arrive: nothing past
    /// the limit is kept.
    #[test]
    fn bytes_past_the_limit_are_refused_as_they_arrive() {
        let within = futures::executor::block_on(collect_within(chunks(&[10, 10, 5]), 25));
        assert_eq!(within.unwrap().len(), 25);
        let past = futures::executor::block_on(collect_within(chunks(&[10, 10, 6]), 25));
        assert!(matches!(past, Err(PullError::TooLarge { size: None })));
    }
}
