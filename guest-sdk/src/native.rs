//! Host calls answered natively, so policy logic runs under plain `cargo test`: each call is
//! served by the host library's own implementation (the same code the real host runs).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Instant;

use crate::bindings::rebound::policy::host::LogLevel;
use crate::convert::*;
use crate::{Progress, Request, RequestFacts, RetryAction, RetryReason, RetrySpec};

thread_local! {
    static CALL: RefCell<testing::Call> = RefCell::new(testing::Call::new());
}

pub(crate) fn log(level: LogLevel, message: &str) {
    eprintln!("[policy {level:?}] {message}");
}

pub(crate) fn abort(message: &str) {
    panic!("policy aborted: {message}");
}

pub(crate) fn best_effort(request: RequestFacts, reason: &RetryReason) -> RetryAction {
    let now = Instant::now();
    let decision = rebound::BestEffort::default_decision(
        &request_to_host(&request, now),
        &reason_to_host(reason),
    );
    let pushback = server_delay_ms().map(rebound::Pushback::from_millis);
    action_to_wit(&rebound::Pushback::honour(pushback, decision))
}

pub(crate) fn server_delay_ms() -> Option<i64> {
    CALL.with(|c| c.borrow().server_delay_ms)
}

pub(crate) fn error_map_spec() -> Option<RetrySpec> {
    CALL.with(|c| c.borrow().spec)
}

pub(crate) fn progress() -> Progress {
    CALL.with(|c| c.borrow().progress.unwrap_or(Progress::Processed))
}

pub(crate) fn attempt_timeout_ms() -> Option<u64> {
    CALL.with(|c| c.borrow().attempt_timeout_ms)
}

pub(crate) fn observed_latency_ms(_percentile: f64) -> Option<u64> {
    CALL.with(|c| c.borrow().observed_latency_ms)
}

pub(crate) fn client_context(key: &str) -> Option<String> {
    CALL.with(|c| c.borrow().context.get(key).cloned())
}

pub(crate) fn retry_budget(name: &str, per_second: u32, burst: u32) -> bool {
    static BUDGETS: OnceLock<rebound::TokenBuckets> = OnceLock::new();
    BUDGETS
        .get_or_init(Default::default)
        .try_acquire(name, per_second, burst)
}

/// Test helpers: what the host would make visible to a call.
pub mod testing {
    use super::*;

    /// The per-call context a policy can read through [`crate::host`]: client context entries,
    /// the error-map retry spec, the server's pushback, how far the attempt got, the attempt
    /// timeout that cut it, and an observed latency.
    #[derive(Debug, Clone, Default)]
    pub struct Call {
        pub(super) context: BTreeMap<String, String>,
        pub(super) spec: Option<RetrySpec>,
        pub(super) server_delay_ms: Option<i64>,
        pub(super) progress: Option<Progress>,
        pub(super) attempt_timeout_ms: Option<u64>,
        pub(super) observed_latency_ms: Option<u64>,
    }

    impl Call {
        /// An empty call context.
        pub fn new() -> Self {
            Self::default()
        }

        /// Adds a client-context entry.
        pub fn client_context(mut self, key: &str, value: &str) -> Self {
            self.context.insert(key.to_owned(), value.to_owned());
            self
        }

        /// Sets the error-map retry spec.
        pub fn error_map_spec(mut self, spec: RetrySpec) -> Self {
            self.spec = Some(spec);
            self
        }

        /// Sets the server's pushback in ms (negative: the server asked not to retry).
        pub fn server_delay_ms(mut self, millis: i64) -> Self {
            self.server_delay_ms = Some(millis);
            self
        }

        /// Sets how far the failed attempt got (processed unless set).
        pub fn progress(mut self, progress: Progress) -> Self {
            self.progress = Some(progress);
            self
        }

        /// Sets the attempt timeout that cut the failed attempt, in ms.
        pub fn attempt_timeout_ms(mut self, millis: u64) -> Self {
            self.attempt_timeout_ms = Some(millis);
            self
        }

        /// Sets what `host::observed_latency_ms` answers, whatever the percentile asked.
        pub fn observed_latency_ms(mut self, millis: u64) -> Self {
            self.observed_latency_ms = Some(millis);
            self
        }

