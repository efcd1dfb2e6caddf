//! A route configuration as the control plane sends it (protobuf, `envoy-types`) turned into
//! the model [`super::envoy`] reads from JSON, so that both take one conversion and one set of
//! rules.

use std::time::Duration;

use envoy_types::pb::envoy::config::route::v3 as route;
use envoy_types::pb::google::protobuf;

use super::envoy::{
    HedgePolicy, PathMatch, RetryBackOff, RetryPolicy, Route, RouteAction, RouteConfiguration,
    RouteMatch, VirtualHost,
};

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
            headers: m.headers.len(),
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
