//! Building a policy version from a component: read within the size limit (or pulled from an
//! OCI registry), compiled (or taken from the cache or a compile started ahead), checked
//! against its pin and parameter schema, configured and smoke-called before it may decide.
//! Only with the `wasm` feature: a registry of built-ins has none of it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use super::BuildContext;
use crate::cassandra_types::ConsistencyLevel;
use crate::config::{ConfigError, PolicyDefinition, PolicySource};
use crate::reason::{reasons, ReadTimeout, RetryReason};
use crate::registry::error::BuildError;
use crate::registry::version::{guard, PolicyVersion};
use crate::request::{Request, RequestType};
use crate::strategy::DecisionContext;
use crate::strategy::RetryStrategy;
use crate::wasm::{
    read_metadata, LoadError, PolicyMetadata, PolicyPre, WasmStrategy, WasmStrategyConfig,
};

impl PolicyVersion {
    /// Builds policy `name` from its component file at `path` (an OCI component's is its copy
    /// in the store); `known` versions share their compiled component when the content is the
    /// same.
    pub(super) fn from_component_file(
        name: &str,
        definition: &PolicyDefinition,
        path: &Path,
        ctx: &BuildContext<'_>,
        known: &[Arc<PolicyVersion>],
    ) -> Result<PolicyVersion, BuildError> {
        let bytes = read(name, path, ctx.components.max_component_bytes)?;
        Self::from_component_bytes(name, definition, path, &bytes, ctx, known)
    }

    /// Builds a component version of policy `name` from `bytes` (read from `path`), then
    /// smoke-calls it.
    pub(crate) fn from_component_bytes(
        name: &str,
        definition: &PolicyDefinition,
        path: &Path,
        bytes: &[u8],
        ctx: &BuildContext<'_>,
        known: &[Arc<PolicyVersion>],
    ) -> Result<PolicyVersion, BuildError> {
        let started = Instant::now();
        let sha256 = admit(name, definition, path, bytes, ctx)?;
        let reused = known
            .iter()
            .filter_map(|v| v.component())
            .find(|c| c.sha256() == &sha256 && c.name() == name)
            .cloned();
        let component = match reused {
            Some(component) => component,
            None => compile(name, bytes, sha256, ctx)?,
        };
        if let Some(metadata) = component.metadata() {
            check_params(name, definition, path, metadata)?;
        }
        let origin = component.origin();
        let config = WasmStrategyConfig {
            limits: definition.limits,
            fail_safe: definition.fail_safe,
            quarantine: definition.quarantine,
            params: definition.params.clone(),
            wasi: definition.wasi,
        };
        let wasm = Arc::new(WasmStrategy::new(component, config)?);
        smoke(name, &wasm)?;
        Ok(PolicyVersion {
            name: name.to_owned(),
            hash: hex::encode(sha256),
            source: match &definition.source {
                PolicySource::Oci(_) => definition.source.clone(),
                _ => PolicySource::Component(path.to_owned()),
            },
            loaded_at: SystemTime::now(),
            load_time: started.elapsed(),
            origin: Some(origin),
            guard: guard(definition),
            strategy: Arc::clone(&wasm) as Arc<dyn RetryStrategy>,
            wasm: Some(wasm),
            decisions: AtomicU64::new(0),
            metric_labels: OnceLock::new(),
        })
    }
}

/// What is checked before policy `name`'s component `bytes` (read from `path`) is compiled:
/// the memory it may ask for within the engine's, and its content against its pin. Its sha256.
fn admit(
    name: &str,
    definition: &PolicyDefinition,
    path: &Path,
    bytes: &[u8],
    ctx: &BuildContext<'_>,
) -> Result<[u8; 32], BuildError> {
    let max = ctx.components.runtime.max_memory_bytes();
    if definition.limits.memory_bytes > max {
        return Err(BuildError::MemoryAboveEngine {
            policy: name.to_owned(),
            asked: definition.limits.memory_bytes,
            max,
        });
    }
    let sha256: [u8; 32] = Sha256::digest(bytes).into();
    if let Some(pinned) = definition.pinned_sha256.filter(|pinned| *pinned != sha256) {
        return Err(BuildError::PinMismatch {
            policy: name.to_owned(),
            path: path.display().to_string(),
            expected: hex::encode(pinned),
            found: hex::encode(sha256),
        });
    }
    Ok(sha256)
}

/// Policy `name`'s component `bytes` compiled: by a compile started ahead, from the cache, or
/// now.
fn compile(
    name: &str,
    bytes: &[u8],
    sha256: [u8; 32],
    ctx: &BuildContext<'_>,
) -> Result<PolicyPre, BuildError> {
    let components = ctx.components;
    let code = (components.ahead)
        .take(
            &components.runtime,
            bytes,
            &sha256,
            components.cache.as_ref(),
        )
        .map_err(|error| LoadError::compile(name, bytes, &error))?;
    let metadata = read_metadata(name, bytes)?;
    Ok(PolicyPre::from_machine_code(
        &components.runtime,
        name,
        sha256,
        metadata,
        code,
    )?)
}

