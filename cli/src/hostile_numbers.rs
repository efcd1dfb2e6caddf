//! Any number in any numeric field of what a client sends — a decision request's request,
//! response, pushback and error-map spec, a built-in's parameters and the gRPC service config
//! inside them, an outcome report, a hedging question — is answered with a decision or a
//! refusal naming the field: never a panic, an abort, or an allocation sized by the number
//! (SECURITY.md "Clients of `rebound serve`", docs/decision-json.md).

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use proptest::prelude::*;
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use serde_json::{json, Map, Value};

use crate::json_decider::{FileAccess, JsonDecider};
use crate::largest_allocation;
use crate::wire::hedge::HedgeInput;
use crate::wire::input::InputError;

/// The largest single allocation one request may cause: the request itself is at most
/// 64 KiB, and nothing is sized by the numbers in it.
const MOST_BYTES: usize = 1 << 20;

/// A registry with every kind of control a request can reach: built-ins, a hedging gRPC
/// policy, speculative executions, a throttle, a budget and breakers.
const CONFIG: &str = r#"
default_policy = "best-effort"
cache_dir = false
[watch]
enabled = false
[policies.best-effort]
builtin = "best-effort"
throttle = "tokens"
budget = "budget"
breaker = "nodes"
[policies.hedged]
builtin = "grpc"
params = { service_config = '{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":5,"hedgingDelay":"0.01s","nonFatalStatusCodes":["UNAVAILABLE"]}}],"retryThrottling":{"maxTokens":10,"tokenRatio":0.5}}' }
[policies.speculative]
builtin = "best-effort"
speculative_execution = { delay_ms = 10, max_executions = 3 }
[throttles.tokens]
kind = "tokens"
max_tokens = 10
token_ratio = 0.5
per = "authority"
[budgets.budget]
percent = 20
[breakers.nodes]
"#;

fn decider() -> JsonDecider {
    let config = RegistryConfig::parse(CONFIG, Path::new("<hostile>"), Path::new("."))
        .expect("the test's configuration is valid");
    let registry = PolicyRegistry::new(config).expect("the test's registry starts");
    JsonDecider::new(Arc::new(registry), FileAccess::Any)
}

/// Numbers at every edge a field could mishandle, the large ones (what sizes an allocation or
/// overflows a sum) most often.
fn number() -> impl Strategy<Value = Value> {
    let large: Vec<Value> = vec![
        json!(20_000_000),
        json!(i32::MAX),
        json!(u32::MAX),
        json!(u64::from(u32::MAX) + 1),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1e308),
    ];
    let edges: Vec<Value> = vec![
        json!(0),
        json!(1),
        json!(2),
        json!(-1),
        json!(5),
        json!(100),
        json!(101),
        json!(399),
        json!(599),
        json!(65_536),
        json!(i64::MIN),
        json!(0.5),
        json!(-0.5),
        json!(1.5),
        json!(1e-300),
        json!(-1e308),
    ];
    prop_oneof![
        4 => proptest::sample::select(large),
        3 => proptest::sample::select(edges),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => (-1e12f64..1e12).prop_map(Value::from),
    ]
}

/// A proto3 JSON duration, in range or past it.
fn duration() -> impl Strategy<Value = Value> {
    let texts = vec![
        "0s",
        "0.1s",
        "1s",
        "315576000000s",
        "315576000001s",
        "18446744073709551615s",
        "99999999999999999999999s",
        "-1s",
    ];
    prop_oneof![
        proptest::sample::select(texts).prop_map(Value::from),
        any::<u64>().prop_map(|n| Value::from(format!("{n}s"))),
        number(),
    ]
}

