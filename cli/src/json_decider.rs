//! Decides one JSON decision request (`rebound eval`, `rebound serve`): builds the request,
//! classifies a raw response, resolves the policy (the registry's routing, a registry policy by
//! name, or a component file with parameters) and asks the registry's orchestrator.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rebound::classify::{classify, Classification};
use rebound::config::{Builtin, BuiltinPolicy};
use rebound::errormap::ErrorMap;
use rebound::registry::PolicyRegistry;
use rebound::wasm::{PolicyPre, WasmStrategy, WasmStrategyConfig};
use rebound::DecideError;
use rebound::{Decision, DecisionContext, DecisionId, Request, RetryStrategy};
use serde_json::Value;
use tracing::Instrument;

use crate::wire::input::{DecideInput, Failure, InputError, PolicyChoice, PolicyRef};
use crate::wire::outcome::{located, OutcomeInput};
use crate::wire::output;

/// Who decides for a request.
enum Chosen {
    /// A policy the request names itself: its strategy, and its name and version.
    Own(Arc<dyn RetryStrategy>, (String, String)),
    /// The registry: by the configured policy named, else by the request's route.
    Registry(Option<String>),
}

type ComponentKey = (PathBuf, BTreeMap<String, String>);

/// Which files a request may name.
#[derive(Debug, Clone)]
pub enum FileAccess {
    /// Any readable component or error map (a local tool run by its user).
    Any,
    /// No component files (a server decides with its configured policies only, so a client
    /// cannot make it compile and keep arbitrary components), and error maps only from inside
    /// this directory.
    Inside(PathBuf),
}

/// Decides decision requests against a registry.
pub struct JsonDecider {
    registry: Arc<PolicyRegistry>,
    access: FileAccess,
    /// Whether a request may name a built-in with parameters of its own.
    request_params: bool,
    components: Mutex<HashMap<ComponentKey, Arc<WasmStrategy>>>,
    error_maps: Mutex<HashMap<PathBuf, CachedErrorMap>>,
}

/// The most error maps kept parsed; past it, the least recently used is dropped.
const ERROR_MAPS_KEPT: usize = 32;

/// A parsed error map and what its file looked like when it was read.
struct CachedErrorMap {
    map: Arc<ErrorMap>,
    /// Modification time and length: a change to either re-reads the file.
    stamp: (Option<std::time::SystemTime>, u64),
    last_used: Instant,
}

/// What a decision request asks, once read. A short-lived value on the stack: boxing the large
/// variant would cost an allocation per decision.
#[allow(clippy::large_enum_variant)]
enum Prepared {
    /// The request, why it failed, and the error-map spec its response carried.
    Decide {
        request: rebound::Request,
        reason: rebound::RetryReason,
        spec: Option<rebound::errormap::RetrySpec>,
    },
    /// The classifier settled the raw response: its answer, and the request's id.
    Settled(Value, u64),
}

/// A decided request: the answer, and the policy that gave it (for metrics).
pub struct Answer {
    /// The JSON answer.
    pub json: Value,
    /// The policy and version that decided, if a policy was asked.
    pub policy: Option<(String, String)>,
}

impl JsonDecider {
    /// Decides with `registry`, reading named files as `access` allows.
    pub fn new(registry: Arc<PolicyRegistry>, access: FileAccess) -> Self {
        JsonDecider {
            registry,
            access,
            request_params: true,
            components: Mutex::default(),
            error_maps: Mutex::default(),
        }
    }

