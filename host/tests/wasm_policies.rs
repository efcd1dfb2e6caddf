//! Spec: the policies without a native twin — the opt-in error-map spec timings (reference 004
//! "Retry Intervals", opted into as reference 001 "KV Error Map Handling" allows) and the
//! host-kept retry budget —, the time such policies read (the caller's decision moment), and the
//! `best-effort` answer, which the host decides. The error-map, budget and time rules hold for
//! the components built for `rebound:policy@0.1.0` too, which read the spec through
//! `host.error-map-spec` and their time from the request record (docs/wit-versions.md).

use crate::common;
use crate::wasm_support;

use std::time::{Duration, Instant};

use rebound::backoff::ExponentialBackoff;
use rebound::errormap::{RetrySpec, SpecStrategy};
use rebound::wasm::{WasmStrategy, WasmStrategyConfig};
use rebound::DecisionContext;
use rebound::Pushback;
use rebound::SyncStrategy;
use rebound::{
    grid, reasons, BestEffort, Decision, Orchestrator, Request, RequestType, RetryAction,
};

/// The current build of Rust policy `name` and its `rebound:policy@0.1.0` fixture.
fn both_versions(name: &str) -> [String; 2] {
    [name.to_owned(), wasm_support::released_0_1_0(name)]
}

fn get(attempts: u32) -> Request {
    Request::new(1, RequestType::Get, Duration::from_secs(10))
        .unwrap()
        .with_retry_attempts(attempts)
}

/// With a spec attached, KV_ERROR_MAP_RETRY_INDICATED follows the spec: `after`, then the
/// exponential interval capped at `ceil`; other reasons, or no spec, are best effort.
#[test]
fn honor_error_map_spec_follows_the_spec() {
    for guest in both_versions("honor_error_map_spec") {
        honor_error_map_spec_follows_the_spec_in(&guest);
    }
}

fn honor_error_map_spec_follows_the_spec_in(guest: &str) {
    let strategy = wasm_support::strategy(guest, WasmStrategyConfig::default());
    let spec = RetrySpec {
        strategy: SpecStrategy::Exponential,
        after: 50,
        interval: 2,
        ceil: Some(20),
        max_duration: None,
    };
    let delays: Vec<_> = (0..6)
        .map(|attempts| {
            let context = DecisionContext::new(&reasons::KV_ERROR_MAP_RETRY_INDICATED)
                .with_error_map_spec(Some(spec));
            strategy.answer(&get(attempts), &context)
        })
        .collect();
    let ms = |d| RetryAction::after(Duration::from_millis(d));
    assert_eq!(
        delays,
        vec![ms(50), ms(2), ms(4), ms(8), ms(16), ms(20)],
        "{guest}"
    );
    let best_effort = BestEffort::<rebound::backoff::ExponentialBackoff>::default();
    assert_eq!(
        strategy.answer(
            &get(3),
            &DecisionContext::new(&reasons::KV_ERROR_MAP_RETRY_INDICATED)
        ),
        best_effort.answer(
            &get(3),
            &DecisionContext::new(&reasons::KV_ERROR_MAP_RETRY_INDICATED)
        ),
        "no spec attached: best effort"
    );
    assert_eq!(
        strategy.answer(&get(3), &DecisionContext::new(&reasons::KV_LOCKED)),
        best_effort.answer(&get(3), &DecisionContext::new(&reasons::KV_LOCKED))
    );
}

/// `docs/decisions.md` "Guest token buckets": the bucket lets `burst` retries through, then
/// refuses, because the host keeps the bucket between calls; a second policy naming the same
/// bucket has its own, untouched by the first one's retries.
#[test]
fn retry_budget_is_host_kept_and_per_policy() {
    for guest in both_versions("retry_budget") {
        retry_budget_is_host_kept_and_per_policy_in(&guest);
    }
}