/// An object of `fields`, each its valid value (so that the request gets as far as a
/// decision), a number from its strategy, or absent.
fn fields(fields: Vec<(&'static str, Value, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    let each: Vec<_> = fields
        .into_iter()
        .map(|(name, valid, hostile)| {
            prop_oneof![
                14 => Just(Some(valid)),
                6 => hostile.prop_map(Some),
                1 => Just(None),
            ]
            .prop_map(move |v| (name, v))
        })
        .collect();
    each.prop_map(|pairs| {
        let object: Map<String, Value> = pairs
            .into_iter()
            .filter_map(|(name, value)| value.map(|v| (name.to_owned(), v)))
            .collect();
        Value::Object(object)
    })
    .boxed()
}

fn n() -> BoxedStrategy<Value> {
    number().boxed()
}

fn codes() -> BoxedStrategy<Value> {
    prop_oneof![
        proptest::collection::vec(n(), 0..4).prop_map(Value::from),
        Just(json!(["UNAVAILABLE"])),
    ]
    .boxed()
}

/// A gRPC service config with numbers everywhere.
fn service_config() -> BoxedStrategy<Value> {
    let retry = fields(vec![
        ("maxAttempts", json!(3), n()),
        ("initialBackoff", json!("0.1s"), duration().boxed()),
        ("maxBackoff", json!("1s"), duration().boxed()),
        ("backoffMultiplier", json!(2), n()),
        ("retryableStatusCodes", json!(["UNAVAILABLE"]), codes()),
    ]);
    let hedging = fields(vec![
        ("maxAttempts", json!(3), n()),
        ("hedgingDelay", json!("0.01s"), duration().boxed()),
        ("nonFatalStatusCodes", json!(["UNAVAILABLE"]), codes()),
    ]);
    let policy = prop_oneof![
        3 => retry.prop_map(|p| json!({"name": [{}], "retryPolicy": p})),
        1 => hedging.prop_map(|p| json!({"name": [{}], "hedgingPolicy": p})),
    ];
    let throttling = fields(vec![
        ("maxTokens", json!(10), n()),
        ("tokenRatio", json!(0.5), n()),
    ]);
    (policy, proptest::option::of(throttling))
        .prop_map(|(policy, throttling)| {
            let mut config = json!({"methodConfig": [policy]});
            if let Some(throttling) = throttling {
                config["retryThrottling"] = throttling;
            }
            config
        })
        .boxed()
}

/// A policy named with parameters: each built-in's numbers.
fn policy() -> BoxedStrategy<Value> {
    let backoff = || {
        fields(vec![
            ("min_ms", json!(1), n()),
            ("max_ms", json!(500), n()),
            ("factor", json!(2), n()),
            ("jitter", json!(0.5), n()),
        ])
    };
    let with = |name: &'static str, params: BoxedStrategy<Value>| {
        params.prop_map(move |params| json!({"name": name, "params": params}))
    };
    prop_oneof![
        1 => Just(Value::Null),
        1 => Just(json!("hedged")),
        1 => Just(json!("speculative")),
        1 => with("best-effort", backoff()),
        1 => with("fast-fail-on-terminal-error", backoff()),
        1 => with(
            "cassandra-default",
            fields(vec![("max_retries", json!(1), n())])
        ),
        1 => with(
            "exponential",
            fields(vec![
                ("max_attempts", json!(3), n()),
                ("initial_ms", json!(10), n()),
                ("max_ms", json!(100), n()),
                ("multiplier", json!(2), n()),
                ("jitter", json!(0.1), n()),
            ])
        ),
        1 => with(
            "http",
            fields(vec![
                ("max_attempts", json!(3), n()),
                ("initial_ms", json!(10), n()),
                ("max_ms", json!(100), n()),
                ("multiplier", json!(2), n()),
                ("statuses", json!([503]), proptest::collection::vec(n(), 0..4).prop_map(Value::from).boxed()),
                ("retry_after_max_ms", json!(20_000), n()),
            ])
        ),
        4 => service_config().prop_flat_map(|config| {
            fields(vec![
                ("max_attempts_limit", json!(5), n()),
                ("service_config", config, n()),
            ])
            .prop_map(|params| json!({"name": "grpc", "params": params}))
        }),
    ]
    .boxed()
}

/// The request, with numbers in every numeric field.
fn request() -> BoxedStrategy<Value> {
    let service = proptest::sample::select(vec!["kv", "query", "http", "grpc", "cql"]);
    (
        service,
        fields(vec![
            ("id", json!(7), n()),
            ("retry_attempts", json!(1), n()),
            ("elapsed_ms", json!(10), n()),
            ("timeout_ms", json!(2500), n()),
            ("retries_since_pushback", json!(0), n()),
        ]),
        any::<bool>(),
    )
        .prop_map(|(service, mut fields, dispatched)| {
            fields["service"] = json!(service);
            fields["idempotent"] = json!(true);
            fields["authority"] = json!("api.example");
            fields["last_dispatched_to"] = json!("10.0.0.1:11210");
            fields["dispatched"] = json!(dispatched);
            if service == "grpc" {
                fields["route"] = json!("/pkg.Svc/Get");
            }
            fields
        })
        .boxed()
}

