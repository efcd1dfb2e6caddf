//! The resources of the version serving, so that a response is checked against them and the
//! registry is given one configuration of everything: the listeners (gRPC's API listeners,
//! whose connection manager names a route configuration or holds one), the route
//! configurations (each response holds those that changed) and the clusters. Listeners and
//! clusters come state of the world, every one subscribed to in each response, as the xDS
//! protocol says of those two types. A response is decoded and converted into a copy; the copy
//! replaces these only once the registry took it.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::config::cluster::v3::Cluster as ClusterProto;
use envoy_types::pb::envoy::config::listener::v3::Listener as ListenerProto;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration as RouteProto;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    http_connection_manager::RouteSpecifier, HttpConnectionManager,
};
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
use envoy_types::pb::google::protobuf::Any;
use prost::Message;

use super::clusters::{self, ClusterControls};
use super::proto;
use super::routes::{self, MappedRoutes};
use crate::config::{ConfigOverlay, XdsSourceConfig};

/// The type URL of a listener.
pub const LISTENER: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

/// The type URL of a route configuration.
pub const ROUTE_CONFIGURATION: &str =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/// The type URL of a cluster.
pub const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

/// The type URL of an API listener's connection manager.
const CONNECTION_MANAGER: &str = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

/// Where a listener's routes are.
#[derive(Debug, Clone)]
enum ListenerRoutes {
    /// In the route configuration of that name (RDS).
    Named(String),
    /// In the listener itself.
    Inline(MappedRoutes),
}

/// Listeners, route configurations and clusters accepted, converted.
#[derive(Debug, Clone, Default)]
pub(super) struct Accepted {
    listeners: BTreeMap<String, ListenerRoutes>,
    routes: BTreeMap<String, MappedRoutes>,
    clusters: BTreeMap<String, ClusterControls>,
}

/// `any` decoded as `M`, or why not, naming it as `resources[i]`.
fn decode<M: Message + Default>(any: &Any, i: usize, what: &str) -> Result<M, String> {
    M::decode(any.value.as_slice()).map_err(|e| format!("resources[{i}]: not a {what}: {e}"))
}

impl Accepted {
    /// These with `response`'s resources in place; why not, naming the resource and the field.
    pub(super) fn with(&self, response: &DiscoveryResponse) -> Result<Accepted, String> {
        let mut next = self.clone();
        let resources = response.resources.iter().enumerate();
        match response.type_url.as_str() {
            LISTENER => {
                next.listeners.clear();
                for (i, any) in resources {
                    let message: ListenerProto = decode(any, i, "Listener")?;
                    let routes =
                        listener_routes(&message).map_err(|e| format!("{}: {e}", message.name))?;
                    next.listeners.insert(message.name.clone(), routes);
                }
            }
            ROUTE_CONFIGURATION => {
                for (i, any) in resources {
                    let message: RouteProto = decode(any, i, "RouteConfiguration")?;
                    let model = proto::route_configuration(&message);
                    let mapped =
                        routes::map(&model).map_err(|e| format!("{}: {e}", message.name))?;
                    next.routes.insert(message.name.clone(), mapped);
                }
            }
            CLUSTER => {
                next.clusters.clear();
                for (i, any) in resources {
                    let message: ClusterProto = decode(any, i, "Cluster")?;
                    let controls = clusters::controls(&proto::cluster_of(&message))
                        .map_err(|e| format!("{}: {e}", message.name))?;
                    next.clusters.insert(message.name.clone(), controls);
                }
            }
            other => return Err(format!("type {other} was not asked for")),
        }
        Ok(next)
    }