    /// Whether requests may name a built-in with parameters of their own (`serve
    /// --no-request-params` refuses them); allowed unless said.
    pub fn with_request_params(mut self, allowed: bool) -> Self {
        self.request_params = allowed;
        self
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<PolicyRegistry> {
        &self.registry
    }

    /// Resolves `path` as `access` allows; the error names `field`.
    pub fn resolve(&self, path: &Path, field: &str) -> Result<PathBuf, InputError> {
        match &self.access {
            FileAccess::Any => Ok(path.to_owned()),
            // The message names what the client gave, never where the directory is.
            FileAccess::Inside(root) => inside(root, path).ok_or_else(|| {
                InputError::new(
                    field,
                    format!(
                        "`{}` is not a file inside the policy directory",
                        path.display()
                    ),
                )
            }),
        }
    }

    /// Decides one request, read from `text`, numbered `id` unless it gives its own id.
    pub async fn decide_text(&self, text: &str, id: u64) -> Result<Answer, InputError> {
        self.decide(DecideInput::parse(text)?, id).await
    }

    /// The request, reason and error-map spec `input` asks about, or the answer when the
    /// classifier settles its raw response without a decision.
    fn prepare(&self, input: &DecideInput, now: Instant, id: u64) -> Result<Prepared, InputError> {
        let request = input.request(now, id)?;
        let (reason, spec) = match input.failure(request.request_type())? {
            Failure::Reason(reason) => {
                if input.error_map.is_some() {
                    return Err(InputError::new(
                        "error_map",
                        "an error map classifies a `response`; this line gives a `reason`",
                    ));
                }
                (reason, input.error_map_spec)
            }
            Failure::Response(_) if input.error_map_spec.is_some() => {
                return Err(InputError::new(
                    "error_map_spec",
                    "a `response` is classified, its spec read from the `error_map`; `error_map_spec` goes with a `reason`",
                ));
            }
            Failure::Response(response) => {
                let map = match &input.error_map {
                    Some(path) => Some(self.error_map(path)?),
                    None => None,
                };
                match classify(response, map.as_deref()) {
                    Classification::Retry { reason, retry_spec } => (reason, retry_spec),
                    settled => {
                        return Ok(Prepared::Settled(
                            output::settled(&settled).expect("settled"),
                            request.id(),
                        ))
                    }
                }
            }
        };
        Ok(Prepared::Decide {
            request,
            reason,
            spec,
        })
    }

    /// Asks the component at `path`, configured with `params`, about `input` directly: its own
    /// answer, before the orchestrator (`rebound test --raw`).
    pub fn ask_component(
        &self,
        input: &DecideInput,
        path: &Path,
        params: BTreeMap<String, String>,
        id: u64,
    ) -> Result<Value, InputError> {
        let now = Instant::now();
        let (request, reason, spec) = match self.prepare(input, now, id)? {
            Prepared::Settled(json, _) => return Ok(json),
            Prepared::Decide {
                request,
                reason,
                spec,
            } => (request, reason, spec),
        };
        let strategy = self.component(path, params)?;
        let context = DecisionContext::new(&reason)
            .with_error_map_spec(spec)
            .with_pushback(input.pushback()?)
            .at(now);
        Ok(rebound::decision_json::action(
            &strategy.try_answer(&request, &context),
        ))
    }

    /// Who decides for a request naming `policy`: a policy it names itself (a built-in or a
    /// component), or the registry, by the configured policy it names, if any, else by the
    /// request's route.
    fn own_policy(&self, policy: Option<PolicyRef>) -> Result<Chosen, InputError> {
        let choice = match policy {
            // Refused before the parameters are read.
            Some(policy) if policy.has_params() && !self.request_params => {
                return Err(InputError::new(
                    "policy.params",
                    "this server decides with its configured policies only (--no-request-params): name one of them without parameters (GET /v1/policies)",
                ));
            }
            Some(policy) => policy.choice()?,
            None => PolicyChoice::Routed,
        };
        Ok(match choice {
            PolicyChoice::Routed => Chosen::Registry(None),
            PolicyChoice::Named(name) => match Builtin::from_name(&name) {
                // A built-in's name the registry does not configure: that built-in, untuned.
                Some(builtin) if self.registry.active(&name).is_err() => {
                    let builtin = BuiltinPolicy::new(builtin, &serde_json::Map::new())
                        .map_err(|e| InputError::new("policy", e.message))?;
                    Chosen::Own(builtin.strategy(), (name, builtin.version()))
                }
                // The registry refuses an unknown name when it resolves the request.
                _ => Chosen::Registry(Some(name)),
            },
            PolicyChoice::Builtin(builtin) => {
                let policy = (builtin.builtin().name().to_owned(), builtin.version());
                Chosen::Own(builtin.strategy(), policy)
            }
            PolicyChoice::Component { path, .. }
                if matches!(self.access, FileAccess::Inside(_)) =>
            {
                return Err(InputError::new(
                    "policy",
                    format!(
                        "`{}`: this server decides with its configured policies only; name one of them (GET /v1/policies)",
                        path.display()
                    ),
                ));
            }
            PolicyChoice::Component { path, params } => {
                let strategy = self.component(&path, params)?;
                let component = strategy.component();
                let policy = (component.name().to_owned(), component.version().to_owned());
                Chosen::Own(strategy as Arc<dyn RetryStrategy>, policy)
            }
        })
    }

    /// Decides one request.
    pub async fn decide(&self, input: DecideInput, id: u64) -> Result<Answer, InputError> {
        let now = Instant::now();
        let (mut request, reason, spec) = match self.prepare(&input, now, id)? {
            Prepared::Settled(json, request_id) => {
                let json = output::with_ids(json, DecisionId::next(), request_id);
                return Ok(Answer { json, policy: None });
            }
            Prepared::Decide {
                request,
                reason,
                spec,
            } => (request, reason, spec),
        };
        let (pushback, attempt_timeout) = (input.pushback()?, input.attempt_timeout()?);
        let own = match self.own_policy(input.policy)? {
            Chosen::Own(strategy, policy) => Some((strategy, policy)),
            Chosen::Registry(named) => {
                if let Some(name) = named {
                    request = request.with_policy(name);
                }
                None
            }
        };
        let context = DecisionContext::new(&reason)
            .with_error_map_spec(spec)
            .with_pushback(pushback)
            .with_progress(input.progress.unwrap_or_default())
            .with_attempt_timeout(attempt_timeout)
            .with_upstream_attempts(input.upstream_attempts.unwrap_or(1))
            .at(now);
        // The span of the failed attempt this decision is for, which the registry fills in
        // (exported over OTLP when `serve` is configured to).
        let span = rebound::telemetry::attempt_span(&request, request.retry_attempts());
        rebound::telemetry::record_failure(&span, Some(&reason));
        let context = match &own {
            Some((strategy, _)) => context.with_strategy(&**strategy),
            None => context,
        };
        let decided = self
            .registry
            .decide(&mut request, &context)
            .instrument(span)
            .await
            .map_err(|e| {
                let field = match e {
                    DecideError::UnknownProfile { .. } => "request.profile",
                    _ => "policy",
                };
                InputError::new(field, e.to_string())
            })?;
        let json =
            rebound::decision_json::decision(&decided.decision, &reason, request.retry_attempts());
        let own_strategy = own.as_ref().map(|(strategy, _)| strategy);
        let next_timeout =
            self.next_attempt_timeout(own_strategy, &request, &decided.decision, now);
        let json = output::with_attempt_timeout(json, next_timeout);
        let json = output::with_ids(json, decided.decision_id, request.id());
        let policy = match &decided.version {
            Some(version) => Some((version.name().to_owned(), version.version().to_owned())),
            None => own.map(|(_, policy)| policy),
        };
        let json = match &policy {
            Some((name, version)) => output::with_policy(json, name, version),
            None => json,
        };
        Ok(Answer { json, policy })
    }

    /// How long the attempt a retry `decision` plans may run, if the request's controls cut
    /// attempts (its route's, its policy's or its strategy's attempt timeout; `own`'s strategy's
    /// when the request names its own policy): at most the time left once the delay is waited.
    fn next_attempt_timeout(
        &self,
        own: Option<&Arc<dyn RetryStrategy>>,
        request: &Request,
        decision: &Decision,
        now: Instant,
    ) -> Option<Duration> {
        let Decision::Retry(plan) = decision else {
            return None;
        };
        let timeout = match own {
            Some(strategy) => {
                (request.answered_attempt_timeout()).or_else(|| strategy.attempt_timeout(request))
            }
            None => self.registry.controls(request).attempt_timeout(request),
        }?;
        Some(timeout.min(request.remaining_at(now).saturating_sub(plan.delay)))
    }

    /// Records the outcome reports in `text` (one object or an array): each request's end
    /// reaches the retry budget of the policy that decides for it. Nothing is recorded unless
    /// every report is valid; a report naming an unknown policy is refused. `client`, a
    /// client-context entry and the authenticated client's name, is set on every report's
    /// request, which is then decided for that client.
    pub fn record_outcomes(
        &self,
        text: &str,
        client: Option<(&str, &str)>,
    ) -> Result<Value, InputError> {
        let mut reports = OutcomeInput::parse_all(text)?;
        if let Some((key, name)) = client {
            for (_, report) in &mut reports {
                report.set_client(key, name);
            }
        }
        let now = Instant::now();
        let mut checked = Vec::with_capacity(reports.len());
        for (at, report) in &reports {
            let outcome = report
                .outcome()
                .map_err(|e| InputError::new(located(at, &e.field), e.message))?;
            let request = (report.latency().and(report.request(now)))
                .map_err(|e| InputError::new(located(at, &e.field), e.message))?;
            if let Some(name) = report.policy() {
                self.registry
                    .active(name)
                    .map_err(|e| InputError::new(located(at, "policy"), e.to_string()))?;
            }
            checked.push((report, request, outcome));
        }
        for (report, request, outcome) in &checked {
            report.report_to(&self.registry.controls(request), request, *outcome, now);
            rebound::telemetry::record_retries(*outcome, None);
        }
        Ok(serde_json::json!({ "recorded": checked.len() }))
    }

    /// Classifies the `response` of one request read from `text` (reference 001 "Response
    /// Code Classification"), without deciding.
    pub fn classify_text(&self, text: &str) -> Result<Value, InputError> {
        let input = DecideInput::parse(text)?;
        if input.reason.is_some() {
            return Err(InputError::new(
                "reason",
                "classify takes a raw `response`, not a `reason`",
            ));
        }
        let request = input.request(Instant::now(), 0)?;
        let Failure::Response(response) = input.failure(request.request_type())? else {
            unreachable!("no reason was given")
        };
        let map = match &input.error_map {
            Some(path) => Some(self.error_map(path)?),
            None => None,
        };
        Ok(output::classification(&classify(response, map.as_deref())))
    }

    /// The error map at `requested`, parsed once and kept (at most [`ERROR_MAPS_KEPT`]) until
    /// its file changes.
    fn error_map(&self, requested: &Path) -> Result<Arc<ErrorMap>, InputError> {
        let path = self.resolve(requested, "error_map")?;
        // Errors name the file as the client gave it, not the resolved absolute path.
        let error = |e: &dyn std::fmt::Display| {
            InputError::new("error_map", format!("`{}`: {e}", requested.display()))
        };
        let metadata = std::fs::metadata(&path).map_err(|e| error(&e))?;
        let stamp = (metadata.modified().ok(), metadata.len());
        if let Some(cached) = lock(&self.error_maps).get_mut(&path) {
            if cached.stamp == stamp {
                cached.last_used = Instant::now();
                return Ok(Arc::clone(&cached.map));
            }
        }
        let map = crate::parse::load_error_map(&path).map_err(|e| error(&e.root_cause()))?;
        let map = Arc::new(map);
        let mut maps = lock(&self.error_maps);
        if maps.len() >= ERROR_MAPS_KEPT && !maps.contains_key(&path) {
            let oldest = maps
                .iter()
                .min_by_key(|(_, cached)| cached.last_used)
                .map(|(path, _)| path.clone());
            if let Some(oldest) = oldest {
                maps.remove(&oldest);
            }
        }
        let cached = CachedErrorMap {
            map: Arc::clone(&map),
            stamp,
            last_used: Instant::now(),
        };
        maps.insert(path, cached);
        Ok(map)
    }

    /// The component at `path` configured with `params`, loaded once.
    pub(crate) fn component(
        &self,
        path: &Path,
        params: BTreeMap<String, String>,
    ) -> Result<Arc<WasmStrategy>, InputError> {
        let path = self.resolve(path, "policy")?;
        let key = (path, params);
        if let Some(strategy) = lock(&self.components).get(&key) {
            return Ok(Arc::clone(strategy));
        }
        let (path, params) = key;
        let error = |message: String| InputError::new("policy", message);
        let bytes = std::fs::read(&path)
            .map_err(|e| error(format!("cannot read {}: {e}", path.display())))?;
        let name = path
            .file_stem()
            .map_or_else(|| "component".into(), |s| s.to_string_lossy().into_owned());
        let component = PolicyPre::load_cached(
            self.registry.runtime(),
            &name,
            &bytes,
            self.registry.cache(),
        )
        .map_err(|e| error(format!("{}: {e}", path.display())))?;
        // The parameter schema the component declares, applied as a registry applies it.
        if let Some(metadata) = component.metadata() {
            metadata.check_params(&params).map_err(|e| {
                InputError::new(
                    format!("policy.params.{}", e.field),
                    format!("{} (the parameter schema of {})", e.message, path.display()),
                )
            })?;
        }
        let mut config = WasmStrategyConfig::default();
        config.params = params.clone();
        let strategy = Arc::new(
            WasmStrategy::new(component, config)
                .map_err(|e| error(format!("{}: {e}", path.display())))?,
        );
        lock(&self.components).insert((path, params), Arc::clone(&strategy));
        Ok(strategy)
    }
}

/// `path` (relative to `root`, or absolute) if it names an existing file inside `root` once
/// every `..` and symbolic link is resolved.
pub fn inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let root = root.canonicalize().ok()?;
    let file = root.join(path).canonicalize().ok()?;
    (file.starts_with(&root) && file.is_file()).then_some(file)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
