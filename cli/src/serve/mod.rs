//! `rebound serve`: the decision service. HTTP/JSON on a configurable address (loopback by
//! default), the registry's policies hot-reloaded from the configuration's files, Prometheus
//! metrics (and OTLP export when configured), privileged endpoints behind a bearer token,
//! bounded connections, and a drain on SIGTERM/SIGINT that answers every request received.

mod admin;
mod app;
pub mod child_compiler;
mod clients;
mod connection;
mod facade;
mod limits;
mod linger;
mod listener;
mod metrics;
mod open_files;
mod panics;
mod parse_error;
mod privileged;
mod routes;
mod telemetry;
mod xds_metrics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Context;
use rebound::config::{IsolationConfig, RegistryConfig};
use rebound::otlp::OtlpExport;
use rebound::registry::PolicyRegistry;
use rebound::wasm::TickerPriority;

use crate::json_decider::{FileAccess, JsonDecider};
use crate::logging::{self, ExtraLayer, LogFormat};
use admin::AdminAccess;

/// The environment variable holding the admin token.
pub const TOKEN_VARIABLE: &str = "REBOUND_ADMIN_TOKEN";

/// Options of `rebound serve`.
#[derive(clap::Args)]
pub struct Args {
    /// The registry configuration (policies, routes, watch settings): see docs/registry.md.
    config: PathBuf,
    /// Address to listen on; port 0 picks a free port (the address is printed on start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A file holding the admin token for the privileged endpoints (otherwise the
    /// REBOUND_ADMIN_TOKEN environment variable; with neither, they are open on a loopback
    /// address only).
    #[arg(long)]
    admin_token_file: Option<PathBuf>,
    /// A TOML file of the clients that may ask for decisions (`[clients.NAME]` with
    /// `token_sha256`); with it, /v1/decide, /v1/classify and /v1/outcome need a client's
    /// `Authorization: Bearer` token, and its name becomes the requests' client_context.client.
    /// Without it they are open to whoever can connect.
    #[arg(long)]
    client_tokens: Option<PathBuf>,
    /// Worker threads (default: one per core, at most 1024).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    workers: Option<u16>,
    /// Refuse decision requests that name a built-in with parameters of their own
    /// (`"policy": {"name": "grpc", "params": {...}}`): clients then decide with the configured
    /// policies only. Without it such parameters are allowed, each within the bounds
    /// docs/decision-json.md gives.
    #[arg(long)]
    no_request_params: bool,
    #[command(flatten)]
    limits: limits::Limits,
}

fn admin_token(args: &Args) -> anyhow::Result<Option<String>> {
    if let Some(file) = &args.admin_token_file {
        let token = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the admin token file {}", file.display()))?;
        anyhow::ensure!(
            !token.trim().is_empty(),
            "the admin token file {} is empty",
            file.display()
        );
        return Ok(Some(token));
    }
    Ok(std::env::var(TOKEN_VARIABLE).ok())
}

/// The server's log lines when `RUST_LOG` does not say: one line per decision would be tens of
/// thousands of lines a second; the metrics count decisions, the log keeps what changes
/// (swaps, privileged actions, failures).
pub const LOG_FILTER: &str = "info,rebound::rules=warn";

/// The OTLP export, if the configuration or the environment asks for one (its gRPC channel
/// runs on `server_runtime`), and the log lines with its span layer beside them.
fn start_logs(
    config: &RegistryConfig,
    server_runtime: &tokio::runtime::Runtime,
    log_format: LogFormat,
) -> anyhow::Result<Option<OtlpExport>> {
    let export = match telemetry::wanted(config, |name| std::env::var(name).ok()) {
        Some(wanted) => {
            let _inside = server_runtime.enter();
            Some(OtlpExport::start(&wanted)?)
        }
        None => None,
    };
    let spans = export.as_ref().and_then(|export| export.layer());
    logging::init(
        LOG_FILTER,
        log_format,
        spans.map(|layer| Box::new(layer) as ExtraLayer),
    );
    if let Some(export) = &export {
        tracing::info!(
            protocol = export.protocol().name(),
            "exporting spans and metrics over OTLP"
        );
    }
    Ok(export)
}

