//! Resources as the control plane sends them (protobuf, `envoy-types`) turned into the models
//! the conversions read: a route configuration into the one [`super::envoy`] reads from JSON,
//! so that both take one conversion and one set of rules, and a cluster into
//! [`super::clusters`]'s.

use std::time::Duration;

use envoy_types::pb::envoy::config::cluster::v3 as cluster;
use envoy_types::pb::envoy::config::core::v3::RoutingPriority;
use envoy_types::pb::envoy::config::route::v3 as route;
use envoy_types::pb::google::protobuf;

use super::clusters::{Cluster, OutlierDetection, RetryBudget, Thresholds};
use super::envoy::{
    HeaderMatcher, HeaderRule, HedgePolicy, PathMatch, RetryBackOff, RetryPolicy, Route,
    RouteAction, RouteConfiguration, RouteMatch, VirtualHost,
};

/// Each of `$message`'s optional fields, by name, and whether it is set.
macro_rules! set_fields {
    ($message:expr, $($field:ident),* $(,)?) => {
        [$((stringify!($field), $message.$field.is_some())),*]
    };
}

/// A protobuf duration, negative ones as zero.
fn duration(d: &protobuf::Duration) -> Duration {
    let seconds = u64::try_from(d.seconds).unwrap_or(0);
    let nanos = u32::try_from(d.nanos).unwrap_or(0);
    Duration::new(seconds, nanos)
}

/// `message` as the model.
pub(super) fn route_configuration(message: &route::RouteConfiguration) -> RouteConfiguration {
    RouteConfiguration {
        name: message.name.clone(),
        virtual_hosts: message.virtual_hosts.iter().map(virtual_host).collect(),
    }
}

fn virtual_host(host: &route::VirtualHost) -> VirtualHost {
    VirtualHost {
        name: host.name.clone(),
        domains: host.domains.clone(),
        routes: host.routes.iter().map(route_of).collect(),
        retry_policy: host.retry_policy.as_ref().map(retry_policy),
        hedge_policy: host.hedge_policy.as_ref().map(hedge_policy),
    }
}

fn route_of(r: &route::Route) -> Route {
    use route::route::Action;
    use route::route_match::PathSpecifier;
    let matcher = match &r.r#match {
        None => RouteMatch {
            case_sensitive: true,
            ..RouteMatch::default()
        },
        Some(m) => RouteMatch {
            path: match &m.path_specifier {
                None => PathMatch::Prefix(String::new()),
                Some(PathSpecifier::Prefix(p)) => PathMatch::Prefix(p.clone()),
                Some(PathSpecifier::Path(p)) => PathMatch::Path(p.clone()),
                Some(PathSpecifier::SafeRegex(_)) => PathMatch::Other("safe_regex".into()),
                Some(_) => PathMatch::Other("path_specifier".into()),
            },
            headers: m.headers.iter().map(header_matcher).collect(),
            case_sensitive: m.case_sensitive.as_ref().is_none_or(|b| b.value),
        },
    };
    let action = match &r.action {
        Some(Action::Route(a)) => Some(RouteAction {
            cluster: match &a.cluster_specifier {
                Some(route::route_action::ClusterSpecifier::Cluster(c)) => Some(c.clone()),
                _ => None,
            },
            retry_policy: a.retry_policy.as_ref().map(retry_policy),
            hedge_policy: a.hedge_policy.as_ref().map(hedge_policy),
        }),
        _ => None,
    };
    Route {
        name: r.name.clone(),
        matcher,
        action,
    }
}

// The `*_match` fields are deprecated for `string_match`, and control planes still send them;
// Envoy and gRPC read both.
#[allow(deprecated)]
fn header_matcher(h: &route::HeaderMatcher) -> HeaderMatcher {
    use envoy_types::pb::envoy::r#type::matcher::v3::string_matcher::MatchPattern;
    use route::header_matcher::HeaderMatchSpecifier as Spec;
    let other = |name: &str| HeaderRule::Other(name.to_owned());
    let rule = match &h.header_match_specifier {
        _ if h.treat_missing_header_as_empty => other("treat_missing_header_as_empty"),
        None => HeaderRule::Present(true),
        Some(Spec::ExactMatch(v)) => HeaderRule::Exact(v.clone()),
        Some(Spec::PrefixMatch(v)) => HeaderRule::Prefix(v.clone()),
        Some(Spec::SuffixMatch(v)) => HeaderRule::Suffix(v.clone()),
        Some(Spec::ContainsMatch(v)) => HeaderRule::Contains(v.clone()),
        Some(Spec::PresentMatch(b)) => HeaderRule::Present(*b),
        Some(Spec::SafeRegexMatch(_)) => other("safe_regex_match"),
        Some(Spec::RangeMatch(_)) => other("range_match"),
        Some(Spec::StringMatch(m)) if m.ignore_case => other("string_match.ignore_case"),
        Some(Spec::StringMatch(m)) => match &m.match_pattern {
            Some(MatchPattern::Exact(v)) => HeaderRule::Exact(v.clone()),
            Some(MatchPattern::Prefix(v)) => HeaderRule::Prefix(v.clone()),
            Some(MatchPattern::Suffix(v)) => HeaderRule::Suffix(v.clone()),
            Some(MatchPattern::Contains(v)) => HeaderRule::Contains(v.clone()),
            _ => other("string_match"),
        },
    };
    HeaderMatcher {
        name: h.name.clone(),
        rule,
        invert: h.invert_match,
    }
}

