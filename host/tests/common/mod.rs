//! Helpers shared by the spec tests: driving the orchestrator synchronously at a fixed moment.
#![allow(dead_code)] // each test binary uses a different subset

use std::time::{Duration, Instant};

use std::sync::Mutex;

use rebound::errormap::{ErrorMap, RetrySpec};
use rebound::{
    Decision, DecisionContext, Orchestrator, Request, RequestType, RetryAction, RetryReason,
    SyncStrategy,
};

/// A request of `ty` with `timeout_ms`, started at `start`.
pub(crate) fn request(ty: RequestType, timeout_ms: u64, start: Instant) -> Request {
    Request::new(1, ty, Duration::from_millis(timeout_ms))
        .expect("valid timeout")
        .with_start(start)
}

/// Runs the orchestrator at `start + elapsed_ms`.
pub(crate) fn decide_at(
    orchestrator: &Orchestrator,
    request: &mut Request,
    reason: &RetryReason,
    elapsed_ms: u64,
) -> Decision {
    let now = request.start() + Duration::from_millis(elapsed_ms);
    futures::executor::block_on(orchestrator.decide(request, &DecisionContext::new(reason).at(now)))
}

/// The delay of a retry decision, panicking with the decision otherwise.
pub(crate) fn retry_delay_ms(decision: &Decision) -> u64 {
    match decision {
        Decision::Retry(plan) => plan.delay.as_millis() as u64,
        other => panic!("expected a retry, got {other:?}"),
    }
}

/// The error name of a failing decision, panicking otherwise.
pub(crate) fn fail_name(decision: &Decision) -> &'static str {
    match decision {
        Decision::Fail(error) => error.name(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Path of a fixture error map.
pub(crate) fn error_map_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/error_maps")
        .join(name)
}

/// Records the error-map retry spec every decision is given, and retries after 1 ms.
#[derive(Debug, Default)]
pub(crate) struct SeesSpec(pub Mutex<Vec<Option<RetrySpec>>>);

impl rebound::Strategy for SeesSpec {
    fn name(&self) -> &str {
        "sees-spec"
    }
}

impl SyncStrategy for SeesSpec {
    fn answer(&self, _: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let spec = context.error_map_spec().copied();
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(spec);
        RetryAction::after(Duration::from_millis(1))
    }
}

/// An error map whose status 0x7ff0 is retried with a constant spec (reference 004).
pub(crate) fn error_map_with_spec() -> ErrorMap {
    ErrorMap::parse(
        r#"{"version":2,"revision":1,"errors":{"7ff0":{"name":"X","desc":"","attrs":["auto-retry"],
        "retry":{"strategy":"constant","interval":5,"after":5,"max-duration":100}}}}"#,
    )
    .expect("a valid error map")
}

/// Where a test's tracing subscriber writes: cloned into the subscriber, read back as text.
#[derive(Clone, Default)]
pub(crate) struct LogBuffer(std::sync::Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for LogBuffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The first TOML code block after the heading `heading` of the Markdown `doc`.
pub(crate) fn toml_block_after<'d>(doc: &'d str, heading: &str) -> &'d str {
    let section = &doc[doc
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}`"))..];
    let start = section.find("```toml\n").expect("a toml block") + "```toml\n".len();
    &section[start..start + section[start..].find("```").expect("the block's end")]
}

/// What `f` logs through `tracing` at `level` and above (plain text, no colours).
pub(crate) fn logged_at(level: tracing::Level, f: impl FnOnce()) -> String {
    let buf = LogBuffer::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    buf.text()
}

/// A current-thread tokio runtime on a paused clock, for a synchronous test that drives the
/// executor (no test sleeps for real).
pub(crate) fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime")
}

/// A strategy named `always` that asks for a retry after its delay whatever the request: the
/// adversary of the safety guard.
#[derive(Debug)]
pub(crate) struct AlwaysRetry(pub Duration);

impl rebound::Strategy for AlwaysRetry {
    fn name(&self) -> &str {
        "always"
    }
}

impl SyncStrategy for AlwaysRetry {
    fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        RetryAction::after(self.0)
    }
}

/// An orchestrator whose strategy always asks for a retry after `ms`.
pub(crate) fn always_retry(ms: u64) -> Orchestrator {
    Orchestrator::new(std::sync::Arc::new(AlwaysRetry(Duration::from_millis(ms))))
}

/// A strategy named `answer` that answers one fixed action whatever the request.
#[derive(Debug)]
pub(crate) struct Answer(pub RetryAction);

impl rebound::Strategy for Answer {
    fn name(&self) -> &str {
        "answer"
    }
}

impl SyncStrategy for Answer {
    fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        self.0
    }
}