fn retry_budget_is_host_kept_and_per_policy_in(guest: &str) {
    let config = WasmStrategyConfig::default().with_params([
        ("burst", "4"),
        ("per_second", "0"),
        ("budget", "shared"),
    ]);
    let make = || WasmStrategy::new(wasm_support::load(guest).unwrap(), config.clone()).unwrap();
    let (a, b) = (make(), make());
    let retried = |strategy: &WasmStrategy| {
        (0..10)
            .filter(|_| {
                strategy
                    .answer(&get(0), &DecisionContext::new(&reasons::KV_LOCKED))
                    .is_retry()
            })
            .count()
    };
    assert_eq!(retried(&a), 4, "{guest}");
    assert_eq!(
        retried(&b),
        4,
        "{guest}: another policy's bucket of the same name"
    );
    assert_eq!(retried(&a), 0, "{guest}");
    assert_eq!(
        (a.stats().budget_buckets, a.stats().budget_refusals),
        (1, 0)
    );
    // Best effort's own refusals are kept (a non-idempotent in-flight failure is never retried).
    let upsert = Request::new(2, RequestType::Upsert, Duration::from_secs(1)).unwrap();
    assert_eq!(
        b.answer(
            &upsert,
            &DecisionContext::new(&reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT)
        ),
        RetryAction::NoRetry
    );
}

/// A request that starts an hour from now: the real clock is before its start, so only the
/// decision moment the caller gives can make time pass for it.
fn get_in_an_hour() -> Request {
    get(0).with_start(Instant::now() + Duration::from_secs(3600))
}

/// `Orchestrator::decide` with a context fixed `at` a moment decides at the caller's moment (replays, simulations): a
/// policy's `elapsed-ms` and its retry budget follow that moment, not the real clock.
#[test]
fn a_policy_reads_the_decision_moment_the_caller_gives() {
    for [spec_guest, budget_guest] in [
        ["honor_error_map_spec", "retry_budget"].map(str::to_owned),
        ["honor_error_map_spec", "retry_budget"].map(wasm_support::released_0_1_0),
    ] {
        reads_the_decision_moment(&spec_guest, &budget_guest);
    }
}

fn reads_the_decision_moment(spec_guest: &str, budget_guest: &str) {
    let spec = RetrySpec {
        strategy: SpecStrategy::Constant,
        after: 50,
        interval: 10,
        ceil: None,
        max_duration: Some(100),
    };
    let orchestrator = Orchestrator::new(wasm_support::strategy(
        spec_guest,
        WasmStrategyConfig::default(),
    ));
    let decide_at = |elapsed_ms| {
        let mut request = get_in_an_hour();
        let now = request.start() + Duration::from_millis(elapsed_ms);
        let context = DecisionContext::new(&reasons::KV_ERROR_MAP_RETRY_INDICATED)
            .with_error_map_spec(Some(spec))
            .at(now);
        futures::executor::block_on(orchestrator.decide(&mut request, &context))
    };
    // 10 ms into the request the spec's `after` applies; 150 ms in, its 100 ms are used up.
    assert_eq!(common::retry_delay_ms(&decide_at(10)), 50);
    assert_eq!(common::fail_name(&decide_at(150)), "RequestCanceled");

    let config = WasmStrategyConfig::default().with_params([
        ("burst", "1"),
        ("per_second", "1"),
        ("budget", "virtual"),
    ]);
    let budgeted = Orchestrator::new(wasm_support::strategy(budget_guest, config));
    let start = get_in_an_hour().start();
    let at = |elapsed_ms| {
        let mut request = get(0).with_start(start);
        common::decide_at(&budgeted, &mut request, &reasons::KV_LOCKED, elapsed_ms)
    };
    assert!(matches!(at(0), Decision::Retry(_)), "the burst of one");
    assert!(!matches!(at(0), Decision::Retry(_)), "the bucket is empty");
    // A virtual second and a half later the bucket holds a token again.
    assert!(
        matches!(at(1_500), Decision::Retry(_)),
        "refilled by the decision moment"
    );
}

