//! A cluster's retry budget and outlier detection as Rebound's budget and breaker, each test
//! naming the field of Envoy's `envoy.config.cluster.v3.Cluster` it reads and the row of
//! docs/decisions.md "xDS" that says how.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::clusters::{
    attach, control_name, controls, Cluster, OutlierDetection, RetryBudget, Thresholds,
};
use super::envoy::RouteConfiguration;
use super::routes::map;
use crate::config::RegistryConfig;
use crate::registry::PolicyRegistry;

fn budgeted(budget: RetryBudget) -> Cluster {
    Cluster {
        name: "inventory".into(),
        thresholds: vec![Thresholds {
            default_priority: true,
            retry_budget: Some(budget),
            limits: Vec::new(),
        }],
        outlier_detection: None,
    }
}

/// `RetryBudget`: "Defaults to 20%" and "Defaults to 3"; `budget_interval` 0 (the default)
/// counts the requests active now, read as the budget's default window (decisions.md "xDS
/// clusters").
#[test]
fn a_retry_budget_becomes_a_budget_with_envoy_s_defaults() {
    let made = controls(&budgeted(RetryBudget::default())).unwrap();
    let budget = made.budget.unwrap();
    assert_eq!(budget["percent"].as_float(), Some(20.0));
    assert_eq!(budget["min_per_second"].as_integer(), Some(3));
    assert_eq!(budget["ttl_ms"].as_integer(), Some(10_000));
    assert!(made.breaker.is_none());
    assert!(made.ignored.is_empty(), "{:?}", made.ignored);

    let made = controls(&budgeted(RetryBudget {
        budget_percent: Some(25.0),
        budget_interval: Some(Duration::from_secs(5)),
        min_retry_concurrency: Some(0),
    }))
    .unwrap();
    let budget = made.budget.unwrap();
    assert_eq!(budget["percent"].as_float(), Some(25.0));
    assert_eq!(budget["min_per_second"].as_integer(), Some(0));
    assert_eq!(budget["ttl_ms"].as_integer(), Some(5_000));
}

/// `budget_percent` is a `Percent` (0 to 100, as Envoy validates it): past it the resource is
/// refused with the field; a window shorter than a budget keeps is read as the shortest, and
/// said.
#[test]
fn a_budget_past_its_range_is_refused_and_a_short_window_is_said() {
    let error = controls(&budgeted(RetryBudget {
        budget_percent: Some(150.0),
        ..RetryBudget::default()
    }))
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "circuit_breakers.thresholds[0].retry_budget.budget_percent.value: 150 is out of range; expected 0 to 100"
    );
    let made = controls(&budgeted(RetryBudget {
        budget_interval: Some(Duration::from_millis(2)),
        ..RetryBudget::default()
    }))
    .unwrap();
    assert_eq!(made.budget.unwrap()["ttl_ms"].as_integer(), Some(10));
    assert_eq!(
        made.ignored,
        ["inventory: circuit_breakers.thresholds[0].retry_budget.budget_interval: 2 ms read as 10 ms, the nearest window a budget keeps"]
    );
}

/// `CircuitBreakers.thresholds`: "If multiple Thresholds are defined with the same
/// RoutingPriority, the first one in the list is used"; the `HIGH` priority's and the
/// concurrency limits are reported, not read.
#[test]
fn only_the_first_default_priority_thresholds_are_read() {
    let high = Thresholds {
        default_priority: false,
        retry_budget: Some(RetryBudget {
            budget_percent: Some(90.0),
            ..RetryBudget::default()
        }),
        limits: Vec::new(),
    };
    let first = Thresholds {
        default_priority: true,
        retry_budget: Some(RetryBudget {
            budget_percent: Some(10.0),
            ..RetryBudget::default()
        }),
        limits: vec!["max_requests", "max_retries"],
    };
    let second = Thresholds {
        default_priority: true,
        retry_budget: None,
        limits: Vec::new(),
    };
    let cluster = Cluster {
        name: "c".into(),
        thresholds: vec![high, first, second],
        outlier_detection: None,
    };
    let made = controls(&cluster).unwrap();
    assert_eq!(made.budget.unwrap()["percent"].as_float(), Some(10.0));
    assert_eq!(
        made.ignored,
        [
            "c: circuit_breakers.thresholds[0]: only the default priority's are read",
            "c: circuit_breakers.thresholds[1].max_requests: a concurrency limit of the connection pool, not read",
            "c: circuit_breakers.thresholds[1].max_retries: a concurrency limit of the connection pool, not read",
            "c: circuit_breakers.thresholds[2]: an earlier entry has the default priority",
        ]
    );
}

