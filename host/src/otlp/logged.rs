//! An exporter that says when the collector does not take an export: at most one line a
//! second (an unreachable collector fails every export), with how many were left out.

use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

use crate::LogRateLimit;

/// `inner`, its failed exports logged.
#[derive(Debug)]
pub(super) struct Logged<E> {
    signal: &'static str,
    inner: E,
    lines: LogRateLimit,
}

impl<E> Logged<E> {
    pub(super) fn new(signal: &'static str, inner: E) -> Self {
        Logged {
            signal,
            inner,
            lines: LogRateLimit::new(1),
        }
    }

    fn note(&self, result: OTelSdkResult) -> OTelSdkResult {
        if let Err(error) = &result {
            if let Some(left_out) = self.lines.allow() {
                tracing::warn!(
                    signal = self.signal,
                    %error,
                    left_out,
                    "the OpenTelemetry collector did not take an export"
                );
            }
        }
        result
    }
}

impl<E: SpanExporter> SpanExporter for Logged<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.note(result)
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

impl<E: PushMetricExporter> PushMetricExporter for Logged<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.note(result)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
