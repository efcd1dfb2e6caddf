//! The resources of the version serving, so that a response is checked against them and the
//! registry is given one configuration of everything: the route configurations (each response
//! holds those that changed) and the clusters (each response holds every cluster subscribed
//! to, state of the world, as the xDS protocol says of clusters). A response is decoded and
//! converted into a copy; the copy replaces these only once the registry took it.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::config::cluster::v3::Cluster as ClusterProto;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration as RouteProto;
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
use prost::Message;

use super::clusters::{self, ClusterControls};
use super::proto;
use super::routes::{self, MappedRoutes};
use crate::config::ConfigOverlay;

/// The type URL of a route configuration.
pub const ROUTE_CONFIGURATION: &str =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/// The type URL of a cluster.
pub const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

/// Route configurations and clusters accepted, converted.
#[derive(Debug, Clone, Default)]
pub(super) struct Accepted {
    routes: BTreeMap<String, MappedRoutes>,
    clusters: BTreeMap<String, ClusterControls>,
}

impl Accepted {
    /// These with `response`'s resources in place; why not, naming the resource and the field.
    pub(super) fn with(&self, response: &DiscoveryResponse) -> Result<Accepted, String> {
        let mut next = self.clone();
        match response.type_url.as_str() {
            ROUTE_CONFIGURATION => {
                for (i, any) in response.resources.iter().enumerate() {
                    let message = RouteProto::decode(any.value.as_slice())
                        .map_err(|e| format!("resources[{i}]: not a RouteConfiguration: {e}"))?;
                    let model = proto::route_configuration(&message);
                    let mapped =
                        routes::map(&model).map_err(|e| format!("{}: {e}", message.name))?;
                    next.routes.insert(message.name.clone(), mapped);
                }
            }
            CLUSTER => {
                next.clusters.clear();
                for (i, any) in response.resources.iter().enumerate() {
                    let message = ClusterProto::decode(any.value.as_slice())
                        .map_err(|e| format!("resources[{i}]: not a Cluster: {e}"))?;
                    let controls = clusters::controls(&proto::cluster_of(&message))
                        .map_err(|e| format!("{}: {e}", message.name))?;
                    next.clusters.insert(message.name.clone(), controls);
                }
            }
            other => return Err(format!("type {other} was not asked for")),
        }
        Ok(next)
    }

    /// The route configurations named in `names`, in that order, as one overlay with their
    /// clusters' controls.
    pub(super) fn overlay(&self, names: &[String]) -> ConfigOverlay {
        let mut overlay = ConfigOverlay::default();
        let mut policy_clusters = BTreeMap::new();
        for mapped in names.iter().filter_map(|name| self.routes.get(name)) {
            let m = &mapped.overlay;
            overlay.policies.extend(m.policies.clone());
            overlay.routes.extend(m.routes.clone());
            overlay.ignored.extend(m.ignored.clone());
            policy_clusters.extend(mapped.clusters.clone());
        }
        clusters::attach(&mut overlay, &policy_clusters, &self.clusters);
        overlay
    }

    /// The clusters the route configurations named in `names` forward to, sorted.
    pub(super) fn cluster_names(&self, names: &[String]) -> Vec<String> {
        (names.iter())
            .filter_map(|name| self.routes.get(name))
            .flat_map(|mapped| mapped.clusters.values().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}
