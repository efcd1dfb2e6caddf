//! The HTTP API of `rebound serve` (docs/serve.md): deciding and classifying, the policies'
//! status, health and metrics for anyone who can reach the server; reload, rollback, shadow,
//! promote and abandon for an admitted admin only, each logged with who and what.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use rebound::registry::Watching;
use serde_json::json;

use super::app::{body_text, error, not_found, refused, registry_error, App, Asker, BODY_LIMIT};
use super::clients::CLIENT_KEY;
use super::{panics, privileged};
use crate::wire::input::{DecideInput, InputError};

type Shared = State<Arc<App>>;

/// The router.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .merge(
            Router::new()
                .route("/v1/decide", post(decide))
                .route("/v1/classify", post(classify))
                .route("/v1/outcome", post(outcome))
                .route_layer(axum::middleware::from_fn_with_state(
                    Arc::clone(&app),
                    admit_client,
                )),
        )
        .route("/v1/policies", get(policies))
        .route("/v1/policies/{name}", get(policy))
        .route("/v1/policies/{name}/shadow", post(privileged::shadow))
        .route("/v1/policies/{name}/{action}", post(privileged::act))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            read_body,
        ))
        .layer(axum::middleware::map_response(json_errors))
        .layer(panics::answered_as_500())
        .with_state(app)
}

/// Reads a request's whole body, within the size limit and the body timeout, before any
/// handler runs: a client sending its body slowly holds nothing but its own connection, which
/// is answered 408 and closed (hyper closes it after a `Connection: close` answer to a request
/// whose body was left unread) when the timeout passes.
async fn read_body(
    State(app): Shared,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (parts, body) = request.into_parts();
    match tokio::time::timeout(app.body_timeout, axum::body::to_bytes(body, BODY_LIMIT)).await {
        Ok(Ok(bytes)) => {
            let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
            next.run(request).await
        }
        Ok(Err(e)) => {
            let too_large = e
                .into_inner()
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            // The body is left unread, so the connection is closed after the answer: say so.
            closing(if too_large {
                error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "",
                    &format!("the body is larger than the limit of {BODY_LIMIT} bytes"),
                )
            } else {
                error(StatusCode::BAD_REQUEST, "", "the body could not be read")
            })
        }
        Err(_) => {
            app.metrics.connections().closed("body_timeout");
            closing(error(
                StatusCode::REQUEST_TIMEOUT,
                "",
                &format!(
                    "the body did not arrive within {} ms",
                    app.body_timeout.as_millis()
                ),
            ))
        }
    }
}

/// The client a decision request comes from, when client tokens are configured.
#[derive(Clone)]
struct Client(String);

/// Admits a request for a decision (or to classify, or an outcome report): anyone when no
/// client tokens are configured, else a client whose token the file names, passed on to the
/// handler; a refusal is counted and logged as a privileged one is.
async fn admit_client(
    State(app): Shared,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(clients) = &app.clients {
        match clients.identify(request.headers()) {
            Ok(name) => {
                let client = Client(name.to_owned());
                request.extensions_mut().insert(client);
            }
            Err(refusal) => {
                let what = request.uri().path().to_owned();
                return refused(
                    &app,
                    Asker::Client,
                    peer,
                    request.headers(),
                    &what,
                    &refusal,
                );
            }
        }
    }
    next.run(request).await
}

/// `answer` with `Connection: close`: the answer after which the server closes the connection
/// (hyper closes one whose request body was left unread), so that the client sends its next
/// request on a new one instead of losing it.
fn closing(mut answer: Response) -> Response {
    answer.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    answer
}

/// Every error answer is the API's JSON error object: one the router or an extractor made
/// as text (a path that does not decode, say) is rewritten with its text as the message.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = match text.trim() {
        "" => status.canonical_reason().unwrap_or("error").to_owned(),
        text => text.to_owned(),
    };
    let mut answer = error(status, "", &message);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name, value.clone());
        }
    }
    answer
}

async fn method_not_allowed() -> Response {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "",
        "this endpoint does not take that method; see docs/serve.md",
    )
}

fn bad_input(app: &App, e: InputError) -> Response {
    app.metrics.refused();
    error(StatusCode::BAD_REQUEST, &e.field, &e.message)
}

/// `GET /ready`: whether the server takes requests — every policy loaded or answering its
/// declared fail-safe, which holds from when it listens — until a stop signal starts the
/// drain. Liveness and the detail are `/health`.
async fn ready(State(app): Shared) -> Response {
    if app.draining.load(Ordering::Relaxed) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"ready": false, "why": "draining: a stop signal came"})),
        )
            .into_response();
    }
    Json(json!({"ready": true})).into_response()
}