/// Policy `name`'s parameters against its component's schema (`path` names the component in
/// the error, which points at the parameters' place in the configuration when known).
fn check_params(
    name: &str,
    definition: &PolicyDefinition,
    path: &Path,
    metadata: &PolicyMetadata,
) -> Result<(), ConfigError> {
    metadata.check_params(&definition.params).map_err(|e| {
        let field = format!("policies.{name}.params.{}", e.field);
        let message = format!("{} (the parameter schema of {})", e.message, path.display());
        match &definition.params_location {
            Some(at) => at.error(field, message),
            None => ConfigError {
                file: path.to_owned(),
                line: 0,
                column: 0,
                field,
                message,
            },
        }
    })
}

/// The local file holding policy `name`'s OCI component `reference`: pulled into the artifact
/// cache's directory, or read from there (`crate::distribution`).
pub(crate) fn fetch_oci(
    name: &str,
    reference: &str,
    definition: &PolicyDefinition,
    ctx: &BuildContext<'_>,
) -> Result<PathBuf, BuildError> {
    #[cfg(feature = "oci")]
    {
        let cache = ctx
            .components
            .cache
            .as_ref()
            .ok_or_else(|| BuildError::OciWithoutCache {
                policy: name.to_owned(),
            })?;
        let pin: Option<String> = definition.pinned_sha256.map(hex::encode);
        let store = crate::distribution::OciStore::new(cache.dir());
        let limit = ctx.components.max_component_bytes;
        let fetched = match &definition.trusted_keys {
            Some(keys) => store.resolve_trusted(
                reference,
                pin.as_deref(),
                keys,
                &ctx.components.credentials,
                limit,
            ),
            None => store
                .resolve(
                    reference,
                    pin.as_deref(),
                    &ctx.components.credentials,
                    limit,
                )
                .map(|path| crate::distribution::Fetched {
                    path,
                    signed_layers: None,
                }),
        }
        .map_err(|source| BuildError::Oci {
            policy: name.to_owned(),
            error: source,
        })?;
        if let Some(precompiled) = definition.precompiled_sha256 {
            let pin = hex::encode(precompiled);
            crate::distribution::install_precompiled(
                name,
                cache,
                &fetched,
                reference,
                &pin,
                &ctx.components.credentials,
                limit,
            );
        }
        Ok(fetched.path)
    }
    #[cfg(not(feature = "oci"))]
    {
        let _ = (reference, definition, ctx);
        Err(BuildError::OciUnsupported {
            policy: name.to_owned(),
        })
    }
}

/// The component file at `path`, refused unread past `limit` bytes.
pub(crate) fn read(policy: &str, path: &Path, limit: u64) -> Result<Vec<u8>, BuildError> {
    use std::io::Read;
    let failed = |source| BuildError::Read {
        policy: policy.to_owned(),
        path: path.display().to_string(),
        error: source,
    };
    let too_large = |size| BuildError::TooLarge {
        policy: policy.to_owned(),
        path: path.display().to_string(),
        size,
        limit,
    };
    let file = std::fs::File::open(path).map_err(failed)?;
    let size = file.metadata().map_err(failed)?.len();
    if size > limit {
        return Err(too_large(size));
    }
    // The file may grow between the two: read at most one byte past the limit.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Calls a new version on a few representative inputs (a read, a write, a query, a CQL read
/// timeout) before it may decide anything: a version that traps, panics, overruns its limits
/// or answers nonsense on them is refused. The tokens its retry budgets gave these calls are
/// given back.
fn smoke(name: &str, strategy: &WasmStrategy) -> Result<(), BuildError> {
    let timeout = Duration::from_millis(2500);
    let request = |ty| Request::new(0, ty, timeout).expect("non-zero timeout");
    let read_timeout = RetryReason::ReadTimeout(ReadTimeout {
        consistency: ConsistencyLevel::LocalQuorum,
        block_for: 2,
        received: 1,
        data_present: false,
    });
    let inputs = [
        (
            request(RequestType::Get),
            reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        ),
        (request(RequestType::Upsert), reasons::KV_TEMPORARY_FAILURE),
        (
            request(RequestType::Query).with_readonly(true),
            reasons::QUERY_INDEX_NOT_FOUND,
        ),
        (
            request(RequestType::Cql).with_idempotent(true),
            read_timeout,
        ),
    ];
    for (request, reason) in &inputs {
        if let Err(failure) = strategy.try_answer(request, &DecisionContext::new(reason)) {
            return Err(BuildError::Smoke {
                policy: name.to_owned(),
                input: format!("{} after {reason}", request.request_type()),
                failure: failure.to_string(),
            });
        }
    }
    strategy.clear_budgets();
    Ok(())
}
