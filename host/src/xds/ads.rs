//! The xDS client of `[source.xds]` (feature `xds`): one Aggregated Discovery Service stream to
//! the control plane (plaintext, or TLS with optional client certificates), subscribed to the
//! configured listeners, to the route configurations they and the configuration name, and to
//! the clusters their routes forward to, state of the world (the xDS protocol: versions and
//! nonces per type, ACK and NACK). Each response is validated whole: its listeners read, its
//! route configurations converted (gRFC A44) or its clusters' retry budgets and outlier
//! detection read ([`super::clusters`]), and swapped into the registry as one version with the
//! file's configuration ([`PolicyRegistry::apply_overlay`]); then it is ACKed with its version
//! and nonce. One that does not validate, or that the registry refuses, is NACKed with the
//! error, the last version ACKed still named, and the running configuration stays. A stream
//! that fails is opened again after a backoff (0.5 s doubling to 30 s); while the control plane
//! is away the last good version serves, and the status and the log say so.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::protobuf::{value::Kind, Struct, Value};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use serde::Serialize;
use tokio::sync::mpsc;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use super::accepted::Accepted;
pub use super::accepted::{CLUSTER, LISTENER, ROUTE_CONFIGURATION};
use crate::config::XdsSourceConfig;
use crate::mutex::lock;
use crate::registry::PolicyRegistry;

/// The first and the longest wait before opening the stream again.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(30));

/// gRPC's INVALID_ARGUMENT, the code of a NACK's error detail.
const INVALID_ARGUMENT: i32 = 3;

/// A version ACKed or NACKed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Answered {
    /// The type of its resources: `Listener`, `RouteConfiguration` or `Cluster`.
    pub resource: String,
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
    /// Streams lost, or that could not be opened.
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
                accepted: Accepted::default(),
                versions: BTreeMap::new(),
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
    /// The resources of the version serving.
    accepted: Accepted,
    /// The version ACKed last, by type URL.
    versions: BTreeMap<String, String>,
}

