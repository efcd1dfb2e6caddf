//! The privileged endpoints of `rebound serve` (reload, rollback, promote, abandon, shadow):
//! admitted as `admin` says, run off the async threads (a reload compiles), and logged with who
//! did what. Without a token any local process is admitted, so every line an action writes is
//! bounded as a refusal's is: caller-supplied text cut to
//! [`LOGGED_CHARS`](super::app::LOGGED_CHARS) characters, at most
//! [`PRIVILEGED_LINES_PER_SECOND`](super::app::PRIVILEGED_LINES_PER_SECOND) lines a second whatever the configuration.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rebound::registry::RegistryError;
use serde::Deserialize;
use serde_json::json;

use super::app::{body_text, cut, error, not_found, refused, registry_error, App, Asker};
use crate::wire::input::without_type_names;

type Shared = State<Arc<App>>;

/// Runs a privileged `action` on policy `name` for an admitted caller, off the async
/// threads (a reload compiles), and logs who did what and how it went.
async fn privileged<T: serde::Serialize + Send + 'static>(
    app: &Arc<App>,
    headers: &HeaderMap,
    peer: SocketAddr,
    what: String,
    action: impl FnOnce(&App) -> Result<T, RegistryError> + Send + 'static,
) -> Response {
    let who = match app.admin.admit(headers, peer) {
        Ok(who) => who,
        Err(refusal) => return refused(app, Asker::Admin, peer, headers, &what, &refusal),
    };
    let worker = Arc::clone(app);
    let result = tokio::task::spawn_blocking(move || action(&worker)).await;
    let what = cut(&what);
    let line = app.privileged_lines.allow();
    match result {
        Ok(Ok(outcome)) => {
            if let Some(left_out) = line {
                let outcome = cut(&json!(&outcome).to_string());
                tracing::info!(who, what, outcome, left_out, "privileged action done");
            }
            Json(outcome).into_response()
        }
        Ok(Err(e)) => {
            if let Some(left_out) = line {
                let error = cut(&e.to_string());
                tracing::warn!(who, what, error, left_out, "privileged action refused");
            }
            registry_error(&e)
        }
        Err(join) => {
            if let Some(left_out) = line {
                let error = cut(&join.to_string());
                tracing::error!(who, what, error, left_out, "privileged action panicked");
            }
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "",
                "the action failed unexpectedly; see the server log",
            )
        }
    }
}

/// Reload, rollback, promote or abandon policy `name`: the privileged actions without a body.
pub(super) async fn act(
    State(app): Shared,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path((name, action)): Path<(String, String)>,
) -> Response {
    let what = format!("{action} {name}");
    match action.as_str() {
        "reload" => {
            privileged(&app, &headers, peer, what, move |app| {
                app.decider.registry().reload(&name)
            })
            .await
        }
        "rollback" => {
            privileged(&app, &headers, peer, what, move |app| {
                app.decider.registry().rollback(&name)
            })
            .await
        }
        "promote" => {
            privileged(&app, &headers, peer, what, move |app| {
                app.decider.registry().promote(&name)
            })
            .await
        }
        "abandon" => {
            privileged(&app, &headers, peer, what, move |app| {
                app.decider.registry().abandon(&name)
            })
            .await
        }
        _ => not_found().await,
    }
}

/// The body of a shadow request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShadowBody {
    /// The candidate component, relative to the policy directory.
    path: PathBuf,
    /// Share of decisions the candidate also answers (0..=1).
    #[serde(default = "full_sample")]
    sample: f64,
}

fn full_sample() -> f64 {
    1.0
}

pub(super) async fn shadow(
    State(app): Shared,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // The admission comes first: an outsider learns nothing about the policy directory.
    if let Err(refusal) = app.admin.admit(&headers, peer) {
        let asked = match &body {
            Ok(bytes) => String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned(),
            Err(_) => "an unreadable body".to_owned(),
        };
        return refused(
            &app,
            Asker::Admin,
            peer,
            &headers,
            &format!("shadow {name} with {asked}"),
            &refusal,
        );
    }
    let text = match body_text(&body) {
        Ok(text) => text,
        Err((status, message)) => return error(status, "", &message),
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let request: ShadowBody = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(request) => request,
        Err(e) => {
            let field = e.path().to_string();
            let message = without_type_names(&e.into_inner().to_string());
            return error(StatusCode::BAD_REQUEST, &field, &message);
        }
    };
    if !(0.0..=1.0).contains(&request.sample) {
        return error(
            StatusCode::BAD_REQUEST,
            "sample",
            "expected a share of decisions from 0 to 1",
        );
    }
    let Some(path) = crate::json_decider::inside(&app.policy_dir, &request.path) else {
        if let Some(left_out) = app.privileged_lines.allow() {
            let path = cut(&request.path.display().to_string());
            tracing::warn!(%peer, policy = cut(&name), path, left_out,
                "shadow refused: the path is not a file inside the policy directory");
        }
        return error(
            StatusCode::BAD_REQUEST,
            "path",
            &format!(
                "`{}` is not a file inside the policy directory",
                cut(&request.path.display().to_string())
            ),
        );
    };
    let what = format!(
        "shadow {name} with {} (sample {})",
        path.display(),
        request.sample
    );
    privileged(&app, &headers, peer, what, move |app| {
        app.decider.registry().shadow(&name, &path, request.sample)
    })
    .await
}