/// The server's registry for `config`: components' calls isolated from the threads serving
/// requests, compiled in a child process within the limits, and the ticker priority asked.
fn open_registry(
    args: &Args,
    mut config: RegistryConfig,
) -> anyhow::Result<(Arc<PolicyRegistry>, TickerPriority)> {
    // Components' calls never run on the threads serving requests (docs/serve.md).
    config
        .engine
        .isolation
        .get_or_insert_with(IsolationConfig::default);
    // A server's deadlines pass on time on busy cores only if the epoch ticker runs promptly:
    // it asks for the real-time priority unless the configuration names another
    // (docs/serve.md "Deadlines on a busy machine").
    let ticker_asked = *config
        .engine
        .ticker_priority
        .get_or_insert(TickerPriority::Realtime);
    let runtime = PolicyRegistry::runtime_for(&config)?;
    runtime.set_compiler(Arc::new(child_compiler::ChildCompiler {
        max_memory_bytes: args.limits.compile_memory_mb << 20,
        timeout: std::time::Duration::from_millis(args.limits.compile_timeout_ms),
    }));
    let credentials = crate::oci::credentials()?;
    let registry = PolicyRegistry::with_credentials(config, runtime, credentials)?;
    Ok((Arc::new(registry), ticker_asked))
}

/// Warns when privileged endpoints or decisions are open to more than an operator expects.
fn warn_of_open_access(admin: &AdminAccess, client_tokens: bool, local: std::net::SocketAddr) {
    match admin {
        AdminAccess::Token(_) => {}
        AdminAccess::LoopbackOnly => tracing::warn!(
            "no admin token: reload, rollback, shadow and promote are open to local clients"
        ),
        AdminAccess::Disabled => tracing::warn!(
            "no admin token and a non-loopback address: reload, rollback, shadow and promote are disabled"
        ),
    }
    if !client_tokens && !local.ip().is_loopback() {
        tracing::warn!(
            "no client tokens and a non-loopback address: anyone who can connect may ask for decisions and report outcomes (--client-tokens)"
        );
    }
}

/// The spans and metrics still held go to the collector while its channel's runtime runs,
/// within what the drain `left` of its timeout, unless a signal says stop now.
async fn flush_export(
    export: OtlpExport,
    ended: listener::Drained,
    left: std::time::Duration,
    signals: &tokio::sync::Mutex<StopSignals>,
) {
    if ended == listener::Drained::SecondSignal {
        tracing::warn!("OTLP: the spans and metrics still held are not exported (second signal)");
        return;
    }
    let flushed = tokio::task::spawn_blocking(move || export.shutdown());
    tokio::select! {
        _ = flushed => {}
        () = tokio::time::sleep(left) => tracing::warn!(
            "OTLP: the spans and metrics still held were not exported within the drain timeout"
        ),
        () = async { signals.lock().await.next().await } => tracing::warn!(
            "OTLP: the export of the spans and metrics still held was cut short (a signal)"
        ),
    }
}

