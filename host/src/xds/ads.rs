//! The xDS client of `[source.xds]` (feature `xds`): one Aggregated Discovery Service stream to
//! the control plane, subscribed to the configured route configurations, state of the world
//! (the xDS protocol: versions, nonces, ACK and NACK). Each response is validated whole: its
//! route configurations converted (gRFC A44) and swapped into the registry as one version with
//! the file's configuration ([`PolicyRegistry::apply_overlay`]); then it is ACKed with its
//! version and nonce. One that does not validate, or that the registry refuses, is NACKed with
//! the error, the last version ACKed still named, and the running configuration stays. A
//! stream that fails is opened again after a backoff (0.5 s doubling to 30 s); while the
//! control plane is away the last good version serves, and the status and the log say so.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration as RouteProto;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::protobuf::{value::Kind, Struct, Value};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use prost::Message;
use serde::Serialize;
use tokio::sync::mpsc;

use super::routes;
use crate::config::ConfigOverlay;
use crate::config::XdsSourceConfig;
use crate::mutex::lock;
use crate::registry::PolicyRegistry;

/// The type URL of a route configuration.
pub const ROUTE_CONFIGURATION: &str =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/// The first and the longest wait before opening the stream again.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(30));

/// gRPC's INVALID_ARGUMENT, the code of a NACK's error detail.
const INVALID_ARGUMENT: i32 = 3;

/// A version ACKed or NACKed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Answered {
    /// The response's version.
    pub version: String,
    /// Its nonce.
    pub nonce: String,
}

/// The xDS source's state, as `rebound serve`'s status shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct XdsStatus {
    /// The management server.
    pub server: String,
    /// Whether the stream is open.
    pub connected: bool,
    /// The last response ACKed (its version serves).
    pub last_ack: Option<Answered>,
    /// The last response NACKed, and why.
    pub last_nack: Option<(Answered, String)>,
    /// Responses ACKed.
    pub acks: u64,
    /// Responses NACKed.
    pub nacks: u64,
    /// Streams opened after the first.
    pub reconnects: u64,
    /// Why the stream last failed, if it did.
    pub last_error: Option<String>,
    /// What the version serving holds and Rebound does not read, with its field path.
    pub ignored: Vec<String>,
}

/// A running xDS source: its status.
#[derive(Debug, Clone, Default)]
pub struct XdsSource {
    status: Arc<Mutex<XdsStatus>>,
}

impl XdsSource {
    /// Follows `config`'s control plane for `registry`, on the current tokio runtime, until the
    /// runtime stops.
    pub fn spawn(registry: Arc<PolicyRegistry>, config: XdsSourceConfig) -> XdsSource {
        let source = XdsSource::default();
        lock(&source.status).server = config.server.clone();
        let status = source.status.clone();
        tokio::spawn(async move {
            let mut state = Stream {
                registry,
                config,
                status,
                accepted: BTreeMap::new(),
            };
            state.follow().await;
        });
        source
    }

    /// The source's state now.
    pub fn status(&self) -> XdsStatus {
        lock(&self.status).clone()
    }
}

/// The client's state across streams.
struct Stream {
    registry: Arc<PolicyRegistry>,
    config: XdsSourceConfig,
    status: Arc<Mutex<XdsStatus>>,
    /// The route configurations of the version serving, by name.
    accepted: BTreeMap<String, ConfigOverlay>,
}

impl Stream {
    /// Opens the stream again and again, backing off between failures.
    async fn follow(&mut self) {
        let mut wait = BACKOFF.0;
        loop {
            let error = match self.session(&mut wait).await {
                Ok(()) => "the control plane closed the stream".to_owned(),
                Err(error) => error,
            };
            {
                let mut status = lock(&self.status);
                status.connected = false;
                status.last_error = Some(error.clone());
                status.reconnects += 1;
            }
            tracing::warn!(
                server = self.config.server,
                error,
                retry_in_ms = wait.as_millis() as u64,
                "xDS stream lost; the last version ACKed keeps serving"
            );
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(BACKOFF.1);
        }
    }