/// Reference 001 "Best Effort" and the reason table's allowsNonIdempotentRetry: a policy that
/// answers the `best-effort` action gets the host's best effort, decided by the host, so a
/// non-idempotent request is retried only for a reason that allows it, exactly as when the
/// policy asked `host.best-effort` and returned its answer (the only way before the action):
/// the `rebound:policy@0.1.0` builds of the same policies, which do just that, are held to the
/// same rule.
#[test]
fn a_best_effort_answer_is_the_host_best_effort_and_keeps_non_idempotent_requests_safe() {
    let native = BestEffort::<ExponentialBackoff>::default();
    let asking_host = [
        "fail_fast_on_open_circuit",
        "no_retry_for_robots",
        "c_best_effort",
    ];
    let guests = ["zig_best_effort".to_owned()]
        .into_iter()
        .chain(asking_host.map(str::to_owned))
        .chain(
            wasm_support::released_versions()
                .into_iter()
                .flat_map(|version| asking_host.map(|name| wasm_support::released(version, name))),
        );
    // Best effort honours the server's pushback, whoever asks for it.
    let pushbacks = [
        None,
        Some(Pushback::After(Duration::from_secs(2))),
        Some(Pushback::Stop),
    ];
    for guest in guests {
        let guest = guest.as_str();
        let strategy = wasm_support::strategy(guest, WasmStrategyConfig::default());
        let version = wasm_support::load(guest).unwrap().wit_version();
        for request_type in [
            RequestType::Get,
            RequestType::Upsert,
            RequestType::Increment,
        ] {
            for attempts in [0, 3] {
                let request = Request::new(1, request_type, Duration::from_secs(10))
                    .unwrap()
                    .with_retry_attempts(attempts);
                for (reason, pushback) in grid::every_reason()
                    .into_iter()
                    .flat_map(|reason| pushbacks.map(|pushback| (reason.clone(), pushback)))
                {
                    if guest.ends_with("fail_fast_on_open_circuit")
                        && reason == reasons::CIRCUIT_BREAKER_OPEN
                    {
                        continue; // the one reason it decides itself
                    }
                    let context = DecisionContext::new(&reason).with_pushback(pushback);
                    let answer = strategy.answer(&request, &context);
                    // docs/wit-versions.md: a reason its version has no case for reaches the
                    // policy as `other(NAME)`, and a policy that asks the host's best effort
                    // about what it was told gets best effort for that name.
                    let told = match version.has_case_for(reason.kind()) {
                        true => reason.clone(),
                        false => rebound::RetryReason::Other(reason.name().into()),
                    };
                    let told = DecisionContext::new(&told).with_pushback(pushback);
                    let expected = [&context, &told].map(|c| native.answer(&request, c));
                    assert!(
                        expected.contains(&answer),
                        "{guest}: {request_type:?} after {attempts} retries, {reason}, pushback {pushback:?}: {answer:?}, expected {:?}",
                        expected[0]
                    );
                    if !request.is_idempotent() && !reason.allows_non_idempotent_retry() {
                        assert_eq!(
                            answer,
                            RetryAction::NoRetry,
                            "{guest} retried a non-idempotent {request_type:?} for {reason}"
                        );
                    }
                }
            }
        }
    }
}

/// `wit/policy.wit`, `failure.server-delay-ms`, since 0.3.0: a policy
/// reads the server's pushback of the failure it decides — the delay in milliseconds, a
/// negative value when the server said stop, none when it said nothing — and never outside a
/// decision's own failure (the next decision without a pushback reads none). Built for 0.3.0
/// and for the current version.
#[test]
fn a_policy_reads_the_server_pushback_of_the_failure() {
    use rebound::wasm::WitVersion;
    for (guest, version) in [
        ("pushback_echo".to_owned(), WitVersion::CURRENT),
        (
            wasm_support::released(WitVersion::V0_3_0, "pushback_echo"),
            WitVersion::V0_3_0,
        ),
        (
            wasm_support::released(WitVersion::V0_4_0, "pushback_echo"),
            WitVersion::V0_4_0,
        ),
        (
            wasm_support::released(WitVersion::V0_5_0, "pushback_echo"),
            WitVersion::V0_5_0,
        ),
    ] {
        assert_eq!(wasm_support::load(&guest).unwrap().wit_version(), version);
        pushback_is_echoed(&wasm_support::strategy(
            &guest,
            WasmStrategyConfig::default(),
        ));
    }
}

fn pushback_is_echoed(echo: &WasmStrategy) {
    let retry_after = |millis| RetryAction::RetryAfter {
        delay: Duration::from_millis(millis),
        node: rebound::NodeChoice::Same,
        consistency: None,
        attempt_timeout: None,
    };
    let cases = [
        (
            Some(Pushback::After(Duration::from_millis(250))),
            retry_after(250),
        ),
        (None, RetryAction::Rethrow),
        (Some(Pushback::Stop), RetryAction::NoRetry),
        (
            Some(Pushback::from_retry_after(
                "7",
                std::time::SystemTime::now(),
            )),
            retry_after(7_000),
        ),
        (Some(Pushback::from_millis(-5)), RetryAction::NoRetry),
        (None, RetryAction::Rethrow),
    ];
    for (pushback, expected) in cases {
        let context =
            DecisionContext::new(&reasons::SERVICE_RESPONSE_CODE_INDICATED).with_pushback(pushback);
        assert_eq!(echo.answer(&get(0), &context), expected, "{pushback:?}");
    }
}

