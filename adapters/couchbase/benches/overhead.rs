//! What the adapter adds to a decision: the SDK's question (idempotence,
//! retries so far, the SDK's reason) answered through the strategy (reason mapped, request made,
//! the plan mapped to a `RetryAction`) beside the registry asked directly for the same reason
//! about a request built as a caller would build it, in one run, with the built-in best-effort
//! policy. Run: `env -u RUST_BACKTRACE cargo bench -p rebound-couchbase --bench overhead`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use couchbase_core::retry::RetryReason as SdkReason;
use futures_util::FutureExt;
use rebound::{reasons, DecisionContext, Request, RequestType};
use rebound_couchbase::ReboundRetryStrategy;

#[path = "../../../host/benches/support/builtin_registry.rs"]
mod builtin_registry;
#[path = "../../../host/benches/support/measure.rs"]
mod measure;
use builtin_registry::builtin_registry;
use measure::measure_interleaved;

fn main() {
    let registry = builtin_registry("best-effort");
    let strategy = ReboundRetryStrategy::new(Arc::clone(&registry));
    let times = measure_interleaved(
        31,
        50_000,
        &mut [
            &mut || {
                // What a caller of the registry builds for the SDK's question: the request
                // (its type, idempotence and retries so far) and the reason.
                let mut request = Request::new(1, RequestType::Get, Duration::from_secs(86_400))
                    .unwrap()
                    .with_idempotent(true)
                    .with_retry_attempts(2);
                let context = DecisionContext::new(&reasons::KV_LOCKED);
                let decided = registry.decide(&mut request, &context).now_or_never();
                let _ = black_box(decided.unwrap().unwrap());
            },
            &mut || {
                black_box(strategy.decide(true, 2, SdkReason::KvLocked));
            },
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    println!("| a KV_LOCKED get retried twice before (1 thread) | ns | ratio |");
    println!("| --- | ---: | ---: |");
    println!("| registry asked directly | {:.0} | 1.00 |", ns(times[0]));
    println!(
        "| through the couchbase strategy (the SDK's question) | {:.0} | {:.2} |",
        ns(times[1]),
        ns(times[1]) / ns(times[0])
    );
}
