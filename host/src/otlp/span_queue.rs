//! The bound on spans waiting for export: a span ended while `max` are held (queued, or in a
//! batch being exported) is dropped at once, counted in
//! [`TELEMETRY_DROPPED_TOTAL`](crate::telemetry::TELEMETRY_DROPPED_TOTAL) and logged at most
//! once a second, so that a slow or unreachable collector never makes the application's
//! threads wait or its memory grow. The SDK's batch processor behind it has room for `max`,
//! so it never drops one itself.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;

use crate::LogRateLimit;

/// The spans held, and those dropped.
#[derive(Debug)]
pub(super) struct SpanQueue {
    held: AtomicUsize,
    max: usize,
    dropped: AtomicU64,
    lines: LogRateLimit,
}

impl SpanQueue {
    /// A queue holding at most `max` spans.
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(SpanQueue {
            held: AtomicUsize::new(0),
            max,
            dropped: AtomicU64::new(0),
            lines: LogRateLimit::new(1),
        })
    }

    /// Spans dropped so far.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Takes a place for one span, or counts it dropped.
    fn hold(&self) -> bool {
        let held = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.max).then_some(held + 1)
            });
        if held.is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            crate::telemetry::record_export_dropped("spans", 1);
            if let Some(left_out) = self.lines.allow() {
                tracing::warn!(
                    max_queued_spans = self.max,
                    left_out,
                    "a span was dropped: the export queue is full (the collector is slow or unreachable)"
                );
            }
        }
        held.is_ok()
    }

    /// Gives back the places of `n` spans whose export ended.
    fn release(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::AcqRel);
    }
}

/// The SDK's batch processor behind the bound.
#[derive(Debug)]
pub(super) struct BoundedProcessor {
    pub(super) inner: BatchSpanProcessor,
    pub(super) queue: Arc<SpanQueue>,
}

impl SpanProcessor for BoundedProcessor {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.queue.hold() {
            self.inner.on_end(span);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// An exporter that gives back the places of the spans it exported (or failed to).
#[derive(Debug)]
pub(super) struct Releasing<E> {
    pub(super) inner: E,
    pub(super) queue: Arc<SpanQueue>,
}

impl<E: SpanExporter> SpanExporter for Releasing<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        self.queue.release(n);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
