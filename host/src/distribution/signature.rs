//! Signatures of components in OCI registries, in cosign's key-based format: the signature of
//! the artifact whose manifest digest is `sha256:HEX` is an image tagged `sha256-HEX.sig` in
//! the same repository, each layer of which is a simple-signing payload
//! (`application/vnd.dev.cosign.simplesigning.v1+json`, naming that digest) with its ECDSA
//! P-256 / SHA-256 signature, in base64 DER, as the layer's annotation
//! `dev.cosignproject.cosign/signature`. `cosign verify --key` checks what `rebound push --sign`
//! writes, and the host checks what `cosign sign --key` writes, against the public keys of its
//! `[trust]` table.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{DerSignature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey};

use crate::field_error::FieldError;

/// The media type of a signature layer.
pub(crate) const SIGNATURE_LAYER_MEDIA_TYPE: &str =
    "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the signature.
pub(crate) const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `critical.type` of a simple-signing payload.
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// A private key signing components (`rebound push --sign KEY`): ECDSA P-256, in a PEM file
/// (PKCS#8 `PRIVATE KEY`, or SEC1 `EC PRIVATE KEY` as `openssl ecparam -genkey` writes it).
#[derive(Clone)]
pub struct ComponentSigner {
    key: SigningKey,
}

impl std::fmt::Debug for ComponentSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ComponentSigner(<redacted>)")
    }
}

impl ComponentSigner {
    /// The key in the PEM file at `path`.
    pub fn from_pem_file(path: &Path) -> Result<Self, FieldError> {
        let error = |message: String| FieldError::new(path.display().to_string(), message);
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let key = if text.contains("BEGIN EC PRIVATE KEY") {
            p256::SecretKey::from_sec1_pem(&text)
                .map(SigningKey::from)
                .map_err(|e| error(format!("not a P-256 SEC1 private key: {e}")))?
        } else {
            SigningKey::from_pkcs8_pem(&text).map_err(|e| {
                error(format!(
                    "expected an ECDSA P-256 private key in PEM (PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY`, unencrypted): {e}"
                ))
            })?
        };
        Ok(ComponentSigner { key })
    }

    /// The signature of `payload`, in base64 DER, as the annotation holds it.
    pub(crate) fn sign(&self, payload: &[u8]) -> String {
        let signature: DerSignature = self.key.sign(payload);
        base64::engine::general_purpose::STANDARD.encode(signature.as_bytes())
    }
}

/// A public key whose signatures a host trusts: ECDSA P-256 in a PEM file (`PUBLIC KEY`, as
/// `cosign generate-key-pair` and `openssl pkey -pubout` write it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    /// The file it was read from, naming it in messages.
    pub path: PathBuf,
    key: VerifyingKey,
}

impl TrustedKey {
    /// The key in the PEM file at `path`.
    pub fn from_pem_file(path: &Path) -> Result<Self, FieldError> {
        let error = |message: String| FieldError::new(path.display().to_string(), message);
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let key = VerifyingKey::from_public_key_pem(&text).map_err(|e| {
            error(format!(
                "expected an ECDSA P-256 public key in PEM (`-----BEGIN PUBLIC KEY-----`): {e}"
            ))
        })?;
        Ok(TrustedKey {
            path: path.to_owned(),
            key,
        })
    }
}

/// The simple-signing payload of the artifact `repository` (`registry/repository`) whose
/// manifest digest is `digest` (`sha256:HEX`).
pub(crate) fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": { "docker-reference": repository },
            "image": { "docker-manifest-digest": digest },
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    }))
    .expect("a JSON value serialises")
}

/// The tag of the signatures of the artifact whose manifest digest is `digest`.
pub(crate) fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// Whether `payload`, signed `signature` (base64 DER), is a signature by one of `keys` of the
/// artifact whose manifest digest is `digest`: the key that signed it, or why not.
pub(crate) fn verify<'k>(
    keys: &'k [TrustedKey],
    payload: &[u8],
    signature: &str,
    digest: &str,
) -> Result<&'k TrustedKey, String> {
    let der = base64::engine::general_purpose::STANDARD
        .decode(signature.trim())
        .map_err(|e| format!("its signature is not base64: {e}"))?;
    let signature = p256::ecdsa::Signature::from_der(&der)
        .map_err(|e| format!("its signature is not an ECDSA signature: {e}"))?;
    let key = keys
        .iter()
        .find(|key| key.key.verify(payload, &signature).is_ok())
        .ok_or_else(|| "its signature does not verify with any trusted key".to_owned())?;
    let payload: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|e| format!("its payload is not simple-signing JSON: {e}"))?;
    let critical = &payload["critical"];
    if critical["type"] != PAYLOAD_TYPE {
        return Err(format!(
            "its payload's type is {}, not `{PAYLOAD_TYPE}`",
            critical["type"]
        ));
    }
    let signed = &critical["image"]["docker-manifest-digest"];
    if signed != digest {
        return Err(format!("it signs {signed}, not {digest}"));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:4c5b0e0f2c63c1bb2ad16f0a0b1f7a9ff7d9e9fdc0a2b8e4f1f0c3d2e1a0b9c8";

    fn key_pair(seed: u8) -> (ComponentSigner, TrustedKey) {
        let key = SigningKey::from_slice(&[seed; 32]).unwrap();
        let trusted = TrustedKey {
            path: PathBuf::from(format!("key-{seed}.pub")),
            key: *key.verifying_key(),
        };
        (ComponentSigner { key }, trusted)
    }

    /// docs/registry.md "Signed policies": a signature verifies with the key that made it, for
    /// the digest its payload names, and for nothing else.
    #[test]
    fn a_signature_holds_for_its_key_and_its_digest_only() {
        let (signer, trusted) = key_pair(7);
        let (_, other) = key_pair(9);
        let payload = payload("registry.example.com/policies/retry", DIGEST);
        let signature = signer.sign(&payload);
        let keys = [other.clone(), trusted.clone()];
        assert_eq!(verify(&keys, &payload, &signature, DIGEST), Ok(&keys[1]));
        assert_eq!(
            verify(std::slice::from_ref(&other), &payload, &signature, DIGEST),
            Err("its signature does not verify with any trusted key".into())
        );
        let elsewhere = DIGEST.replace("4c5b", "0000");
        let said = verify(&keys, &payload, &signature, &elsewhere).unwrap_err();
        assert!(said.starts_with("it signs \"sha256:4c5b"), "{said}");
        let mut tampered = payload.clone();
        tampered[10] ^= 1;
        assert!(verify(&keys, &tampered, &signature, DIGEST).is_err());
        assert!(verify(&keys, &payload, "not base64!", DIGEST)
            .unwrap_err()
            .contains("not base64"));
        assert_eq!(
            signature_tag(DIGEST),
            "sha256-4c5b0e0f2c63c1bb2ad16f0a0b1f7a9ff7d9e9fdc0a2b8e4f1f0c3d2e1a0b9c8.sig"
        );
    }
}