/// Why it failed: a reason with numbers in its data, or a raw response.
fn failure() -> BoxedStrategy<Value> {
    let timeout = fields(vec![
        ("block_for", json!(2), n()),
        ("received", json!(1), n()),
    ])
    .prop_map(|mut data| {
        data["consistency"] = json!("QUORUM");
        data["data_present"] = json!(false);
        json!({"reason": {"read_timeout": data}})
    });
    prop_oneof![
        n().prop_map(|code| json!({"reason": {"grpc_status": code}})),
        n().prop_map(|status| json!({"reason": {"http_status": status}})),
        timeout,
        fields(vec![
            ("status", json!(134), n()),
            ("code", json!(12_009), n()),
            ("opcode", json!(0), n()),
        ])
        .prop_map(|response| json!({ "response": response })),
        any::<u64>()
            .prop_map(|s| json!({"response": {"status": 503, "retry_after": s.to_string()}})),
        Just(json!({"reason": "KV_LOCKED"})),
    ]
    .boxed()
}

/// A whole decision request.
fn decision() -> impl Strategy<Value = Value> {
    let spec = fields(vec![
        ("after", json!(10), n()),
        ("interval", json!(2), n()),
        ("ceil", json!(500), n()),
        ("max-duration", json!(2000), n()),
    ])
    .prop_map(|mut spec| {
        spec["strategy"] = json!("exponential");
        spec
    });
    (
        policy(),
        request(),
        failure(),
        proptest::option::of(n()),
        proptest::option::of(spec),
        proptest::option::of(n()),
    )
        .prop_map(|(policy, request, failure, pushback, spec, upstream)| {
            let mut line = failure;
            if let Some(upstream) = upstream {
                line["upstream_attempts"] = upstream;
            }
            line["request"] = request;
            if !policy.is_null() {
                line["policy"] = policy;
            }
            if let Some(pushback) = pushback {
                if line.get("response").is_none() {
                    line["pushback_ms"] = pushback;
                }
            }
            if let (Some(spec), Some(_)) = (spec, line.get("reason")) {
                line["error_map_spec"] = spec;
            }
            line
        })
}

/// A hedging question about a request in flight.
fn hedge_question() -> impl Strategy<Value = Value> {
    let flight = fields(vec![
        ("copies", json!(1), n()),
        ("outstanding", json!(1), n()),
        ("since_first_ms", json!(20), n()),
        ("since_last_ms", json!(20), n()),
        ("pushback", json!(5), n()),
    ]);
    let policy = proptest::sample::select(vec!["hedged", "speculative"]);
    (flight, policy, request()).prop_map(
        |(flight, policy, request)| json!({"hedge": flight, "policy": policy, "request": request}),
    )
}

/// An outcome report.
fn outcome() -> impl Strategy<Value = Value> {
    let ended = proptest::sample::select(vec!["success", "failure", "timeout"]);
    (ended, proptest::option::of(n()), request()).prop_map(|(ended, attempts, request)| {
        let mut report = json!({"outcome": ended, "request": request});
        if let Some(attempts) = attempts {
            report["attempts"] = attempts;
        }
        report
    })
}

/// Runs `ask` on this thread: no panic, at most [`MOST_BYTES`] in one allocation, and a
/// refusal names the field it refuses.
fn answered(line: &Value, ask: impl FnOnce() -> Result<Value, InputError>) {
    let _ = largest_allocation::take();
    let result = std::panic::catch_unwind(AssertUnwindSafe(ask));
    let largest = largest_allocation::take();
    let answer = match result {
        Ok(answer) => answer,
        Err(_) => panic!("a panic answering {line}"),
    };
    assert!(
        largest <= MOST_BYTES,
        "{largest} bytes in one allocation answering {line}"
    );
    if let Err(error) = answer {
        assert!(
            !error.field.is_empty(),
            "a refusal that names no field: {error} for {line}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Decision requests, as `/v1/decide` and `rebound eval` read them.
    #[test]
    fn any_number_in_a_decision_request_is_decided_or_refused_by_field(line in decision()) {
        thread_local! {
            static DECIDER: JsonDecider = decider();
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let text = line.to_string();
        DECIDER.with(|decider| answered(&line, || {
            runtime.block_on(decider.decide_text(&text, 1)).map(|answer| answer.json)
        }));
        // `/v1/classify` reads the same requests.
        if line.get("response").is_some() {
            DECIDER.with(|decider| answered(&line, || decider.classify_text(&text)));
        }
    }

    /// Hedging questions (`rebound eval`) and outcome reports (`/v1/outcome`).
    #[test]
    fn any_number_in_a_hedge_question_or_an_outcome_is_answered_or_refused_by_field(
        question in hedge_question(),
        report in outcome(),
    ) {
        thread_local! {
            static DECIDER: JsonDecider = decider();
        }
        DECIDER.with(|decider| {
            answered(&question, || {
                HedgeInput::parse(&question.to_string())
                    .and_then(|q| q.answer(decider.registry(), Instant::now()))
            });
            answered(&report, || decider.record_outcomes(&report.to_string(), None));
        });
    }
}