/// `OutlierDetection`: failure-percentage ejection ("enforcing_failure_percentage … Defaults
/// to 0") becomes a per-node breaker: the threshold (default 85) its error percentage, the
/// request volume (default 50) its volume, `interval` (10 s) its rolling window,
/// `base_ejection_time` (30 s) its sleep window; consecutive-5xx and success-rate ejection (on
/// by default) and the other fields set are reported.
#[test]
fn failure_percentage_ejection_becomes_a_breaker() {
    let mut outlier = OutlierDetection {
        consecutive_5xx: true,
        success_rate: true,
        ..OutlierDetection::default()
    };
    let cluster = |outlier: &OutlierDetection| Cluster {
        name: "c".into(),
        thresholds: Vec::new(),
        outlier_detection: Some(outlier.clone()),
    };
    let made = controls(&cluster(&outlier)).unwrap();
    assert!(made.breaker.is_none(), "not enforced by default");
    assert_eq!(
        made.ignored,
        [
            "c: outlier_detection.consecutive_5xx: ejection after consecutive errors is not read",
            "c: outlier_detection.enforcing_success_rate: ejection by success rate is not read",
        ]
    );
    outlier.enforcing_failure_percentage = Some(100);
    let breaker = controls(&cluster(&outlier)).unwrap().breaker.unwrap();
    let int = |field: &str| breaker[field].as_integer();
    assert_eq!(int("error_percentage"), Some(85));
    assert_eq!(int("volume_threshold"), Some(50));
    assert_eq!(int("rolling_window_ms"), Some(10_000));
    assert_eq!(int("sleep_window_ms"), Some(30_000));
    outlier = OutlierDetection {
        interval: Some(Duration::from_secs(5)),
        base_ejection_time: Some(Duration::from_secs(15)),
        failure_percentage_threshold: Some(60),
        enforcing_failure_percentage: Some(50),
        failure_percentage_request_volume: Some(20),
        consecutive_5xx: false,
        success_rate: false,
        others: vec!["max_ejection_percent"],
    };
    let made = controls(&cluster(&outlier)).unwrap();
    let breaker = made.breaker.unwrap();
    let int = |field: &str| breaker[field].as_integer();
    assert_eq!(int("error_percentage"), Some(60));
    assert_eq!(int("volume_threshold"), Some(20));
    assert_eq!(int("rolling_window_ms"), Some(5_000));
    assert_eq!(int("sleep_window_ms"), Some(15_000));
    assert_eq!(
        made.ignored,
        [
            "c: outlier_detection.max_ejection_percent: not read",
            "c: outlier_detection.enforcing_failure_percentage: 50 % read as 100 % (a breaker always opens)",
        ]
    );
}

/// Envoy's budget is the cluster's: every route forwarding to a cluster draws from one budget
/// and is admitted by one set of breakers; a route to a cluster without controls has none; the
/// registry takes the tables with the routes, and a table of the file with the same name wins,
/// its status saying which (docs/xds.md "Precedence").
#[test]
fn the_routes_of_a_cluster_share_its_budget_and_breaker_in_the_registry() {
    let routes = RouteConfiguration::from_json(
        &json!({"virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
            {"name": "get", "match": {"path": "/shop.Inventory/Get"}, "route": {"cluster": "inventory"}},
            {"name": "put", "match": {"path": "/shop.Inventory/Put"}, "route": {"cluster": "inventory"}},
            {"name": "pay", "match": {"prefix": "/shop.Payments/"}, "route": {"cluster": "payments"}}
        ]}]}),
    )
    .unwrap();
    let mapped = map(&routes).unwrap();
    let mut cluster = budgeted(RetryBudget::default());
    cluster.outlier_detection = Some(OutlierDetection {
        enforcing_failure_percentage: Some(100),
        ..OutlierDetection::default()
    });
    let clusters = BTreeMap::from([("inventory".to_owned(), controls(&cluster).unwrap())]);
    let mut overlay = mapped.overlay.clone();
    attach(&mut overlay, &mapped.clusters, &clusters);
    let name = control_name("inventory");
    assert_eq!(overlay.budgets.keys().collect::<Vec<_>>(), [&name]);
    assert_eq!(overlay.breakers.keys().collect::<Vec<_>>(), [&name]);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rebound.toml");
    let text = format!(
        "default_policy = \"standard\"\n[policies.standard]\nbuiltin = \"best-effort\"\n\
         [breakers.\"{name}\"]\nerror_percentage = 7\n"
    );
    std::fs::write(&file, text).unwrap();
    let mut config = RegistryConfig::load(&file).unwrap();
    config.watch.enabled = false;
    let registry = PolicyRegistry::new(config).unwrap();
    registry.apply_overlay(Some(overlay)).unwrap();
    let config = registry.config();
    for policy in ["xds/v/get", "xds/v/put"] {
        let names = &config.policy_controls[policy];
        assert_eq!(names.budget.as_deref(), Some(name.as_str()), "{policy}");
        assert_eq!(names.breaker.as_deref(), Some(name.as_str()), "{policy}");
    }
    assert!(!config.policy_controls.contains_key("xds/v/pay"));
    assert_eq!(config.budgets[&name].percent, 20.0);
    assert_eq!(
        config.breakers[&name].config.error_percentage, 7,
        "the file's"
    );
    let precedence = registry.overlay_precedence().unwrap();
    assert_eq!(precedence.overridden, [format!("breakers.{name}")]);
    assert!(precedence.in_effect.contains(&format!("budgets.{name}")));
    assert!(precedence
        .in_effect
        .contains(&"policies.xds/v/get".to_owned()));
    assert_eq!(precedence.routes_first, 3);
}
