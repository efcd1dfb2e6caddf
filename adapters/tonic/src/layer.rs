//! [`ReboundLayer`]: what every call of a channel shares — the registry, which methods are
//! idempotent, how much of a call is kept to send again, the deadline of calls that set none.

use std::sync::Arc;
use std::time::Duration;

use rebound::registry::PolicyRegistry;
use rebound::replay_body::{replay_limit, ZeroReplayLimit};
use rebound::{ContextHeaders, InvalidHeaderName};

use crate::service::Rebound;
use crate::shared::Shared;

/// A tower layer deciding a tonic channel's retries with a policy registry.
#[derive(Debug, Clone)]
pub struct ReboundLayer {
    pub(crate) shared: Arc<Shared>,
}

impl ReboundLayer {
    /// The most bytes of a request body kept by default: a call larger than this is sent once.
    pub const DEFAULT_MAX_REPLAY_BYTES: usize = rebound::replay_body::DEFAULT_MAX_REPLAY_BYTES;

    /// The deadline of a call that sends no `grpc-timeout`, by default.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// Decides with `registry` (its `[[routes]]`, request-type and service routes, else its
    /// default policy). No method is idempotent until declared.
    pub fn new(registry: Arc<PolicyRegistry>) -> Self {
        ReboundLayer {
            shared: Arc::new(Shared {
                registry,
                idempotent: Vec::new(),
                max_replay_bytes: Self::DEFAULT_MAX_REPLAY_BYTES,
                timeout: Self::DEFAULT_TIMEOUT,
                context_metadata: ContextHeaders::new(),
            }),
        }
    }

    /// Declares methods idempotent: full method names (`/shop.Inventory/Get`) or every method
    /// of a service (`/shop.Inventory/*`). gRPC cannot know it; a call not declared is sent
    /// again only if it was never sent.
    pub fn idempotent<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.shared_mut()
            .idempotent
            .extend(methods.into_iter().map(Into::into));
        self
    }

    /// Keeps at most `bytes` of a call's request to send it again (default 64 KiB): a larger
    /// call is sent once, committed (gRFC A6), and never retried. Zero is refused.
    pub fn max_replay_bytes(mut self, bytes: usize) -> Result<Self, ZeroReplayLimit> {
        self.shared_mut().max_replay_bytes = replay_limit(bytes)?;
        Ok(self)
    }

    /// The deadline of a call that sends no `grpc-timeout` (default 30 s). A call's own
    /// deadline is kept and shrunk to the time left on each retry.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.shared_mut().timeout = timeout;
        }
        self
    }

    /// Reads the call's ASCII metadata `key` into the client-context key `context_key`, which
    /// the policy reads (`host.client-context`): `context_metadata("idempotency-key",
    /// "idempotency-key")`. A [`ClientContext`](rebound::ClientContext) in the call's
    /// extensions adds entries of its own, which win. A key that is not a metadata key, or a
    /// binary one (`-bin`), is refused, naming it.
    pub fn context_metadata(
        mut self,
        key: &str,
        context_key: impl Into<String>,
    ) -> Result<Self, InvalidHeaderName> {
        let shared = self.shared_mut();
        shared.context_metadata =
            std::mem::take(&mut shared.context_metadata).with(key, context_key)?;
        Ok(self)
    }

    fn shared_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.shared)
    }
}

impl<S> tower_layer::Layer<S> for ReboundLayer {
    type Service = Rebound<S>;

    fn layer(&self, inner: S) -> Rebound<S> {
        Rebound {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}
