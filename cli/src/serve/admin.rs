//! Who may change what decides: the bearer token of the privileged endpoints (reload,
//! rollback, shadow, promote, abandon), compared in constant time, the rule for a server
//! without a token (allowed on a loopback-only address, refused otherwise), and, in every
//! mode, the refusal of what a web page on another site can make a browser send.

use std::net::SocketAddr;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How privileged requests are admitted.
#[derive(Clone)]
pub enum AdminAccess {
    /// With this token (kept as its SHA-256, so comparing leaks neither content nor length).
    Token([u8; 32]),
    /// Without a token: the server listens on loopback only.
    LoopbackOnly,
    /// Refused: no token and a non-loopback address.
    Disabled,
}

impl std::fmt::Debug for AdminAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AdminAccess::Token(_) => "Token(..)",
            AdminAccess::LoopbackOnly => "LoopbackOnly",
            AdminAccess::Disabled => "Disabled",
        })
    }
}

/// The SHA-256 of the bearer token `headers` carry (`Authorization: Bearer TOKEN`), if any:
/// tokens are compared as digests, so that comparing leaks neither content nor length.
pub fn bearer_sha256(headers: &HeaderMap) -> Option<[u8; 32]> {
    let token = headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")?;
    Some(Sha256::digest(token.trim().as_bytes()).into())
}

/// A refused privileged request.
pub struct Refusal {
    pub status: StatusCode,
    pub message: &'static str,
}

impl AdminAccess {
    /// The access for a server on `listen` with `token` (none, or empty: no token).
    pub fn new(token: Option<&str>, listen: SocketAddr) -> Self {
        match token.map(str::trim).filter(|t| !t.is_empty()) {
            Some(token) => AdminAccess::Token(Sha256::digest(token.as_bytes()).into()),
            None if listen.ip().is_loopback() => AdminAccess::LoopbackOnly,
            None => AdminAccess::Disabled,
        }
    }

    /// Admits or refuses a privileged request from `peer` with `headers`; admitted, it says
    /// who the caller is, for the log.
    pub fn admit(&self, headers: &HeaderMap, peer: SocketAddr) -> Result<String, Refusal> {
        not_from_another_site(headers)?;
        match self {
            AdminAccess::Disabled => Err(Refusal {
                status: StatusCode::FORBIDDEN,
                message: "privileged endpoints are disabled: no admin token is configured and the server listens beyond loopback (set REBOUND_ADMIN_TOKEN or --admin-token-file)",
            }),
            AdminAccess::LoopbackOnly => Ok(format!("{peer} (loopback, no token configured)")),
            AdminAccess::Token(expected) => {
                let given = bearer_sha256(headers).ok_or(Refusal {
                    status: StatusCode::UNAUTHORIZED,
                    message: "this endpoint needs `Authorization: Bearer <admin token>`",
                })?;
                if bool::from(given.ct_eq(expected)) {
                    Ok(format!("{peer} (admin token)"))
                } else {
                    Err(Refusal {
                        status: StatusCode::UNAUTHORIZED,
                        message: "wrong admin token",
                    })
                }
            }
        }
    }
}

/// A page on another site can make a browser POST here without asking first (a "simple"
/// request: `Content-Type: text/plain`, form encodings), and the browser sends the page's
/// `Origin` and `Sec-Fetch-Site`. So a privileged request must say it is JSON (which a page
/// cannot send elsewhere without a CORS preflight, which this server never grants) and must
/// not come from another site.
fn not_from_another_site(headers: &HeaderMap) -> Result<(), Refusal> {
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    if media_type.as_deref() != Some("application/json") {
        return Err(Refusal {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            message: "privileged requests must be sent with `Content-Type: application/json`",
        });
    }
    // One of each at most: with two, a check of the first alone could pass what the second
    // says.
    for name in ["origin", "sec-fetch-site"] {
        if headers.get_all(name).iter().count() > 1 {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                message: "refused: a privileged request with more than one Origin or Sec-Fetch-Site header",
            });
        }
    }
    let fetch_site = headers.get("sec-fetch-site").map(HeaderValue::as_bytes);
    if fetch_site.is_some_and(|site| site != b"same-origin" && site != b"none") {
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            message:
                "refused: a privileged request sent by a page of another site (Sec-Fetch-Site)",
        });
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let authority = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, authority)| authority);
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let same = matches!((authority, host), (Some(a), Some(h)) if a.eq_ignore_ascii_case(h));
        if !same {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                message: "refused: a privileged request sent by a page of another site (Origin)",
            });
        }
    }
    Ok(())
}
