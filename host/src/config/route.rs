//! `[[routes]]`: a plain HTTP request or gRPC call routed to a policy by what it is sent to —
//! its protocol, authority, gRPC service and method, or HTTP route — and by its client context
//! ([`ContextMatch`]). The first route that
//! matches decides (file order), after a request's own policy name and its profile, before the
//! `[request_types]` and `[services]` tables.

use std::time::Duration;

use super::ContextMatch;
use crate::grpc::split_full_method;
use crate::request::{Request, Service};

/// One `[[routes]]` entry: what a request must match (every field given) and its policy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Route {
    /// `http` or `grpc`.
    pub protocol: Option<Service>,
    /// The authority: `host:port` matches exactly; a host alone matches it on any port.
    pub authority: Option<String>,
    /// A gRPC call's service, `package.Service`.
    pub grpc_service: Option<String>,
    /// A gRPC call's method, within `grpc_service`.
    pub grpc_method: Option<String>,
    /// An HTTP request's route: exactly, or every route under a prefix written `/v1/orders/*`.
    pub path: Option<String>,
    /// Conditions on the request's client context, every one to be met.
    pub client_context: Vec<ContextMatch>,
    /// The policy that decides for the requests it matches.
    pub policy: String,
    /// How long each attempt of the requests it matches may run (`attempt_timeout_ms`), over
    /// the policy's own.
    pub attempt_timeout: Option<Duration>,
}

impl Route {
    /// Whether `request` matches every field given.
    pub fn matches(&self, request: &Request) -> bool {
        let service = request.service();
        if !matches!(service, Service::Http | Service::Grpc)
            || self.protocol.is_some_and(|p| p != service)
        {
            return false;
        }
        if let Some(wanted) = &self.authority {
            let Some(authority) = request.authority() else {
                return false;
            };
            let host = authority
                .rsplit_once(':')
                .map_or(authority, |(host, _)| host);
            if authority != wanted && (wanted.contains(':') || host != wanted) {
                return false;
            }
        }
        if self.grpc_service.is_some() {
            let called = request.route().and_then(split_full_method);
            let Some((called_service, called_method)) = called.filter(|_| service == Service::Grpc)
            else {
                return false;
            };
            if self.grpc_service.as_deref() != Some(called_service)
                || self
                    .grpc_method
                    .as_deref()
                    .is_some_and(|m| m != called_method)
            {
                return false;
            }
        }
        if let Some(wanted) = &self.path {
            let Some(route) = request.route().filter(|_| service == Service::Http) else {
                return false;
            };
            let matched = match wanted.strip_suffix('*') {
                Some(prefix) => route.starts_with(prefix),
                None => route == wanted,
            };
            if !matched {
                return false;
            }
        }
        let context = request.client_context();
        self.client_context.iter().all(|c| c.matches(context))
    }
}