    /// A request for the route configurations, naming `version` and answering `nonce`.
    fn request(&self, version: &str, nonce: &str, error: Option<String>) -> DiscoveryRequest {
        let metadata = (self.config.node_metadata.iter())
            .map(|(k, v)| {
                (
                    k.clone(),
                    Value {
                        kind: Some(Kind::StringValue(v.clone())),
                    },
                )
            })
            .collect();
        DiscoveryRequest {
            version_info: version.to_owned(),
            node: Some(Node {
                id: self.config.node_id.clone(),
                cluster: self.config.node_cluster.clone(),
                metadata: Some(Struct { fields: metadata }),
                user_agent_name: "rebound".into(),
                ..Node::default()
            }),
            resource_names: self.config.route_configurations.clone(),
            type_url: ROUTE_CONFIGURATION.into(),
            response_nonce: nonce.to_owned(),
            error_detail: error.map(|message| RpcStatus {
                code: INVALID_ARGUMENT,
                message,
                details: Vec::new(),
            }),
            ..DiscoveryRequest::default()
        }
    }

    /// One stream: subscribe, then answer every response until it fails.
    async fn session(&mut self, wait: &mut Duration) -> Result<(), String> {
        let endpoint = tonic::transport::Endpoint::from_shared(self.config.server.clone())
            .map_err(|e| e.to_string())?
            .connect_timeout(Duration::from_millis(self.config.timeout_ms));
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let (tx, rx) = mpsc::channel(16);
        let version = lock(&self.status)
            .last_ack
            .as_ref()
            .map(|a| a.version.clone())
            .unwrap_or_default();
        let _ = tx.send(self.request(&version, "", None)).await;
        let requests =
            futures_util::stream::unfold(rx, |mut rx| async { rx.recv().await.map(|r| (r, rx)) });
        let mut responses = AggregatedDiscoveryServiceClient::new(channel)
            .stream_aggregated_resources(requests)
            .await
            .map_err(|e| e.to_string())?
            .into_inner();
        lock(&self.status).connected = true;
        *wait = BACKOFF.0;
        tracing::info!(server = self.config.server, "xDS stream open");
        while let Some(response) = responses.message().await.map_err(|e| e.to_string())? {
            let answer = self.answer(response).await;
            if tx.send(answer).await.is_err() {
                return Err("the request stream closed".into());
            }
        }
        Ok(())
    }

    /// Validates and applies `response`; the ACK or NACK to send.
    async fn answer(&mut self, response: DiscoveryResponse) -> DiscoveryRequest {
        let answered = Answered {
            version: response.version_info.clone(),
            nonce: response.nonce.clone(),
        };
        match self.apply(&response).await {
            Ok(()) => {
                let mut status = lock(&self.status);
                status.acks += 1;
                status.last_ack = Some(answered.clone());
                status.ignored = self
                    .accepted
                    .values()
                    .flat_map(|m| m.ignored.clone())
                    .collect();
                tracing::info!(
                    version = answered.version,
                    nonce = answered.nonce,
                    "xDS version ACKed"
                );
                drop(status);
                self.request(&answered.version, &answered.nonce, None)
            }
            Err(error) => {
                let mut status = lock(&self.status);
                status.nacks += 1;
                status.last_nack = Some((answered.clone(), error.clone()));
                let serving = status
                    .last_ack
                    .as_ref()
                    .map(|a| a.version.clone())
                    .unwrap_or_default();
                tracing::warn!(
                    version = answered.version,
                    nonce = answered.nonce,
                    error,
                    "xDS version NACKed; the version serving stays"
                );
                drop(status);
                self.request(&serving, &answered.nonce, Some(error))
            }
        }
    }

    /// Converts every route configuration of `response` and swaps them in, with those it does
    /// not hold, as one configuration.
    async fn apply(&mut self, response: &DiscoveryResponse) -> Result<(), String> {
        if response.type_url != ROUTE_CONFIGURATION {
            return Err(format!("type {} was not asked for", response.type_url));
        }
        let mut next = self.accepted.clone();
        for (i, any) in response.resources.iter().enumerate() {
            let message = RouteProto::decode(any.value.as_slice())
                .map_err(|e| format!("resources[{i}]: not a RouteConfiguration: {e}"))?;
            let model = super::proto::route_configuration(&message);
            let mapped = routes::map(&model).map_err(|e| format!("{}: {e}", message.name))?;
            next.insert(message.name.clone(), mapped);
        }
        let overlay = (self.config.route_configurations.iter())
            .filter_map(|name| next.get(name))
            .fold(ConfigOverlay::default(), |mut all, m| {
                all.policies.extend(m.policies.clone());
                all.routes.extend(m.routes.clone());
                all.ignored.extend(m.ignored.clone());
                all
            });
        let registry = self.registry.clone();
        tokio::task::spawn_blocking(move || registry.apply_overlay(Some(overlay)))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        self.accepted = next;
        Ok(())
    }
}
