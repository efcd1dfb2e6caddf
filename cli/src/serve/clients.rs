//! Who may ask for decisions: with `--client-tokens FILE`, `/v1/decide`, `/v1/classify` and
//! `/v1/outcome` need `Authorization: Bearer <token>` of a client the file names (by the
//! SHA-256 of its token, compared in constant time). The client's name becomes its requests'
//! `client_context.client`, replacing what a request says, so that a budget kept per client
//! (`per = "client_context.client"`) is its own and no other client can spend it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use subtle::ConstantTimeEq;
use toml::Spanned;

use super::admin::{bearer_sha256, Refusal};

/// The client-context entry a client's name is written to.
pub const CLIENT_KEY: &str = "client";

/// The clients a `--client-tokens` file names.
pub struct ClientTokens {
    /// Each client's name and the SHA-256 of its token.
    clients: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for ClientTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTokens")
            .field(
                "clients",
                &self.clients.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    clients: BTreeMap<String, RawClient>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    token_sha256: Spanned<String>,
}

impl ClientTokens {
    /// Reads `path`: `[clients.NAME]` tables, each with `token_sha256`, the 64 hex digits of
    /// the SHA-256 of the client's token.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the client tokens file {}", path.display()))?;
        Self::parse(&text, path)
    }

    fn parse(text: &str, path: &Path) -> anyhow::Result<Self> {
        let at = |offset: usize| {
            let (line, column) = rebound::config::line_column(text, offset);
            format!("{}:{line}:{column}", path.display())
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let place = e
                .span()
                .map_or_else(|| path.display().to_string(), |s| at(s.start));
            anyhow::anyhow!("{place}: {}", e.message())
        })?;
        anyhow::ensure!(
            !raw.clients.is_empty(),
            "{}: no [clients.NAME] table: expected at least one client",
            path.display()
        );
        let mut clients = Vec::new();
        for (name, client) in raw.clients {
            anyhow::ensure!(
                name.len() <= rebound::registry::MAX_CLIENT_BYTES,
                "{}: clients.{name}: a client name is at most {} bytes",
                path.display(),
                rebound::registry::MAX_CLIENT_BYTES
            );
            let hash = parse_sha256(client.token_sha256.get_ref()).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: clients.{name}.token_sha256: expected the 64 hex digits of the token's SHA-256 (printf %s \"$TOKEN\" | sha256sum)",
                    at(client.token_sha256.span().start)
                )
            })?;
            clients.push((name, hash));
        }
        Ok(ClientTokens { clients })
    }

    /// The client `headers` authenticate, or why not. Every client's hash is compared, so the
    /// time taken says nothing about which matched.
    pub fn identify(&self, headers: &HeaderMap) -> Result<&str, Refusal> {
        let given = bearer_sha256(headers).ok_or(Refusal {
            status: StatusCode::UNAUTHORIZED,
            message: "this endpoint needs `Authorization: Bearer <client token>`",
        })?;
        let mut found = None;
        for (name, hash) in &self.clients {
            if bool::from(given.ct_eq(hash)) {
                found = Some(name.as_str());
            }
        }
        found.ok_or(Refusal {
            status: StatusCode::UNAUTHORIZED,
            message: "unknown client token",
        })
    }
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 {
        return None;
    }
    let mut hash = [0u8; 32];
    for (i, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    const HASH_OF_SECRET: &str = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";

    /// docs/serve.md "Who may ask for decisions": a known token names its client; a missing
    /// or unknown one is refused 401.
    #[test]
    fn a_token_names_its_client() {
        let file = format!("[clients.checkout]\ntoken_sha256 = \"{HASH_OF_SECRET}\"\n");
        let tokens = ClientTokens::parse(&file, Path::new("clients.toml")).unwrap();
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            headers
        };
        assert_eq!(
            tokens.identify(&with("Bearer secret")).ok(),
            Some("checkout")
        );
        let refused = tokens.identify(&with("Bearer guess")).unwrap_err();
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
        assert!(tokens.identify(&HeaderMap::new()).is_err());
    }

    /// A bad file names the file, line and field.
    #[test]
    fn a_bad_file_names_the_place() {
        let e = ClientTokens::parse(
            "[clients.checkout]\ntoken_sha256 = \"abc\"\n",
            Path::new("clients.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("clients.toml:2:16: clients.checkout.token_sha256"),
            "{e}"
        );
        let e = ClientTokens::parse("[clients.checkout]\ntoken = \"x\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:2:1:") && e.contains("token"), "{e}");
    }
}