    /// The route configurations to subscribe to: those the listeners of `config` name, in
    /// their order, then `config`'s own.
    pub(super) fn route_names(&self, config: &XdsSourceConfig) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let named = (config.listeners.iter()).filter_map(|l| match self.listeners.get(l) {
            Some(ListenerRoutes::Named(name)) => Some(name),
            _ => None,
        });
        for name in named.chain(&config.route_configurations) {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The routes serving for `config`, in the order they match: the listeners', then the
    /// route configurations named directly.
    fn serving<'a>(&'a self, config: &'a XdsSourceConfig) -> Vec<&'a MappedRoutes> {
        let mut seen = BTreeSet::new();
        let mut serving = Vec::new();
        for listener in &config.listeners {
            match self.listeners.get(listener) {
                Some(ListenerRoutes::Inline(mapped)) => serving.push(mapped),
                Some(ListenerRoutes::Named(name)) if seen.insert(name) => {
                    serving.extend(self.routes.get(name));
                }
                _ => {}
            }
        }
        for name in &config.route_configurations {
            if seen.insert(name) {
                serving.extend(self.routes.get(name));
            }
        }
        serving
    }

    /// The routes serving for `config` as one overlay with their clusters' controls.
    pub(super) fn overlay(&self, config: &XdsSourceConfig) -> ConfigOverlay {
        let mut overlay = ConfigOverlay::default();
        let mut policy_clusters = BTreeMap::new();
        for mapped in self.serving(config) {
            let m = &mapped.overlay;
            overlay.policies.extend(m.policies.clone());
            overlay.routes.extend(m.routes.clone());
            overlay.ignored.extend(m.ignored.clone());
            policy_clusters.extend(mapped.clusters.clone());
        }
        clusters::attach(&mut overlay, &policy_clusters, &self.clusters);
        overlay
    }

    /// The clusters the routes serving for `config` forward to, sorted.
    pub(super) fn cluster_names(&self, config: &XdsSourceConfig) -> Vec<String> {
        (self.serving(config).into_iter())
            .flat_map(|mapped| mapped.clusters.values().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

/// Where `listener`'s routes are: a gRPC client's listener is an API listener whose
/// connection manager names a route configuration (RDS) or holds one (gRFC A27).
fn listener_routes(listener: &ListenerProto) -> Result<ListenerRoutes, String> {
    let any = (listener.api_listener.as_ref())
        .and_then(|a| a.api_listener.as_ref())
        .ok_or("api_listener: required (a client's listener, gRFC A27)")?;
    if any.type_url != CONNECTION_MANAGER {
        return Err(format!(
            "api_listener.api_listener: `{}` is not an HttpConnectionManager",
            any.type_url
        ));
    }
    let manager = HttpConnectionManager::decode(any.value.as_slice())
        .map_err(|e| format!("api_listener.api_listener: {e}"))?;
    match manager.route_specifier {
        Some(RouteSpecifier::Rds(rds)) if !rds.route_config_name.is_empty() => {
            Ok(ListenerRoutes::Named(rds.route_config_name))
        }
        Some(RouteSpecifier::RouteConfig(config)) => {
            let mapped = routes::map(&proto::route_configuration(&config))
                .map_err(|e| format!("api_listener.route_config.{e}"))?;
            Ok(ListenerRoutes::Inline(mapped))
        }
        _ => Err(
            "api_listener: expected `rds` with a route_config_name, or `route_config` (gRFC A27)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use envoy_types::pb::envoy::config::listener::v3::ApiListener;
    use envoy_types::pb::envoy::config::route::v3::{Route, RouteAction, VirtualHost};
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::Rds;

    use super::*;

    fn any(type_url: &str, message: &impl Message) -> Any {
        Any {
            type_url: type_url.into(),
            value: message.encode_to_vec(),
        }
    }

    fn listener(name: &str, routes: Option<RouteSpecifier>) -> Any {
        let manager = HttpConnectionManager {
            route_specifier: routes,
            ..HttpConnectionManager::default()
        };
        let listener = ListenerProto {
            name: name.into(),
            api_listener: Some(ApiListener {
                api_listener: Some(any(CONNECTION_MANAGER, &manager)),
            }),
            ..ListenerProto::default()
        };
        any(LISTENER, &listener)
    }

    fn response(type_url: &str, resources: Vec<Any>) -> DiscoveryResponse {
        DiscoveryResponse {
            type_url: type_url.into(),
            resources,
            ..DiscoveryResponse::default()
        }
    }

    /// gRFC A27 "Listener Proto": a client's listener is an API listener whose
    /// HttpConnectionManager names a route configuration (`rds.route_config_name`) or holds one
    /// (`route_config`); anything else is refused. The listeners' routes match first, in the
    /// configured order, then the route configurations named directly, each once.
    #[test]
    fn listeners_name_or_hold_their_routes() {
        let config: XdsSourceConfig = toml::from_str(
            "server = \"http://h:1\"\nnode_id = \"n\"\nlisteners = [\"a\", \"b\"]\n\
             route_configurations = [\"direct\", \"named\"]\n",
        )
        .unwrap();
        let named = Some(RouteSpecifier::Rds(Rds {
            route_config_name: "named".into(),
            ..Rds::default()
        }));
        let route = Route {
            action: Some(
                envoy_types::pb::envoy::config::route::v3::route::Action::Route(
                    RouteAction::default(),
                ),
            ),
            ..Route::default()
        };
        let inline = Some(RouteSpecifier::RouteConfig(RouteProto {
            virtual_hosts: vec![VirtualHost {
                name: "inline".into(),
                domains: vec!["*".into()],
                routes: vec![route],
                ..VirtualHost::default()
            }],
            ..RouteProto::default()
        }));
        let accepted = Accepted::default()
            .with(&response(
                LISTENER,
                vec![listener("a", named), listener("b", inline)],
            ))
            .unwrap();
        assert_eq!(accepted.route_names(&config), ["named", "direct"]);
        let overlay = accepted.overlay(&config);
        assert_eq!(
            overlay.policies.keys().collect::<Vec<_>>(),
            ["xds/inline/0"]
        );

        let bare = ListenerProto {
            name: "c".into(),
            ..ListenerProto::default()
        };
        let error = Accepted::default()
            .with(&response(LISTENER, vec![any(LISTENER, &bare)]))
            .unwrap_err();
        assert_eq!(
            error,
            "c: api_listener: required (a client's listener, gRFC A27)"
        );
        let error = Accepted::default()
            .with(&response(LISTENER, vec![listener("d", None)]))
            .unwrap_err();
        assert!(
            error.starts_with("d: api_listener: expected `rds`"),
            "{error}"
        );
    }
}
