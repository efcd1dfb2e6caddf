//! What every handler of `rebound serve` shares: the server's state and the answers more than
//! one group of endpoints gives (an error, a refusal counted and logged, a body read as text),
//! kept apart from the router so that the public and the privileged endpoints both use them
//! without depending on each other.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rebound::registry::RegistryError;
use rebound::LogRateLimit;

use super::admin::{AdminAccess, Refusal};
use super::clients::ClientTokens;
use super::metrics::Metrics;
use crate::json_decider::JsonDecider;
use crate::wire::output;

/// The largest request body accepted.
pub const BODY_LIMIT: usize = 64 * 1024;

/// What every handler shares.
pub struct App {
    pub decider: JsonDecider,
    pub metrics: Metrics,
    pub admin: AdminAccess,
    /// The clients that may ask for decisions; `None`: anyone who can connect.
    pub clients: Option<ClientTokens>,
    /// Where policy paths given through the API must resolve.
    pub policy_dir: PathBuf,
    pub next_id: AtomicU64,
    /// Longest wait for a request's body.
    pub body_timeout: Duration,
    /// Lines a second for refused privileged requests, which anyone who can connect can cause.
    pub refusal_lines: LogRateLimit,
    /// Lines a second about privileged actions, which any local process can cause on a server
    /// without a token.
    pub privileged_lines: LogRateLimit,
    /// Set when a stop signal came: the server finishes what it received and takes no more.
    pub draining: Arc<AtomicBool>,
    /// The xDS source the configuration names, if it names one.
    pub xds: Option<rebound::xds::ads::XdsSource>,
}

impl App {
    /// The state of a server started with `args`.
    pub fn new(
        metrics: Metrics,
        decider: JsonDecider,
        admin: AdminAccess,
        clients: Option<ClientTokens>,
        policy_dir: PathBuf,
        args: &super::Args,
    ) -> Self {
        App {
            metrics,
            decider,
            admin,
            clients,
            policy_dir,
            next_id: AtomicU64::new(1),
            body_timeout: args.limits.body_timeout(),
            refusal_lines: LogRateLimit::new(REFUSAL_LINES_PER_SECOND),
            privileged_lines: LogRateLimit::new(PRIVILEGED_LINES_PER_SECOND),
            draining: Arc::new(AtomicBool::new(false)),
            xds: None,
        }
    }

    /// The same state, following `xds` (on the current tokio runtime) for its registry.
    pub fn with_xds(mut self, xds: Option<rebound::config::XdsSourceConfig>) -> Self {
        self.xds = xds.map(|config| {
            rebound::xds::ads::XdsSource::spawn(Arc::clone(self.decider.registry()), config)
        });
        if let Some(source) = &self.xds {
            self.metrics.watch_xds(source.clone());
        }
        self
    }
}

/// Lines a second about privileged actions, done or refused by the registry: enough for an
/// operator's own work, few enough that a local process looping on them adds a few KiB a second.
pub const PRIVILEGED_LINES_PER_SECOND: u32 = 10;

/// Lines a second for refused privileged requests: enough to tell an operator's own mistakes
/// apart, few enough that a flood of refusals adds at most a few KiB a second to the log.
pub const REFUSAL_LINES_PER_SECOND: u32 = 10;

/// How much of a caller-supplied value (`Origin`, `User-Agent`, what a refused request asked)
/// a log line carries, in characters; the rest is cut and marked `…`.
pub const LOGGED_CHARS: usize = 128;

/// An error answer: `{"error": {"field", "message"}}`.
pub(super) fn error(status: StatusCode, field: &str, message: &str) -> Response {
    (status, Json(output::input_error(field, message, None))).into_response()
}

/// The body as UTF-8 text, or the 4xx status and message that say why not.
pub(super) fn body_text(
    body: &Result<Bytes, BytesRejection>,
) -> Result<&str, (StatusCode, String)> {
    match body {
        Ok(bytes) => std::str::from_utf8(bytes)
            .map_err(|_| (StatusCode::BAD_REQUEST, "the body is not UTF-8 text".into())),
        Err(rejection) => Err((
            rejection.status(),
            format!(
                "{} (the limit is {BODY_LIMIT} bytes)",
                rejection.body_text()
            ),
        )),
    }
}

pub(super) async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "",
        "no such endpoint; see docs/serve.md",
    )
}

/// The HTTP status of a refused registry operation: all are the caller's doing except an
/// engine or cache failure.
pub(super) fn registry_error(e: &RegistryError) -> Response {
    let status = match e {
        RegistryError::Unknown(_) => StatusCode::NOT_FOUND,
        RegistryError::NoPrevious(_) | RegistryError::NoShadow(_) | RegistryError::Builtin(_) => {
            StatusCode::CONFLICT
        }
        RegistryError::Build(_) | RegistryError::Config(_) => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, "", &e.to_string())
}

/// Who was refused: a caller of a privileged endpoint, or a client asking for decisions.
#[derive(Clone, Copy)]
pub(super) enum Asker {
    Admin,
    Client,
}

/// A refused request: counted, logged with the caller and what it asked (at most
/// [`REFUSAL_LINES_PER_SECOND`], the next line saying how many were left out; each
/// caller-supplied value cut to [`LOGGED_CHARS`]), answered with the refusal.
pub(super) fn refused(
    app: &App,
    asker: Asker,
    peer: SocketAddr,
    headers: &HeaderMap,
    what: &str,
    refusal: &Refusal,
) -> Response {
    let kind = match asker {
        Asker::Admin => {
            app.metrics.privileged_refused();
            "privileged"
        }
        Asker::Client => {
            app.metrics.client_refused();
            "client"
        }
    };
    if let Some(left_out) = app.refusal_lines.allow() {
        let header = |name: header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map_or_else(|| "-".to_owned(), cut)
        };
        tracing::warn!(
            %peer,
            what = cut(what),
            origin = header(header::ORIGIN),
            user_agent = header(header::USER_AGENT),
            left_out,
            "{kind} request refused: {}",
            refusal.message
        );
    }
    error(refusal.status, "", refusal.message)
}

/// `text` cut to [`LOGGED_CHARS`] characters.
pub fn cut(text: &str) -> String {
    match text.char_indices().nth(LOGGED_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