        /// Runs `f` with this context visible to host calls on this thread.
        pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
            let previous = CALL.with(|c| c.replace(self));
            let out = f();
            CALL.with(|c| c.replace(previous));
            out
        }
    }

    /// A request for tests: `request_type` with its derived idempotency, 2.5 s timeout,
    /// dispatched (change its facts with [`Request::from_facts`]).
    pub fn request(request_type: crate::RequestType, retry_attempts: u32) -> Request {
        let host = request_type_to_host(request_type);
        Request::from_facts(RequestFacts {
            id: 1,
            request_type,
            service: service_to_wit(host.service()),
            idempotent: host.is_idempotent(false, None),
            readonly: false,
            retry_attempts,
            elapsed_ms: 0,
            timeout_ms: 2500,
            dispatched: true,
            consistency: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{request, Call};
    use crate::{host, RequestType, Retry, RetryAction, RetryReason};

    /// `wit/policy.wit` 0.4.0 and RFC 9110 §9.2.2: natively, a test gives a plain HTTP
    /// request its method, authority, route and retries since the pushback, and
    /// `may_be_sent_again` is the host's guard: a POST already sent is never sent again, one
    /// never sent is for a reason that allows it, not after an HTTP status.
    #[test]
    fn an_http_request_has_its_facts_and_the_guard_natively() {
        use crate::{HttpMethod, Service};
        let post = request(RequestType::Http, 2)
            .with_method(HttpMethod::Post)
            .with_authority("shop.example")
            .with_route("/orders");
        assert_eq!(post.service(), Service::Http);
        assert_eq!(post.method(), Some(HttpMethod::Post));
        assert_eq!(post.authority().as_deref(), Some("shop.example"));
        assert_eq!(post.route().as_deref(), Some("/orders"));
        assert_eq!(post.retries_since_pushback(), 2);
        assert!(!post.idempotent());
        assert!(!post.may_be_sent_again(&RetryReason::SocketNotAvailable));
        let mut unsent = post.with_retries_since_pushback(0);
        unsent.dispatched = false;
        assert_eq!(unsent.retries_since_pushback(), 0);
        assert!(unsent.may_be_sent_again(&RetryReason::SocketNotAvailable));
        assert!(!unsent.may_be_sent_again(&RetryReason::HttpStatus(503)));
    }

    /// `wit/policy.wit` 0.6.0, `failure.attempt-timeout-ms`, `failure.progress` and
    /// `host.observed-latency-ms`: natively, a test sets what each answers for a call, and
    /// outside it they answer as for a processed failure no timeout cut, with no latency known.
    #[test]
    fn a_test_sets_the_attempt_s_facts_and_an_observed_latency() {
        use crate::Progress;
        let (timeout, progress, latency) = Call::new()
            .attempt_timeout_ms(200)
            .progress(Progress::Refused)
            .observed_latency_ms(25)
            .run(|| {
                (
                    host::attempt_timeout_ms(),
                    host::progress(),
                    host::observed_latency_ms(95.0),
                )
            });
        assert_eq!(
            (timeout, progress, latency),
            (Some(200), Progress::Refused, Some(25))
        );
        assert_eq!(host::attempt_timeout_ms(), None);
        assert_eq!(host::progress(), Progress::Processed);
        assert_eq!(host::observed_latency_ms(95.0), None);
    }

    /// `wit/policy.wit`, `host.best-effort` and `failure.server-delay-ms` (since 0.3.0): natively, as
    /// in the host, best effort is no sooner than the pushback a test sets for the call, and
    /// none at all when the server said stop.
    #[test]
    fn best_effort_honours_the_server_pushback_set_for_the_call() {
        let get = request(RequestType::Get, 0);
        let reason = RetryReason::KvLocked;
        let plain = host::best_effort(&get, &reason);
        assert!(
            matches!(plain, RetryAction::Retry(Retry { delay_ms, .. }) if delay_ms < 2_000),
            "{plain:?}"
        );
        let (delay, pushed_back, stopped) = Call::new().server_delay_ms(2_000).run(|| {
            (
                host::server_delay_ms(),
                host::best_effort(&get, &reason),
                Call::new()
                    .server_delay_ms(-1)
                    .run(|| host::best_effort(&get, &reason)),
            )
        });
        assert_eq!(delay, Some(2_000));
        assert!(
            matches!(
                pushed_back,
                RetryAction::Retry(Retry {
                    delay_ms: 2_000,
                    ..
                })
            ),
            "{pushed_back:?}"
        );
        assert_eq!(stopped, RetryAction::NoRetry);
        assert_eq!(host::server_delay_ms(), None, "outside the call");
    }
}
