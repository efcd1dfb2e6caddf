//! Log lines on standard error, as text or one JSON object a line, filtered by `RUST_LOG` or
//! the command's default; beside them, for `serve`, the OTLP export's span layer, which has a
//! filter of its own.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The format of log lines.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text each.
    Text,
    /// One JSON object a line, with the same fields (`timestamp`, `level`, `target`,
    /// `fields`).
    Json,
}

/// A layer installed beside the log lines.
pub type ExtraLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// The log lines in `format`, at the levels `RUST_LOG` says (else `default`), and `extra` if
/// given.
fn subscriber(
    default: &str,
    format: LogFormat,
    extra: Option<ExtraLayer>,
) -> impl tracing::Subscriber + Send + Sync {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines: ExtraLayer = match format {
        LogFormat::Text => Box::new(
            lines
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_filter(filter),
        ),
        LogFormat::Json => Box::new(lines.json().with_filter(filter)),
    };
    let mut layers = vec![lines];
    layers.extend(extra);
    tracing_subscriber::registry().with(layers)
}

/// Installs the process's subscriber ([`subscriber`]).
pub fn init(default: &str, format: LogFormat, extra: Option<ExtraLayer>) {
    subscriber(default, format, extra).init();
}

/// Runs `f` with the log lines of [`init`] (without an extra layer) before the process's
/// subscriber is installed: for what a command does before it knows that layer.
pub fn before_init<T>(default: &str, format: LogFormat, f: impl FnOnce() -> T) -> T {
    tracing::subscriber::with_default(subscriber(default, format, None), f)
}