/// Serves until SIGTERM or SIGINT, then finishes the requests in flight.
pub fn run(args: &Args, log_format: LogFormat) -> anyhow::Result<()> {
    let token = admin_token(args)?;
    let clients = args
        .client_tokens
        .as_deref()
        .map(clients::ClientTokens::load)
        .transpose()?;
    // Logged as the server logs (an unused table's warning), before the log knows whether
    // the configuration exports spans.
    let config = logging::before_init(LOG_FILTER, log_format, || {
        RegistryConfig::load(&args.config)
    })?;
    let mut server_runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = args.workers {
        server_runtime.worker_threads(usize::from(workers));
    }
    let server_runtime = server_runtime.enable_all().build()?;
    let export = start_logs(&config, &server_runtime, log_format)?;
    let (registry, ticker_asked) = open_registry(args, config)?;
    let registry_at_exit = Arc::clone(&registry);
    let _watcher = registry
        .watch()
        .context("cannot watch the configuration's files")?;
    let config = registry.config();
    let (policy_dir, xds) = (config.policy_dir, config.xds);
    server_runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let local = listener.local_addr()?;
        // Counted once the engine, the watcher and the listener hold theirs.
        let mut limits = args.limits.clone();
        limits.max_connections = open_files::fit(limits.max_connections)?;
        let admin = AdminAccess::new(token.as_deref(), local);
        warn_of_open_access(&admin, clients.is_some(), local);
        let ticker = registry.runtime().ticker_priority();
        let metrics = metrics::Metrics::new(
            Arc::clone(&registry),
            export.as_ref().and_then(OtlpExport::recorder),
        );
        panics::count_and_log(metrics.panics());
        let decider = JsonDecider::new(registry, FileAccess::Inside(policy_dir.clone()))
            .with_request_params(!args.no_request_params);
        let app = Arc::new(
            app::App::new(metrics, decider, admin, clients, policy_dir, args).with_xds(xds),
        );
        let draining = Arc::clone(&app.draining);
        reload_on_hangup(Arc::clone(app.decider.registry()))?;
        let connections = app.metrics.connections().clone();
        // Listening for the stop signals before saying the server listens: a SIGTERM sent as
        // soon as it says so is a graceful stop, not the default action's kill.
        let signals = Arc::new(tokio::sync::Mutex::new(StopSignals::listen()?));
        println!("rebound serve listening on http://{local}");
        tracing::info!(%local, config = %args.config.display(), ?limits, ?ticker_asked, ?ticker,
            "serving");
        let stop_signals = Arc::clone(&signals);
        let (ended, left) = listener::serve(
            listener,
            routes::router(app),
            limits,
            connections,
            move || {
                let (signals, draining) = (Arc::clone(&stop_signals), Arc::clone(&draining));
                Box::pin(async move {
                    signals.lock().await.next().await;
                    // `/ready` says so from now on.
                    draining.store(true, Ordering::Relaxed);
                })
            },
        )
        .await;
        if let Some(export) = export {
            flush_export(export, ended, left, &signals).await;
        }
        anyhow::Ok(())
    })?;
    // Nothing left to wait for: a reload still compiling on a blocking thread is abandoned.
    server_runtime.shutdown_background();
    close_decision_log(&registry_at_exit, &args.limits);
    Ok(())
}

/// The decision log writes the lines it holds before the process ends, within the drain
/// timeout: a sink that does not take them cannot hold the exit.
fn close_decision_log(registry: &PolicyRegistry, limits: &limits::Limits) {
    let left = registry.close_decision_log(limits.drain_timeout());
    if left > 0 {
        tracing::warn!(
            lines = left,
            drain_timeout_ms = limits.drain_timeout_ms,
            "decision log: lines not written before exit (the sink did not take them in time)"
        );
    }
}

/// On each SIGHUP, reads the configuration file again and every policy's component (what the
/// watch does on a change), on a blocking thread: a compile takes seconds.
fn reload_on_hangup(registry: Arc<PolicyRegistry>) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangup = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                tracing::info!("SIGHUP: reloading the configuration and every policy");
                let registry = Arc::clone(&registry);
                let _ = tokio::task::spawn_blocking(move || {
                    // Errors are logged and kept in the status (`/health`) by both.
                    let _ = registry.reload_config();
                    for policy in registry.status().policies {
                        let _ = registry.reload(&policy.name);
                    }
                })
                .await;
            }
        });
    }
    #[cfg(not(unix))]
    let _ = registry;
    Ok(())
}

/// The signals that stop the server, listened for from when they are made.
struct StopSignals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Listens for SIGTERM and SIGINT (on other systems, Ctrl-C when asked).
    fn listen() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(StopSignals {
                terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
                interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals {})
    }

    /// Resolves on the next SIGINT (Ctrl-C) or SIGTERM.
    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => tracing::info!("SIGINT: shutting down"),
            _ = self.terminate.recv() => tracing::info!("SIGTERM: shutting down"),
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("SIGINT: shutting down");
        }
    }
}