/// `ok`, or `degraded` (still answering) while the configuration or a policy failed its last
/// reload, the reload thread stopped, or a policy is quarantined: each problem named.
async fn health(State(app): Shared) -> Response {
    let status = app.decider.registry().status();
    let mut problems = Vec::new();
    if let Some(error) = &status.config_error {
        problems.push(json!({"configuration": status.config_file, "error": error}));
    }
    if status.watching == Watching::Stopped {
        problems.push(json!({
            "configuration": status.config_file,
            "error": "the reload thread stopped: changes to the configuration and the policies are no longer reloaded (restart the server)",
        }));
    }
    if let Some(xds) = app
        .xds
        .as_ref()
        .map(|x| x.status())
        .filter(|x| !x.connected)
    {
        problems.push(json!({
            "xds": xds.server,
            "error": xds.last_error.unwrap_or_else(|| "not connected yet".into()),
            "serving": xds.last_ack.map(|a| a.version),
        }));
    }
    for policy in &status.policies {
        if let Some(error) = &policy.last_error {
            problems.push(json!({"policy": policy.name, "error": error}));
        }
        if policy.quarantined {
            problems.push(json!({
                "policy": policy.name,
                "error": format!("quarantined after repeated failures: {}",
                    policy.last_failure.as_deref().unwrap_or("unknown")),
            }));
        }
    }
    Json(json!({
        "status": if problems.is_empty() { "ok" } else { "degraded" },
        "version": rebound::VERSION,
        "policies": status.policies.len(),
        "config_error": status.config_error,
        "problems": problems,
    }))
    .into_response()
}

async fn metrics(State(app): Shared) -> Response {
    match app.metrics.encode() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "",
            "metrics could not be encoded",
        ),
    }
}

async fn decide(
    State(app): Shared,
    client: Option<Extension<Client>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let text = match body_text(&body) {
        Ok(text) => text,
        Err((status, message)) => return error(status, "", &message),
    };
    let started = Instant::now();
    let id = app.next_id.fetch_add(1, Ordering::Relaxed);
    let mut input = match DecideInput::parse(text) {
        Ok(input) => input,
        Err(e) => return bad_input(&app, e),
    };
    if let Some(Extension(Client(name))) = &client {
        input.request.set_context(CLIENT_KEY, name);
        input.request.set_caller(name);
    }
    match app.decider.decide(input, id).await {
        Ok(answer) => {
            let outcome = answer.json["decision"].as_str().unwrap_or_default();
            let took = started.elapsed();
            app.metrics.decided(answer.policy.as_ref(), outcome, took);
            // W3C Server Timing: the decision's time in the server, in milliseconds.
            let timing = format!("decide;dur={:.3}", took.as_secs_f64() * 1000.0);
            ([("server-timing", timing)], Json(answer.json)).into_response()
        }
        Err(e) => bad_input(&app, e),
    }
}

/// Outcome reports: one object or an array (docs/decision-json.md "Outcomes").
async fn outcome(
    State(app): Shared,
    client: Option<Extension<Client>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let text = match body_text(&body) {
        Ok(text) => text,
        Err((status, message)) => return error(status, "", &message),
    };
    let client = client
        .as_ref()
        .map(|Extension(Client(name))| (CLIENT_KEY, name.as_str()));
    match app.decider.record_outcomes(text, client) {
        Ok(json) => Json(json).into_response(),
        Err(e) => bad_input(&app, e),
    }
}

async fn classify(State(app): Shared, body: Result<Bytes, BytesRejection>) -> Response {
    let text = match body_text(&body) {
        Ok(text) => text,
        Err((status, message)) => return error(status, "", &message),
    };
    match app.decider.classify_text(text) {
        Ok(json) => Json(json).into_response(),
        Err(e) => bad_input(&app, e),
    }
}

async fn policies(State(app): Shared) -> Response {
    let status = app.decider.registry().status();
    match (&app.xds, serde_json::to_value(&status)) {
        (Some(xds), Ok(mut value)) => {
            value["xds"] = json!(xds.status());
            Json(value).into_response()
        }
        _ => Json(status).into_response(),
    }
}

async fn policy(State(app): Shared, Path(name): Path<String>) -> Response {
    match app.decider.registry().policy_status(&name) {
        Ok(status) => Json(status).into_response(),
        Err(e) => registry_error(&e),
    }
}
