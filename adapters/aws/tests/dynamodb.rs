//! A real AWS SDK client (`aws-sdk-dynamodb`) deciding its retries with Rebound, against moto's
//! DynamoDB behind a proxy that injects faults (docs/aws.md). Each test names the rule it
//! holds: the SDK's classification (smithy-rs `AwsErrorCodeClassifier`,
//! `HttpStatusCodeClassifier`), the `aws` built-in's standard mode, and reference 001's safety
//! guard for writes.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_aws::ReboundRetry;
use support::{Fault, Moto, Proxy};

/// A registry whose default policy is the `aws` built-in with `params` (TOML inline table
/// fields).
fn registry(params: &str) -> Arc<PolicyRegistry> {
    registry_of(&format!("builtin = \"aws\"\nparams = {{ {params} }}"))
}

/// A registry whose default policy is `policy` (the TOML of a `[policies.NAME]` table).
fn registry_of(policy: &str) -> Arc<PolicyRegistry> {
    let text = format!(
        "default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.p]\n{policy}\n"
    );
    let config = RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref()).unwrap();
    Arc::new(PolicyRegistry::new(config).unwrap())
}

/// Short backoffs, so that the tests wait little.
const QUICK: &str = "initial_backoff_ms = 10, max_backoff_ms = 40";

/// A DynamoDB client through `proxy`, its retries decided by `rebound`.
fn client(proxy: &Proxy, rebound: ReboundRetry<Arc<PolicyRegistry>>) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(&proxy.url)
        .credentials_provider(Credentials::new("test", "test", None, None, "static"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_classifier(rebound.classifier())
        .interceptor(rebound)
        .build();
    Client::from_conf(config)
}

/// moto, the proxy, and a table `items` keyed by `id`.
async fn dynamodb() -> (Moto, Proxy) {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto).await;
    let setup = client(&proxy, ReboundRetry::new(registry(QUICK)));
    setup
        .create_table()
        .table_name("items")
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .expect("moto creates the table");
    (moto, proxy)
}

async fn put(client: &Client, id: &str) -> Result<(), String> {
    client
        .put_item()
        .table_name("items")
        .item("id", AttributeValue::S(id.into()))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(e)))
}

async fn stored(client: &Client, id: &str) -> bool {
    let item = client
        .get_item()
        .table_name("items")
        .key("id", AttributeValue::S(id.into()))
        .send()
        .await
        .unwrap();
    item.item().is_some()
}

/// smithy-rs `AwsErrorCodeClassifier`: `ProvisionedThroughputExceededException` is a throttling
/// error, `AWS_THROTTLING` to the policy; the service refused the write, so the guard lets even
/// an undeclared write go again, and the `aws` built-in retries it up to its `max_attempts`
/// (4 here, where the SDK alone stops at 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_writes_are_retried_up_to_the_policy_s_attempts_and_stored_once() {
    let (_moto, proxy) = dynamodb().await;
    let client = client(
        &proxy,
        ReboundRetry::new(registry(&format!("{QUICK}, max_attempts = 4"))),
    );
    proxy.inject("PutItem", [Fault::Throttled(None); 3]);
    put(&client, "a").await.expect("the fourth attempt lands");
    assert_eq!(proxy.attempts("PutItem"), 4);
    assert!(stored(&client, "a").await);
    proxy.inject("PutItem", [Fault::Throttled(None); 4]);
    let error = put(&client, "b").await.expect_err("4 attempts at most");
    assert!(
        error.contains("ProvisionedThroughputExceededException"),
        "{error}"
    );
    assert_eq!(proxy.attempts("PutItem"), 8);
}