/// docs/wit-versions.md "Requests a version cannot describe": the versions before 0.4.0 have
/// no words for plain HTTP requests or gRPC calls, so a policy of one is not asked about one
/// and it is not retried by it (never a trap, never a retry): the best-effort policy, which
/// would retry an idempotent GET never sent, answers no retry, and its failure counters stay at
/// zero. A Couchbase request is still asked about.
#[test]
fn a_policy_is_not_asked_about_requests_its_version_cannot_describe() {
    use rebound::grpc::GrpcCode;
    use rebound::{HttpMethod, RetryReason};
    let guests = wasm_support::released_versions()
        .into_iter()
        .filter(|version| !version.describes(rebound::Service::Http))
        .map(|version| wasm_support::released(version, "best_effort"));
    let native = BestEffort::<ExponentialBackoff>::default();
    for guest in guests {
        let strategy = wasm_support::strategy(&guest, WasmStrategyConfig::default());
        let http = Request::new(1, RequestType::Http, Duration::from_secs(10))
            .unwrap()
            .with_method(HttpMethod::Get);
        let grpc = Request::new(2, RequestType::Grpc, Duration::from_secs(10))
            .unwrap()
            .with_route("/shop.Inventory/Get")
            .with_idempotent(true);
        for (request, reason) in [
            (&http, reasons::SOCKET_NOT_AVAILABLE),
            (&http, RetryReason::HttpStatus(503)),
            (&grpc, RetryReason::GrpcStatus(GrpcCode::Unavailable)),
        ] {
            let context = DecisionContext::new(&reason);
            assert!(native.answer(request, &context).is_retry(), "{reason}");
            assert_eq!(
                strategy.answer(request, &context),
                RetryAction::NoRetry,
                "{guest}"
            );
            assert_eq!(
                strategy.try_answer(request, &context),
                Ok(RetryAction::NoRetry)
            );
        }
        let stats = strategy.stats();
        assert_eq!((stats.decisions, stats.failures.len()), (0, 0), "{guest}");
        let context = DecisionContext::new(&reasons::KV_LOCKED);
        assert!(strategy.answer(&get(0), &context).is_retry(), "{guest}");
        assert_eq!(strategy.stats().decisions, 1, "{guest}");
    }
}

/// docs/wit-versions.md: a reason a policy's version has no case for (here `ATTEMPT_TIMEOUT`,
/// newer than every released version) reaches it by its name (`other`), and its answer
/// decides under the host's rules: `best_effort` retries an idempotent get, and the guard
/// refuses the retry of a non-idempotent write that was dispatched (reference 001), which then
/// ends as an ambiguous timeout (reference 002).
#[test]
fn a_reason_a_policy_s_version_lacks_reaches_it_by_name_under_the_host_s_rules() {
    let mut guests = vec!["best_effort".to_owned()];
    guests.extend(
        (wasm_support::released_versions().into_iter())
            .map(|version| wasm_support::released(version, "best_effort")),
    );
    for guest in guests {
        let strategy = wasm_support::strategy(&guest, WasmStrategyConfig::default());
        let cut = DecisionContext::new(&reasons::ATTEMPT_TIMEOUT);
        assert!(strategy.answer(&get(0), &cut).is_retry(), "{guest}");
        let orchestrator = rebound::Orchestrator::new(strategy);
        let mut write = Request::new(2, RequestType::Upsert, Duration::from_secs(10)).unwrap();
        write.mark_dispatched("node-1");
        let decision = common::decide_at(&orchestrator, &mut write, &reasons::ATTEMPT_TIMEOUT, 0);
        let rebound::Decision::Fail(error) = decision else {
            panic!("{guest}: {decision:?}");
        };
        assert_eq!(error.name(), "AmbiguousTimeout", "{guest}");
    }
}

/// `wit/policy.wit` since 0.4.0: a policy of the current version, or built for 0.4.0, is asked
/// about plain HTTP requests and gRPC calls, and reads each fact the caller gave — service and
/// request type `http` or `grpc`, `failure.method`, `failure.authority`, `failure.route`,
/// `failure.retries-since-pushback` — and the response's status as the reason (`http-status`,
/// `grpc-status` by number). `request_echo` retries only when the facts it read are the line
/// the test expects, and rethrows on any other line.
#[test]
fn a_policy_of_0_4_0_on_reads_the_facts_of_http_and_grpc_requests() {
    use rebound::wasm::WitVersion;
    for (guest, version) in [
        ("request_echo".to_owned(), WitVersion::CURRENT),
        (
            wasm_support::released(WitVersion::V0_4_0, "request_echo"),
            WitVersion::V0_4_0,
        ),
        (
            wasm_support::released(WitVersion::V0_5_0, "request_echo"),
            WitVersion::V0_5_0,
        ),
    ] {
        assert_eq!(wasm_support::load(&guest).unwrap().wit_version(), version);
        echoes_the_facts_of_http_and_grpc_requests(&wasm_support::strategy(
            &guest,
            WasmStrategyConfig::default(),
        ));
    }
}

