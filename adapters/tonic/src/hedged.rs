//! One attempt of a hedged call (gRFC A6 "Hedging Policy", docs/hedging.md): its copies go as
//! the host's [`HedgeSchedule`] says, each on a clone of the channel made ready, each carrying
//! `grpc-previous-rpc-attempts` (the copies and attempts before it) and the time left as its
//! `grpc-timeout`; the first OK answer wins and the other copies are dropped (their streams
//! reset); a fatal status, or the last copy's failure with none due, is the attempt's failure.
//! No copy goes once the call's deadline has passed. `rebound_hedges_total` counts the copies
//! sent, won and cancelled, as the executor's.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use http::header::HeaderValue;
use rebound::hedge::{CopyEnd, HedgeSchedule};
use rebound::telemetry::{record_hedges, HedgeEvent};
use rebound::{reasons, PolicyControls, Progress, Request};
use tonic::body::Body as TonicBody;
use tower_service::Service;

use crate::attempt::{send, BoxError, Failed, Sent};
use crate::response::{format_timeout, GRPC_PREVIOUS_RPC_ATTEMPTS, GRPC_TIMEOUT};

/// What every copy of one attempt is sent with.
pub(crate) struct Copies<'a> {
    /// The call's parts as the attempt sends them.
    pub parts: &'a http::request::Parts,
    /// The call's message.
    pub bytes: &'a bytes::Bytes,
    /// Attempts (and their copies) sent before this attempt.
    pub previous: u32,
    /// Whether the caller set a deadline (`grpc-timeout`), which each copy carries shrunk.
    pub has_deadline: bool,
    /// The call's controls, told the latency of each copy the server answered.
    pub policy: &'a PolicyControls,
}

/// A copy's call: made ready, then sent.
type CopyCall<'s, B> = Pin<Box<dyn Future<Output = Sent<B>> + Send + 's>>;

impl Copies<'_> {
    /// Copy `copy` of the call of `request`, on `service` (a clone of the channel).
    fn copy<'s, S, B>(&self, mut service: S, copy: u32, request: &Request) -> CopyCall<'s, B>
    where
        S: Service<http::Request<TonicBody>, Response = http::Response<B>> + Clone + Send + 's,
        S::Future: Send,
        S::Error: Into<BoxError>,
        B: 's,
    {
        let mut parts = self.parts.clone();
        let previous = self.previous + copy;
        if previous > 0 {
            parts
                .headers
                .insert(GRPC_PREVIOUS_RPC_ATTEMPTS, HeaderValue::from(previous));
        }
        if self.has_deadline {
            let left = request.remaining_at(Instant::now());
            if let Ok(value) = HeaderValue::from_str(&format_timeout(left)) {
                parts.headers.insert(GRPC_TIMEOUT, value);
            }
        }
        let bytes = self.bytes.clone();
        Box::pin(async move {
            if let Err(error) = poll_fn(|cx| service.poll_ready(cx)).await {
                // The channel could not take it: this copy was not sent.
                let reason = reasons::SOCKET_NOT_AVAILABLE;
                let failed = Failed::Transport(reason, error.into(), Progress::Processed);
                return Sent::Failed(failed, false);
            }
            send(&mut service, parts, bytes).await
        })
    }

    /// Runs the copies of `request`'s attempt as `schedule` (started as the first goes) says,
    /// each on a clone of `inner`.
    pub(crate) async fn run<S, B>(
        &self,
        inner: S,
        mut schedule: HedgeSchedule,
        request: &Request,
    ) -> Sent<B>
    where
        S: Service<http::Request<TonicBody>, Response = http::Response<B>> + Clone + Send,
        S::Future: Send,
        S::Error: Into<BoxError>,
    {
        let mut running = vec![(0, Instant::now(), self.copy(inner.clone(), 0, request))];
        let mut timer = Box::pin(tokio::time::sleep(std::time::Duration::ZERO));
        let mut reached = false;
        let mut last = None;
        loop {
            let due = schedule.next_due();
            if running.is_empty() && due.is_none() {
                let failed = last.expect("a copy failed before none was left");
                return Sent::Failed(failed, reached);
            }
            if let Some((at, _)) = due {
                timer.as_mut().reset(tokio::time::Instant::from_std(at));
            }
            let ended = poll_fn(|cx| {
                for at in 0..running.len() {
                    if let Poll::Ready(sent) = running[at].2.as_mut().poll(cx) {
                        let (copy, started, _) = running.swap_remove(at);
                        if sent.answered() {
                            self.policy.attempt_answered(request, started.elapsed());
                        }
                        return Poll::Ready(Some((copy, sent)));
                    }
                }
                if due.is_some() && timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                Poll::Pending
            })
            .await;
            let now = Instant::now();
            match ended {
                Some((copy, Sent::Answered(response))) => {
                    tracing::debug!(copy, cancelled = running.len(), "copy answered first");
                    record_hedges(HedgeEvent::Won, u64::from(copy > 0));
                    record_hedges(HedgeEvent::Cancelled, running.len() as u64);
                    return Sent::Answered(response);
                }
                Some((_, Sent::Failed(failed, sent))) => {
                    reached |= sent;
                    let (reason, pushback) = failed.reason();
                    let progress = failed.progress();
                    if schedule.failed(request, reason, pushback, progress, now) == CopyEnd::End {
                        record_hedges(HedgeEvent::Cancelled, running.len() as u64);
                        return Sent::Failed(failed, reached);
                    }
                    last = Some(failed);
                }
                None if request.remaining_at(now).is_zero() => {
                    // The deadline has passed: the copies out go on, none more is sent.
                    schedule.close();
                }
                None => {
                    if schedule.send_due(request, now).is_some() {
                        let copy = schedule.copies() - 1;
                        let call = self.copy(inner.clone(), copy, request);
                        running.push((copy, Instant::now(), call));
                        record_hedges(HedgeEvent::Sent, 1);
                    }
                }
            }
        }
    }
}