/// The delay the policy decides is the one the SDK waits: an `exponential` policy waiting
/// 300 ms, which honours a shorter `x-amz-retry-after` of 50 ms by waiting the longer of the
/// two, is waited in full (the SDK alone would wait the server's 50 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_s_delay_is_the_one_waited() {
    let (_moto, proxy) = dynamodb().await;
    let policy = "builtin = \"exponential\"\nparams = { max_attempts = 3, initial_ms = 300, \
                  max_ms = 300, multiplier = 1.0, retry_on = [\"AWS_THROTTLING\"] }";
    let client = client(&proxy, ReboundRetry::new(registry_of(policy)));
    proxy.inject("PutItem", [Fault::Throttled(Some(50))]);
    let started = Instant::now();
    put(&client, "a").await.expect("the retry lands");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(proxy.attempts("PutItem"), 2);
}

/// Reference 001's safety guard: a 503 (`HttpStatusCodeClassifier`: transient, `AWS_TRANSIENT`)
/// may have been applied, so a write that is not declared idempotent is not sent again (the
/// SDK alone would); declared with `idempotent`, it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_failure_retries_a_write_only_when_it_is_declared_idempotent() {
    let (_moto, proxy) = dynamodb().await;
    let undeclared = client(&proxy, ReboundRetry::new(registry(QUICK)));
    proxy.inject("PutItem", [Fault::Unavailable]);
    put(&undeclared, "a").await.expect_err("not sent again");
    assert_eq!(proxy.attempts("PutItem"), 1);
    let declared = client(
        &proxy,
        ReboundRetry::new(registry(QUICK)).idempotent(["PutItem"]),
    );
    proxy.inject("PutItem", [Fault::Unavailable]);
    put(&declared, "a").await.expect("sent again");
    assert_eq!(proxy.attempts("PutItem"), 3);
    assert!(stored(&declared, "a").await);
}

/// The `aws` built-in's retry quota (smithy-rs `TokenBucket`): with 10 tokens, a transient
/// retry (10 in retry behaviour 2.0) empties it, and the next failure is not retried although
/// attempts are left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_quota_ends_retries() {
    let (_moto, proxy) = dynamodb().await;
    let registry = registry(&format!("{QUICK}, quota = 10, max_attempts = 5"));
    let client = client(
        &proxy,
        ReboundRetry::new(registry).idempotent(["DynamoDB.GetItem"]),
    );
    proxy.inject(
        "GetItem",
        [Fault::Unavailable, Fault::Unavailable, Fault::Unavailable],
    );
    let got = client
        .get_item()
        .table_name("items")
        .key("id", AttributeValue::S("a".into()))
        .send()
        .await;
    assert!(got.is_err(), "the second failure is not retried");
    assert_eq!(proxy.attempts("GetItem"), 2);
}

/// `x-amz-retry-after` (smithy-rs `retry_after_from_ctx`), in retry behaviour 2.0: the server's
/// delay replaces the 10 ms backoff (capped at `max_backoff`, 20 s by default), so the SDK
/// waits at least as long as it asks before the retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_s_retry_after_sets_the_wait() {
    let (_moto, proxy) = dynamodb().await;
    let client = client(
        &proxy,
        ReboundRetry::new(registry("initial_backoff_ms = 10")),
    );
    proxy.inject("PutItem", [Fault::Throttled(Some(400))]);
    let started = Instant::now();
    put(&client, "a").await.expect("the retry lands");
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(proxy.attempts("PutItem"), 2);
}

/// docs/throttling.md: a policy's retry throttle counts the SDK's throttling errors as
/// overload; with 4 tokens, retries stop once 2 failures have left it at half, although the
/// `aws` built-in would still retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_throttle_stops_retries_after_throttling_errors() {
    let (_moto, proxy) = dynamodb().await;
    let policy = format!(
        "builtin = \"aws\"\nparams = {{ {QUICK}, max_attempts = 10 }}\nthrottle = \"t\"\n\
         [throttles.t]\nkind = \"tokens\"\nmax_tokens = 4\ntoken_ratio = 0.1"
    );
    let client = client(&proxy, ReboundRetry::new(registry_of(&policy)));
    proxy.inject("PutItem", [Fault::Throttled(None); 5]);
    put(&client, "a")
        .await
        .expect_err("the throttle stops the retries");
    assert_eq!(proxy.attempts("PutItem"), 2);
}