fn echoes_the_facts_of_http_and_grpc_requests(echo: &WasmStrategy) {
    use rebound::grpc::GrpcCode;
    use rebound::{HttpMethod, RetryReason};
    let post = Request::new(1, RequestType::Http, Duration::from_secs(10))
        .unwrap()
        .with_method(HttpMethod::Post)
        .with_authority("shop.example:8080")
        .with_route("/orders/{id}")
        .with_retry_attempts(3)
        .with_retries_since_pushback(1);
    let call = Request::new(2, RequestType::Grpc, Duration::from_secs(10))
        .unwrap()
        .with_authority("inventory")
        .with_route("/shop.Inventory/Get")
        .with_idempotent(true)
        .with_retry_attempts(2);
    let cases = [
        (
            &post,
            RetryReason::HttpStatus(503),
            "service=Http type=Http method=POST authority=shop.example:8080 route=/orders/{id} \
             since=1 status=http 503",
        ),
        (
            &call,
            RetryReason::GrpcStatus(GrpcCode::Unavailable),
            "service=Grpc type=Grpc method=none authority=inventory route=/shop.Inventory/Get \
             since=2 status=grpc 14",
        ),
        (
            &get(4),
            reasons::KV_LOCKED,
            "service=Kv type=Get method=none authority=none route=none since=4 status=none",
        ),
    ];
    let retry = RetryAction::RetryAfter {
        delay: Duration::from_millis(1),
        node: rebound::NodeChoice::Same,
        consistency: None,
        attempt_timeout: None,
    };
    for (request, reason, line) in cases {
        let request = request.clone().with_client_context("expect", line);
        let context = DecisionContext::new(&reason);
        assert_eq!(echo.answer(&request, &context), retry, "{line}");
        let other = request
            .clone()
            .with_client_context("expect", format!("{line} "));
        assert_eq!(
            echo.answer(&other, &context),
            RetryAction::Rethrow,
            "{line}"
        );
    }
    assert_eq!(echo.stats().decisions, 6);
}

/// `wit/policy.wit` 0.6.0 (`failure.progress`, `failure.attempt-timeout-ms`, the reason
/// `attempt-timeout`), through the orchestrator: a gRPC call refused by the server's transport
/// is sent again once without asking (gRFC A6), and when the next attempt is refused too the
/// policy reads `progress=refused`; an attempt cut by its 250 ms attempt timeout is asked about
/// with that timeout. `request_echo` retries only when it read the line the test expects.
#[test]
fn a_policy_of_0_6_0_reads_how_far_the_attempt_got_and_the_timeout_that_cut_it() {
    use rebound::{Decision, Progress};
    let orchestrator = Orchestrator::new(wasm_support::strategy(
        "request_echo",
        WasmStrategyConfig::default(),
    ));
    let base = "service=Grpc type=Grpc method=none authority=inventory route=/shop.Inventory/Get \
                since=0 status=none";
    let call = |expect: String| {
        Request::new(1, RequestType::Grpc, Duration::from_secs(10))
            .unwrap()
            .with_authority("inventory")
            .with_route("/shop.Inventory/Get")
            .with_idempotent(true)
            .with_client_context("expect", expect)
    };
    let unavailable = rebound::RetryReason::GrpcStatus(rebound::grpc::GrpcCode::Unavailable);
    let base_unavailable = base.replace("status=none", "status=grpc 14");
    let mut refused = call(format!("{base_unavailable} progress=Refused"));
    let context = DecisionContext::new(&unavailable).with_progress(Progress::Refused);
    let first = futures::executor::block_on(orchestrator.decide(&mut refused, &context));
    assert!(matches!(first, Decision::Retry(_)), "{first:?}");
    assert_eq!(
        refused.transparent_retries(),
        1,
        "the first refusal is not asked about"
    );
    let second = futures::executor::block_on(orchestrator.decide(&mut refused, &context));
    assert!(
        matches!(second, Decision::Retry(ref plan) if plan.attempt == 1),
        "{second:?}"
    );

    let mut cut = call(format!("{base} attempt_timeout=250"));
    let context = DecisionContext::new(&reasons::ATTEMPT_TIMEOUT)
        .with_attempt_timeout(Some(Duration::from_millis(250)));
    let decided = futures::executor::block_on(orchestrator.decide(&mut cut, &context));
    assert!(matches!(decided, Decision::Retry(_)), "{decided:?}");
}