fn retry_policy(p: &route::RetryPolicy) -> RetryPolicy {
    RetryPolicy {
        retry_on: p.retry_on.clone(),
        num_retries: p.num_retries.as_ref().map(|n| n.value),
        per_try_timeout: p.per_try_timeout.as_ref().map(duration),
        retry_back_off: p.retry_back_off.as_ref().map(|b| RetryBackOff {
            base_interval: b.base_interval.as_ref().map(duration),
            max_interval: b.max_interval.as_ref().map(duration),
        }),
        retry_host_predicates: p
            .retry_host_predicate
            .iter()
            .map(|h| h.name.clone())
            .collect(),
    }
}

fn hedge_policy(h: &route::HedgePolicy) -> HedgePolicy {
    HedgePolicy {
        initial_requests: h.initial_requests.as_ref().map(|n| n.value),
        hedge_on_per_try_timeout: h.hedge_on_per_try_timeout,
    }
}

/// `message` as the model.
pub(super) fn cluster_of(message: &cluster::Cluster) -> Cluster {
    let thresholds = (message.circuit_breakers.as_ref())
        .map(|c| c.thresholds.iter().map(thresholds).collect())
        .unwrap_or_default();
    Cluster {
        name: message.name.clone(),
        thresholds,
        outlier_detection: message.outlier_detection.as_ref().map(outlier_detection),
    }
}

fn thresholds(t: &cluster::circuit_breakers::Thresholds) -> Thresholds {
    let limits = set_fields!(
        t,
        max_connections,
        max_pending_requests,
        max_requests,
        max_retries,
        max_connection_pools,
    );
    Thresholds {
        default_priority: t.priority == RoutingPriority::Default as i32,
        retry_budget: t.retry_budget.as_ref().map(|b| RetryBudget {
            budget_percent: b.budget_percent.as_ref().map(|p| p.value),
            budget_interval: b.budget_interval.as_ref().map(duration),
            min_retry_concurrency: b.min_retry_concurrency.as_ref().map(|n| n.value),
        }),
        limits: set(&limits),
    }
}

/// The names of the fields set.
fn set(fields: &[(&'static str, bool)]) -> Vec<&'static str> {
    (fields.iter())
        .filter(|(_, is_set)| *is_set)
        .map(|(name, _)| *name)
        .collect()
}

fn outlier_detection(o: &cluster::OutlierDetection) -> OutlierDetection {
    let value = |n: &Option<protobuf::UInt32Value>| n.as_ref().map(|n| n.value);
    let mut others = set_fields!(
        o,
        max_ejection_percent,
        success_rate_minimum_hosts,
        success_rate_request_volume,
        success_rate_stdev_factor,
        consecutive_gateway_failure,
        enforcing_consecutive_gateway_failure,
        consecutive_local_origin_failure,
        enforcing_consecutive_local_origin_failure,
        enforcing_local_origin_success_rate,
        enforcing_failure_percentage_local_origin,
        failure_percentage_minimum_hosts,
        max_ejection_time,
        max_ejection_time_jitter,
        always_eject_one_host,
        detect_degraded_hosts,
    )
    .to_vec();
    others.push((
        "split_external_local_origin_errors",
        o.split_external_local_origin_errors,
    ));
    others.push(("monitors", !o.monitors.is_empty()));
    OutlierDetection {
        interval: o.interval.as_ref().map(duration),
        base_ejection_time: o.base_ejection_time.as_ref().map(duration),
        failure_percentage_threshold: value(&o.failure_percentage_threshold),
        enforcing_failure_percentage: value(&o.enforcing_failure_percentage),
        failure_percentage_request_volume: value(&o.failure_percentage_request_volume),
        consecutive_5xx: value(&o.consecutive_5xx) != Some(0)
            && value(&o.enforcing_consecutive_5xx) != Some(0),
        success_rate: value(&o.enforcing_success_rate) != Some(0),
        others: set(&others),
    }
}
