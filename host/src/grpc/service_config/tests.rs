//! A6's validation rules for service configs, each a test.

use serde_json::json;

use super::*;

fn policy() -> Value {
    json!({
        "maxAttempts": 4,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE", 8]
    })
}

fn with_policy(policy: Value) -> Value {
    json!({"methodConfig": [{"name": [{"service": "pkg.Svc"}], "retryPolicy": policy}]})
}

fn refused(config: Value) -> FieldError {
    ServiceConfig::parse(&config, DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap_err()
}

/// gRFC A6 "Retry Policy Capabilities": the example policy as written in the proposal.
#[test]
fn the_proposal_s_example_is_read() {
    let config = ServiceConfig::parse(&with_policy(policy()), 5).unwrap();
    let policy = config.retry_policy("/pkg.Svc/Get").unwrap();
    assert_eq!(policy.max_attempts, 4);
    assert_eq!(policy.initial_backoff, Duration::from_millis(100));
    assert_eq!(policy.max_backoff, Duration::from_secs(1));
    assert_eq!(policy.backoff_multiplier, 2.0);
    assert_eq!(
        policy.retryable_status_codes,
        [GrpcCode::Unavailable, GrpcCode::ResourceExhausted]
    );
    assert_eq!(config.retry_policy("/pkg.Other/Get"), None);
}

/// gRFC A6 "Validation of retryPolicy" rule 1: `maxAttempts` is required, an integer
/// greater than 1; values above the client's cap (5) are the cap, not an error. It is a
/// `uint32`, read as proto3 JSON reads one: `3.0`, `"3"` and `"3e0"` are 3; a fraction, a
/// boolean, a string that is not a number, or a number past `uint32` is refused.
#[test]
fn max_attempts_above_five_is_five_and_below_two_is_refused() {
    let mut p = policy();
    p["maxAttempts"] = json!(9);
    let config = ServiceConfig::parse(&with_policy(p.clone()), 5).unwrap();
    assert_eq!(config.retry_policy("/pkg.Svc/M").unwrap().max_attempts, 5);
    for three in [json!(3.0), json!("3"), json!("3e0")] {
        p["maxAttempts"] = three.clone();
        let config = ServiceConfig::parse(&with_policy(p.clone()), 5).unwrap();
        let policy = config.retry_policy("/pkg.Svc/M").unwrap();
        assert_eq!(policy.max_attempts, 3, "{three}");
    }
    for bad in [
        json!(1),
        json!(0),
        json!(2.5),
        json!(true),
        json!(" 3"),
        json!("three"),
        json!(4294967296u64),
    ] {
        p["maxAttempts"] = bad;
        let e = refused(with_policy(p.clone()));
        assert_eq!(e.field, "methodConfig[0].retryPolicy.maxAttempts", "{e}");
    }
    p.as_object_mut().unwrap().remove("maxAttempts");
    assert_eq!(refused(with_policy(p)).message, "required");
}

/// Rule 2: the backoffs are proto3 JSON durations greater than zero.
#[test]
fn backoffs_are_positive_proto3_durations() {
    for (text, expected) in [
        ("1s", Duration::from_secs(1)),
        ("0.5s", Duration::from_millis(500)),
        ("2.000000001s", Duration::new(2, 1)),
    ] {
        let mut p = policy();
        p["initialBackoff"] = json!(text);
        let config = ServiceConfig::parse(&with_policy(p), 5).unwrap();
        let read = config.retry_policy("/pkg.Svc/M").unwrap().initial_backoff;
        assert_eq!(read, expected, "{text}");
    }
    for bad in [
        json!("0s"),
        json!("-1s"),
        json!("1"),
        json!("1.s"),
        json!("0.1000000001s"),
        json!(0.1),
    ] {
        let mut p = policy();
        p["maxBackoff"] = bad.clone();
        let e = refused(with_policy(p));
        assert_eq!(
            e.field, "methodConfig[0].retryPolicy.maxBackoff",
            "{bad}: {e}"
        );
    }
    // Past proto3's `Duration` range (conformance `DurationJsonInputTooLarge`).
    let mut p = policy();
    p["initialBackoff"] = json!("315576000001s");
    let e = refused(with_policy(p));
    assert_eq!(e.field, "methodConfig[0].retryPolicy.initialBackoff");
    assert!(e.message.contains("proto3 Duration range"), "{e}");
}

/// Rules 3 and 4: the multiplier is a number greater than zero (a proto3 JSON float: a number
/// or a string holding one); the codes a non-empty array of valid codes, each error at its
/// index.
#[test]
fn multiplier_and_codes_are_validated() {
    for bad in [json!(0), json!(-2), json!("fast"), json!(true)] {
        let mut p = policy();
        p["backoffMultiplier"] = bad.clone();
        let e = refused(with_policy(p));
        assert!(e.field.ends_with("backoffMultiplier"), "{bad}: {e}");
    }
    let mut p = policy();
    p["backoffMultiplier"] = json!("1.5");
    let config = ServiceConfig::parse(&with_policy(p), 5).unwrap();
    let multiplier = config
        .retry_policy("/pkg.Svc/M")
        .unwrap()
        .backoff_multiplier;
    assert_eq!(multiplier, 1.5);
    let mut p = policy();
    p["retryableStatusCodes"] = json!([]);
    assert!(refused(with_policy(p))
        .field
        .ends_with("retryableStatusCodes"));
    let mut p = policy();
    p["retryableStatusCodes"] = json!(["UNAVAILABLE", "NOPE"]);
    let e = refused(with_policy(p));
    assert_eq!(
        e.field,
        "methodConfig[0].retryPolicy.retryableStatusCodes[1]"
    );
    assert!(e.message.contains("UNAVAILABLE"), "{e}");
}

/// The service config's method names: the most specific config applies (the method,
/// else its service, else the default of an empty name); a method without its service
/// and a method named twice are refused.
#[test]
fn the_most_specific_method_config_applies() {
    let mut short = policy();
    short["maxAttempts"] = json!(2);
    let config = json!({"methodConfig": [
        {"name": [{}], "retryPolicy": short},
        {"name": [{"service": "pkg.Svc"}], "retryPolicy": policy()},
        {"name": [{"service": "pkg.Svc", "method": "Write"}]}
    ]});
    let config = ServiceConfig::parse(&config, 5).unwrap();
    assert_eq!(
        config.retry_policy("/pkg.Svc/Read").unwrap().max_attempts,
        4
    );
    assert_eq!(config.retry_policy("/pkg.Svc/Write"), None);
    assert_eq!(
        config.retry_policy("/other.Svc/Read").unwrap().max_attempts,
        2
    );
    assert_eq!(config.retry_policy("pkg.Svc/Read"), None);

    let e = refused(json!({"methodConfig": [{"name": [{"method": "Get"}]}]}));
    assert_eq!(e.field, "methodConfig[0].name[0].method");
    let e = refused(json!({"methodConfig": [
        {"name": [{"service": "a.S"}]}, {"name": [{"service": "a.S"}]}
    ]}));
    assert_eq!(e.field, "methodConfig[1].name[0]");
}

/// gRFC A6 "Validation of retryThrottling": `maxTokens` an integer in (0, 1000],
/// `tokenRatio` a number greater than 0 with decimal places beyond three ignored.
#[test]
fn throttling_is_validated_and_its_ratio_cut_to_three_places() {
    let config = json!({"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5466}});
    let throttling = ServiceConfig::parse(&config, 5)
        .unwrap()
        .throttling()
        .unwrap();
    assert_eq!(throttling.max_tokens, 10);
    assert_eq!(throttling.token_ratio, 0.546);
    for (bad, path) in [
        (
            json!({"maxTokens": 0, "tokenRatio": 0.1}),
            "retryThrottling.maxTokens",
        ),
        (
            json!({"maxTokens": 1001, "tokenRatio": 0.1}),
            "retryThrottling.maxTokens",
        ),
        (
            json!({"maxTokens": 10, "tokenRatio": 0}),
            "retryThrottling.tokenRatio",
        ),
        (
            json!({"maxTokens": 10, "tokenRatio": 0.0004}),
            "retryThrottling.tokenRatio",
        ),
        (json!({"maxTokens": 10}), "retryThrottling.tokenRatio"),
        (
            json!({"maxTokens": "ten", "tokenRatio": 0.1}),
            "retryThrottling.maxTokens",
        ),
        (
            json!({"maxTokens": 10, "tokenRatio": true}),
            "retryThrottling.tokenRatio",
        ),
    ] {
        assert_eq!(refused(json!({"retryThrottling": bad})).field, path);
    }
    // proto3 JSON: a uint32 and a float may be written as strings holding a number.
    let config = json!({"retryThrottling": {"maxTokens": "10", "tokenRatio": "0.5"}});
    let throttling = ServiceConfig::parse(&config, 5)
        .unwrap()
        .throttling()
        .unwrap();
    assert_eq!((throttling.max_tokens, throttling.token_ratio), (10, 0.5));
}

fn with_hedging(policy: Value) -> Value {
    json!({"methodConfig": [{"name": [{"service": "pkg.Svc"}], "hedgingPolicy": policy}]})
}

/// gRFC A6 "Hedging Policy" and "Validation of hedgingPolicy": the proposal's example is
/// read; `maxAttempts` above 5 is 5; `hedgingDelay` and `nonFatalStatusCodes` are optional,
/// and `"0s"` is a valid delay; a method has a retry or a hedging policy, not both.
#[test]
fn hedging_policies_are_read_and_validated() {
    let example = json!({
        "maxAttempts": 4,
        "hedgingDelay": "0.5s",
        "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]
    });
    let config = ServiceConfig::parse(&with_hedging(example), 5).unwrap();
    let policy = config.hedging_policy("/pkg.Svc/Get").unwrap();
    assert_eq!(policy.max_attempts, 4);
    assert_eq!(policy.hedging_delay, Duration::from_millis(500));
    assert_eq!(
        policy.non_fatal_status_codes,
        [GrpcCode::Unavailable, GrpcCode::Internal, GrpcCode::Aborted]
    );
    assert!(config.hedges());
    assert_eq!(config.retry_policy("/pkg.Svc/Get"), None);
    let config = ServiceConfig::parse(&with_hedging(json!({"maxAttempts": 9})), 5).unwrap();
    let policy = config.hedging_policy("/pkg.Svc/Get").unwrap();
    assert_eq!(
        (policy.max_attempts, policy.hedging_delay),
        (5, Duration::ZERO)
    );
    assert!(policy.non_fatal_status_codes.is_empty());
    let zero = json!({"maxAttempts": 2, "hedgingDelay": "0s"});
    assert!(ServiceConfig::parse(&with_hedging(zero), 5).is_ok());
    for (bad, path) in [
        (
            json!({"maxAttempts": 1}),
            "methodConfig[0].hedgingPolicy.maxAttempts",
        ),
        (json!({}), "methodConfig[0].hedgingPolicy.maxAttempts"),
        (
            json!({"maxAttempts": 2, "hedgingDelay": "500ms"}),
            "methodConfig[0].hedgingPolicy.hedgingDelay",
        ),
        (
            json!({"maxAttempts": 2, "nonFatalStatusCodes": ["NOT_A_CODE"]}),
            "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]",
        ),
    ] {
        assert_eq!(refused(with_hedging(bad)).field, path);
    }
    let retry = self::policy();
    let both = json!({"methodConfig": [{
        "name": [{"service": "pkg.Svc"}],
        "retryPolicy": retry,
        "hedgingPolicy": {"maxAttempts": 2}
    }]});
    let e = refused(both);
    assert_eq!(e.field, "methodConfig[0].hedgingPolicy");
    assert!(e.message.contains("only one of"), "{e}");
}

/// grpc-java's `ManagedChannelServiceConfig`: `perAttemptRecvTimeout` is a proto3 duration
/// (here above 0), and `retryableStatusCodes` may be empty only beside it; it must still be
/// there.
#[test]
fn per_attempt_recv_timeout_is_a_positive_duration_and_allows_empty_codes() {
    let mut p = policy();
    p["perAttemptRecvTimeout"] = json!("0.25s");
    p["retryableStatusCodes"] = json!([]);
    let config = ServiceConfig::parse(&with_policy(p), 5).unwrap();
    let read = config.retry_policy("/pkg.Svc/Get").unwrap();
    assert_eq!(
        read.per_attempt_recv_timeout,
        Some(Duration::from_millis(250))
    );
    assert!(read.retryable_status_codes.is_empty());
    assert!(config.times_attempts());
    for bad in [json!("0s"), json!("-1s"), json!(250), json!("1m")] {
        let mut p = policy();
        p["perAttemptRecvTimeout"] = bad.clone();
        let e = refused(with_policy(p));
        assert_eq!(
            e.field, "methodConfig[0].retryPolicy.perAttemptRecvTimeout",
            "{bad}"
        );
    }
    let mut p = policy();
    p.as_object_mut().unwrap().remove("retryableStatusCodes");
    p["perAttemptRecvTimeout"] = json!("1s");
    assert!(refused(with_policy(p))
        .field
        .ends_with("retryableStatusCodes"));
    let config = ServiceConfig::parse(&with_policy(policy()), 5).unwrap();
    assert!(!config.times_attempts());
}