/// The management server's endpoint: its timeout and, for `https://`, TLS with the configured
/// roots (the system's without a `ca_file`), client identity and server name. The files are
/// read at each connection, so that a renewed certificate is picked up.
fn endpoint(config: &XdsSourceConfig) -> Result<Endpoint, String> {
    let mut endpoint = Endpoint::from_shared(config.server.clone())
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_millis(config.timeout_ms));
    if config.server.starts_with("https://") {
        let read = |path: &std::path::Path| {
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        let mut tls = ClientTlsConfig::new();
        tls = match &config.ca_file {
            Some(ca) => tls.ca_certificate(Certificate::from_pem(read(ca)?)),
            None => tls.with_native_roots(),
        };
        if let (Some(cert), Some(key)) = (&config.cert_file, &config.key_file) {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        if let Some(name) = &config.server_name {
            tls = tls.domain_name(name.clone());
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| format!("TLS: {e}"))?;
    }
    Ok(endpoint)
}

/// `error` and what caused it, as one line: a transport's own message says little.
fn with_causes(error: &dyn std::error::Error) -> String {
    causes(error.to_string(), error.source())
}

/// A gRPC status's code and message, and what caused it, as one line.
fn status_line(status: &tonic::Status) -> String {
    use std::error::Error;
    let line = format!("{:?}: {}", status.code(), status.message());
    causes(line, status.source())
}

/// `line` followed by `cause` and its own causes.
fn causes(mut line: String, mut cause: Option<&dyn std::error::Error>) -> String {
    while let Some(e) = cause {
        line.push_str(": ");
        line.push_str(&e.to_string());
        cause = e.source();
    }
    line
}

/// The short name of a type URL, as the status shows it.
fn resource_name(type_url: &str) -> String {
    type_url.rsplit('.').next().unwrap_or(type_url).to_owned()
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

    /// A request for `names` of type `type_url`, naming the version of that type ACKed last and
    /// answering `nonce`.
    fn request(
        &self,
        type_url: &str,
        names: Vec<String>,
        nonce: &str,
        error: Option<String>,
    ) -> DiscoveryRequest {
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
            version_info: self.versions.get(type_url).cloned().unwrap_or_default(),
            node: Some(Node {
                id: self.config.node_id.clone(),
                cluster: self.config.node_cluster.clone(),
                metadata: Some(Struct { fields: metadata }),
                user_agent_name: "rebound".into(),
                ..Node::default()
            }),
            resource_names: names,
            type_url: type_url.into(),
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
        let channel = endpoint(&self.config)?
            .connect()
            .await
            .map_err(|e| format!("cannot connect: {}", with_causes(&e)))?;
        let (tx, rx) = mpsc::channel(16);
        // What this stream subscribed to, by type, and the nonce it last received of each.
        let mut subscribed: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        let mut nonces: BTreeMap<String, String> = BTreeMap::new();
        // The first subscriptions go before the call: a server may hold its response headers
        // until the first request arrives.
        self.subscribe(&tx, &mut subscribed, &nonces).await?;
        let requests =
            futures_util::stream::unfold(rx, |mut rx| async { rx.recv().await.map(|r| (r, rx)) });
        let mut responses = AggregatedDiscoveryServiceClient::new(channel)
            .stream_aggregated_resources(requests)
            .await
            .map_err(|e| status_line(&e))?
            .into_inner();
        lock(&self.status).connected = true;
        *wait = BACKOFF.0;
        tracing::info!(server = self.config.server, "xDS stream open");
        loop {
            let Some(response) = responses.message().await.map_err(|e| status_line(&e))? else {
                return Ok(());
            };
            nonces.insert(response.type_url.clone(), response.nonce.clone());
            let answer = self.answer(response).await;
            tx.send(answer)
                .await
                .map_err(|_| "the request stream closed")?;
            self.subscribe(&tx, &mut subscribed, &nonces).await?;
        }
    }

    /// Sends a request for each type whose names to subscribe to changed since `subscribed`.
    async fn subscribe(
        &self,
        tx: &mpsc::Sender<DiscoveryRequest>,
        subscribed: &mut BTreeMap<&'static str, Vec<String>>,
        nonces: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        for type_url in [LISTENER, ROUTE_CONFIGURATION, CLUSTER] {
            let wanted = self.names(type_url);
            let before = subscribed.get(type_url);
            if before.is_none_or(|b| *b != wanted) && !(before.is_none() && wanted.is_empty()) {
                let nonce = nonces.get(type_url).cloned().unwrap_or_default();
                let request = self.request(type_url, wanted.clone(), &nonce, None);
                subscribed.insert(type_url, wanted);
                tx.send(request)
                    .await
                    .map_err(|_| "the request stream closed")?;
            }
        }
        Ok(())
    }

    /// The resources of `type_url` to subscribe to: the configured listeners, the route
    /// configurations they and the configuration name, the clusters of the routes serving.
    fn names(&self, type_url: &str) -> Vec<String> {
        match type_url {
            LISTENER => self.config.listeners.clone(),
            ROUTE_CONFIGURATION => self.accepted.route_names(&self.config),
            CLUSTER => self.accepted.cluster_names(&self.config),
            _ => Vec::new(),
        }
    }

    /// Validates and applies `response`; the ACK or NACK to send, naming what it subscribes to.
    async fn answer(&mut self, response: DiscoveryResponse) -> DiscoveryRequest {
        let answered = Answered {
            resource: resource_name(&response.type_url),
            version: response.version_info.clone(),
            nonce: response.nonce.clone(),
        };
        let names = self.names(&response.type_url);
        match self.apply(&response).await {
            Ok(()) => {
                self.versions
                    .insert(response.type_url.clone(), answered.version.clone());
                let mut status = lock(&self.status);
                status.acks += 1;
                status.last_ack = Some(answered.clone());
                status.ignored = self.accepted.overlay(&self.config).ignored;
                tracing::info!(
                    resource = answered.resource,
                    version = answered.version,
                    nonce = answered.nonce,
                    "xDS version ACKed"
                );
                drop(status);
                self.request(&response.type_url, names, &answered.nonce, None)
            }
            Err(error) => {
                let mut status = lock(&self.status);
                status.nacks += 1;
                status.last_nack = Some((answered.clone(), error.clone()));
                tracing::warn!(
                    resource = answered.resource,
                    version = answered.version,
                    nonce = answered.nonce,
                    error,
                    "xDS version NACKed; the version serving stays"
                );
                drop(status);
                self.request(&response.type_url, names, &answered.nonce, Some(error))
            }
        }
    }

    /// Converts `response`'s resources and swaps them in, with the others serving, as one
    /// configuration.
    async fn apply(&mut self, response: &DiscoveryResponse) -> Result<(), String> {
        let next = self.accepted.with(response)?;
        let overlay = next.overlay(&self.config);
        let registry = self.registry.clone();
        tokio::task::spawn_blocking(move || registry.apply_overlay(Some(overlay)))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        self.accepted = next;
        Ok(())
    }
}