/// Reference 001 "Retry Reasons" (the guard) with RFC 9110 §9.2.2 and gRFC A6: whatever a
/// current policy answers about an HTTP request or a gRPC call, the host retries a
/// non-idempotent one only for a reason that allows it and only if it was never written — a
/// POST answered 503 or a call not declared idempotent that failed UNAVAILABLE is not retried,
/// though `request_echo` asks for it; the same requests never sent are.
#[test]
fn the_guard_holds_for_http_and_grpc_requests_whatever_a_policy_answers() {
    use rebound::grpc::GrpcCode;
    use rebound::{HttpMethod, RetryReason};
    let orchestrator = Orchestrator::new(wasm_support::strategy(
        "request_echo",
        WasmStrategyConfig::default(),
    ));
    let post = Request::new(1, RequestType::Http, Duration::from_secs(10))
        .unwrap()
        .with_method(HttpMethod::Post)
        .with_route("/orders");
    let call = Request::new(2, RequestType::Grpc, Duration::from_secs(10))
        .unwrap()
        .with_route("/shop.Orders/Create");
    let cases = [
        (
            post,
            RetryReason::HttpStatus(503),
            "service=Http type=Http method=POST authority=none route=/orders since=0 \
             status=http 503",
            reasons::SOCKET_NOT_AVAILABLE,
            "service=Http type=Http method=POST authority=none route=/orders since=0 \
             status=none",
        ),
        (
            call,
            RetryReason::GrpcStatus(GrpcCode::Unavailable),
            "service=Grpc type=Grpc method=none authority=none route=/shop.Orders/Create \
             since=0 status=grpc 14",
            reasons::NODE_NOT_AVAILABLE,
            "service=Grpc type=Grpc method=none authority=none route=/shop.Orders/Create \
             since=0 status=none",
        ),
    ];
    for (request, answered, answered_line, unsent, unsent_line) in cases {
        assert!(!request.is_idempotent());
        let mut sent = request.clone().with_client_context("expect", answered_line);
        sent.mark_dispatched("node");
        let context = DecisionContext::new(&answered);
        let decision = futures::executor::block_on(orchestrator.decide(&mut sent, &context));
        assert!(
            !matches!(decision, Decision::Retry(_)),
            "{answered_line}: {decision:?}"
        );

        let mut never_sent = request.with_client_context("expect", unsent_line);
        let context = DecisionContext::new(&unsent);
        let decision = futures::executor::block_on(orchestrator.decide(&mut never_sent, &context));
        assert!(
            matches!(decision, Decision::Retry(_)),
            "{unsent_line}: {decision:?}"
        );
    }
}

/// docs/wit-versions.md: the current best-effort policy, which delegates to the host's best
/// effort, is asked about HTTP requests and gRPC calls and decides them as the built-in does.
#[test]
fn a_current_policy_decides_http_and_grpc_requests_as_it_is_written_to() {
    use rebound::grpc::GrpcCode;
    use rebound::{HttpMethod, RetryReason};
    let strategy = wasm_support::strategy("best_effort", WasmStrategyConfig::default());
    let native = BestEffort::<ExponentialBackoff>::default();
    let get = Request::new(1, RequestType::Http, Duration::from_secs(10))
        .unwrap()
        .with_method(HttpMethod::Get);
    let call = Request::new(2, RequestType::Grpc, Duration::from_secs(10))
        .unwrap()
        .with_route("/shop.Inventory/Get")
        .with_idempotent(true);
    for (request, reason) in [
        (&get, reasons::SOCKET_NOT_AVAILABLE),
        (&get, RetryReason::HttpStatus(503)),
        (&call, RetryReason::GrpcStatus(GrpcCode::Unavailable)),
    ] {
        let context = DecisionContext::new(&reason);
        assert_eq!(
            strategy.answer(request, &context).is_retry(),
            native.answer(request, &context).is_retry(),
            "{reason}"
        );
    }
    assert_eq!(strategy.stats().decisions, 3);
}
