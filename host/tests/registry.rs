//! The policy registry: resolving a request to its policy (reference 003 "Using
//! multiple policies", reference 002 global and per-request strategies), atomic versions,
//! reload with validation and smoke calls, rollback, shadow trials, configuration changes,
//! status, and the compiled-artifact cache.

use crate::registry_support;

use std::sync::Arc;

use rebound::registry::{BuildError, PolicyRegistry, RegistryError, ReloadOutcome};
use rebound::wasm::{ArtifactCache, CacheError, CodeOrigin, WitVersion};
use rebound::DecisionContext;
use rebound::SyncStrategy;
use rebound::{
    reasons, BestEffort, CancelReason, Decision, FailFast, Orchestrator, PolicyFailureKind,
    ReasonKind, RequestType, RetryError, RetryReason,
};
use registry_support::{active_hash, decide, guest_hash, request, runtime, Workspace};

/// Three policies (two built-ins, one component), two profiles, two routes.
fn routed() -> (Workspace, PolicyRegistry) {
    let ws = Workspace::new();
    ws.install("robots.wasm", "no_retry_for_robots");
    ws.config(
        r#"
default_policy = "standard"
[policies.standard]
builtin = "best-effort"
[policies.strict]
builtin = "fail-fast"
[policies.robots]
component = "robots.wasm"
[profiles.custom-retries]
policy = "strict"
[profiles.slow]
[services]
query = "strict"
[request_types]
get = "robots"
"#,
    );
    let registry = ws.registry();
    (ws, registry)
}

fn decided_by(registry: &PolicyRegistry, request: rebound::Request) -> String {
    let decided = decide(registry, request, &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT);
    decided
        .version
        .expect("a registry policy decided")
        .name()
        .to_owned()
}

#[test]
fn reference_003_each_request_uses_its_profiles_policy_or_the_default() {
    let (_ws, registry) = routed();
    // "If it doesn't declare any profile ... the default profile's policy is used."
    assert_eq!(
        decided_by(&registry, request(RequestType::Upsert)),
        "standard"
    );
    // "The custom-retries profile uses a dedicated policy."
    assert_eq!(
        decided_by(
            &registry,
            request(RequestType::Upsert).with_profile("custom-retries")
        ),
        "strict"
    );
    // "The slow profile inherits the default profile's" policy.
    assert_eq!(
        decided_by(&registry, request(RequestType::Upsert).with_profile("slow")),
        "standard"
    );
}

#[test]
fn routes_by_request_type_then_service_apply_below_a_dedicated_profile() {
    let (_ws, registry) = routed();
    assert_eq!(decided_by(&registry, request(RequestType::Get)), "robots");
    assert_eq!(decided_by(&registry, request(RequestType::Query)), "strict");
    // A profile without a dedicated policy leaves the routes in force.
    assert_eq!(
        decided_by(&registry, request(RequestType::Get).with_profile("slow")),
        "robots"
    );
    // A dedicated profile policy is more specific than the routes.
    assert_eq!(
        decided_by(
            &registry,
            request(RequestType::Get).with_profile("custom-retries")
        ),
        "strict"
    );
}

#[test]
fn reference_002_a_per_request_policy_overrides_the_global_one() {
    let (_ws, registry) = routed();
    assert_eq!(
        decided_by(
            &registry,
            request(RequestType::Get)
                .with_profile("custom-retries")
                .with_policy("standard")
        ),
        "standard"
    );
    // A strategy the caller chooses for the request decides too (reference 002
    // "Customizing the RetryStrategy"); no registry version is involved.
    let mut req = request(RequestType::Get);
    let context = DecisionContext::new(&reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT);
    let decided =
        futures::executor::block_on(registry.decide(&mut req, &context.with_strategy(&FailFast)))
            .unwrap();
    assert!(decided.version.is_none());
    assert!(matches!(decided.decision, Decision::Fail(_)));
}

/// Reference 001 "Retry Orchestration" (the safety guard) and reference 002: a strategy the
/// caller chooses for one request is still under the guard. A dispatched upsert whose socket
/// closed in flight may have been applied, so its retry is refused however eagerly the chosen
/// strategy asks for one.
#[test]
fn reference_001_a_strategy_chosen_for_the_request_cannot_retry_an_unsafe_upsert() {
    let (_ws, registry) = routed();
    let eager = crate::common::AlwaysRetry(std::time::Duration::from_millis(1));
    let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
    let context = DecisionContext::new(&reason).with_strategy(&eager);
    let mut upsert = request(RequestType::Upsert);
    upsert.mark_dispatched("10.0.0.1:11210");
    let decided = futures::executor::block_on(registry.decide(&mut upsert, &context)).unwrap();
    assert!(
        matches!(
            decided.decision,
            Decision::Fail(rebound::RetryError::RequestCanceled {
                reason: rebound::CancelReason::UnsafeRetryRefused(_),
                ..
            })
        ),
        "{:?}",
        decided.decision
    );
    // The same strategy retries a get: the refusal is the guard's, not the strategy's.
    let mut get = request(RequestType::Get);
    get.mark_dispatched("10.0.0.1:11210");
    let decided = futures::executor::block_on(registry.decide(&mut get, &context)).unwrap();
    assert!(
        matches!(decided.decision, Decision::Retry(_)),
        "{:?}",
        decided.decision
    );
}

#[test]
fn unknown_policy_and_profile_names_are_errors_listing_the_known_ones() {
    let (_ws, registry) = routed();
    let mut req = request(RequestType::Get).with_policy("nope");
    let e = futures::executor::block_on(
        registry.decide(&mut req, &DecisionContext::new(&reasons::UNKNOWN)),
    )
    .unwrap_err();
    assert!(matches!(e, rebound::DecideError::UnknownPolicy { .. }));
    assert!(e.to_string().contains("robots, standard, strict"), "{e}");
    let mut req = request(RequestType::Get).with_profile("fast");
    let e = futures::executor::block_on(
        registry.decide(&mut req, &DecisionContext::new(&reasons::UNKNOWN)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no profile named `fast`"), "{e}");
}

fn single(ws: &Workspace, guest: &str, extra: &str) -> PolicyRegistry {
    ws.install("policy.wasm", guest);
    ws.config(&format!(
        "default_policy = \"p\"\n[policies.p]\ncomponent = \"policy.wasm\"\n{extra}"
    ));
    ws.registry()
}

fn is_retry(decision: &Decision) -> bool {
    matches!(decision, Decision::Retry(_))
}

#[test]
fn reload_swaps_in_the_new_content_and_keeps_the_old_version_for_rollback() {
    let ws = Workspace::new();
    let registry = single(&ws, "best_effort", "");
    let best = guest_hash("best_effort");
    let fail = guest_hash("fail_fast");
    assert_eq!(active_hash(&registry, "p"), best);
    let get = || request(RequestType::Get);
    let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
    assert!(is_retry(&decide(&registry, get(), &reason).decision));

    assert!(matches!(
        registry.reload("p").unwrap(),
        ReloadOutcome::Unchanged { .. }
    ));
    ws.install("policy.wasm", "fail_fast");
    let swapped = registry.reload("p").unwrap();
    assert_eq!(
        swapped,
        ReloadOutcome::Swapped {
            from: best[..12].into(),
            to: fail[..12].into()
        }
    );
    let decided = decide(&registry, get(), &reason);
    assert_eq!(decided.version.unwrap().hash(), fail);
    assert!(matches!(decided.decision, Decision::Fail(_)));

    let status = registry.policy_status("p").unwrap();
    assert_eq!(status.active.hash, fail);
    assert_eq!(status.previous.as_ref().unwrap().hash, best);
    assert_eq!(status.swaps, 1);

    registry.rollback("p").unwrap();
    assert_eq!(active_hash(&registry, "p"), best);
    assert!(is_retry(&decide(&registry, get(), &reason).decision));
    // A second rollback undoes the first.
    registry.rollback("p").unwrap();
    assert_eq!(active_hash(&registry, "p"), fail);
}

#[test]
fn a_bad_file_leaves_the_active_version_serving_and_reports_the_error() {
    let ws = Workspace::new();
    let registry = single(&ws, "best_effort", "");
    let best = guest_hash("best_effort");
    std::fs::write(ws.path("policy.wasm"), b"\0asm garbage").unwrap();
    let e = registry.reload("p").unwrap_err();
    assert!(
        e.to_string().contains("not a valid WebAssembly component"),
        "{e}"
    );
    assert_eq!(active_hash(&registry, "p"), best);
    let status = registry.policy_status("p").unwrap();
    assert!(
        status.last_error.as_deref().unwrap().contains("policy `p`"),
        "{status:?}"
    );
    assert!(is_retry(
        &decide(
            &registry,
            request(RequestType::Get),
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT
        )
        .decision
    ));
    // A missing file is an error too, not a swap.
    std::fs::remove_file(ws.path("policy.wasm")).unwrap();
    assert!(matches!(registry.reload("p"), Err(RegistryError::Build(_))));
    assert_eq!(active_hash(&registry, "p"), best);
    // The next good file clears the error.
    ws.install("policy.wasm", "fail_fast");
    registry.reload("p").unwrap();
    assert_eq!(registry.policy_status("p").unwrap().last_error, None);
}

#[test]
fn a_version_that_fails_its_smoke_calls_is_never_swapped_in() {
    let ws = Workspace::new();
    // best-effort ignores the parameter; the adversary panics on every call with it.
    let registry = single(&ws, "best_effort", "params = { always_panic = \"yes\" }\n");
    ws.install("policy.wasm", "adversary");
    let e = registry.reload("p").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("smoke call") && text.contains("panic"),
        "{text}"
    );
    assert_eq!(active_hash(&registry, "p"), guest_hash("best_effort"));
}

#[test]
fn a_version_that_rejects_its_parameters_is_never_swapped_in() {
    let ws = Workspace::new();
    let registry = single(&ws, "best_effort", "params = { reject = \"yes\" }\n");
    ws.install("policy.wasm", "adversary");
    let e = registry.reload("p").unwrap_err();
    assert!(e.to_string().contains("failed to configure"), "{e}");
    assert_eq!(active_hash(&registry, "p"), guest_hash("best_effort"));
}

#[test]
fn builtins_have_nothing_to_reload_and_rollback_needs_a_previous_version() {
    let (_ws, registry) = routed();
    assert!(matches!(
        registry.reload("standard"),
        Err(RegistryError::Builtin(_))
    ));
    assert!(matches!(
        registry.rollback("robots"),
        Err(RegistryError::NoPrevious(_))
    ));
    assert!(matches!(
        registry.promote("robots"),
        Err(RegistryError::NoShadow(_))
    ));
}

/// Reference 001 "Retry Safety": the registry keeps the safety guard; only a policy the
/// configuration exempts may retry a non-idempotent request after it was in flight.
#[test]
fn reference_001_the_guard_refuses_unsafe_retries_unless_the_policy_is_exempt() {
    let upsert = || request(RequestType::Upsert);
    let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;

    let ws = Workspace::new();
    let guarded = single(&ws, "adversary", ""); // answers "retry after 7 ms" to everything
    match decide(&guarded, upsert(), &reason).decision {
        Decision::Fail(RetryError::RequestCanceled {
            reason: CancelReason::UnsafeRetryRefused(_),
            ..
        }) => {}
        other => panic!("the guard must refuse: {other:?}"),
    }
    let ws = Workspace::new();
    let exempt = single(&ws, "adversary", "guard_exempt = true\n");
    assert!(is_retry(&decide(&exempt, upsert(), &reason).decision));
    assert!(exempt.policy_status("p").unwrap().guard_exempt);
    // Never-retried reasons stay refused even for an exempt policy.
    match decide(&exempt, request(RequestType::Get), &reasons::UNKNOWN).decision {
        Decision::Fail(RetryError::RequestCanceled {
            reason: CancelReason::NeverRetried(_),
            ..
        }) => {}
        other => panic!("UNKNOWN is never retried: {other:?}"),
    }
}

/// Every (request type, reason) pair whose reason asks the strategy, with the active
/// (best-effort) and candidate (fail-fast) answers computed by the native twins: the request
/// types a policy's version describes (plain HTTP requests and gRPC calls are not asked about).
fn shadow_grid() -> Vec<(RequestType, RetryReason, bool)> {
    let mut grid = Vec::new();
    let described = RequestType::ALL
        .iter()
        .filter(|ty| WitVersion::CURRENT.describes(ty.service()));
    for &ty in described {
        for &kind in ReasonKind::ALL {
            let Some(reason) = RetryReason::simple(kind) else {
                continue;
            };
            if reason.always_retry() {
                continue; // decided by the controlled backoff: no strategy is asked
            }
            let req = request(ty);
            let active = BestEffort::<rebound::backoff::ExponentialBackoff>::default()
                .answer(&req, &DecisionContext::new(&reason));
            let candidate = FailFast.answer(&req, &DecisionContext::new(&reason));
            grid.push((ty, reason, active != candidate));
        }
    }
    grid
}

/// A decision's kind and error name (delays and timings aside).
fn outcome(decision: &Decision) -> (&'static str, &'static str) {
    match decision {
        Decision::Retry(_) => ("retry", ""),
        Decision::Timeout { error, .. } => ("timeout", error.name()),
        Decision::Fail(error) => ("fail", error.name()),
        Decision::Ignore => ("ignore", ""),
        Decision::AlreadyDone => ("done", ""),
        other => panic!("a decision this test does not know: {other:?}"),
    }
}

#[test]
fn shadow_disagreements_are_counted_exactly_and_the_candidate_never_decides() {
    let ws = Workspace::new();
    let registry = single(&ws, "best_effort", "");
    let candidate = ws.install("candidate.wasm", "fail_fast");
    registry.shadow("p", &candidate, 1.0).unwrap();
    let grid = shadow_grid();
    let expected = grid.iter().filter(|(_, _, differ)| *differ).count() as u64;
    assert!(expected > 0 && expected < grid.len() as u64);
    // What the active version alone decides: the same policy natively, no shadow.
    let native = Orchestrator::default();
    for (ty, reason, _) in &grid {
        let decided = decide(&registry, request(*ty), reason);
        assert_eq!(decided.version.unwrap().hash(), guest_hash("best_effort"));
        let alone = futures::executor::block_on(
            native.decide(&mut request(*ty), &DecisionContext::new(reason)),
        );
        assert_eq!(
            outcome(&decided.decision),
            outcome(&alone),
            "{ty} after {reason}"
        );
    }
    let shadow = registry.policy_status("p").unwrap().shadow.unwrap();
    assert_eq!(shadow.compared, grid.len() as u64);
    assert_eq!(shadow.disagreements, expected);
    assert!((shadow.disagreement_rate - expected as f64 / grid.len() as f64).abs() < 1e-12);

    // Always-retry reasons never reach a strategy, so they are not compared.
    let _ = decide(
        &registry,
        request(RequestType::Get),
        &reasons::KV_NOT_MY_VBUCKET,
    );
    assert_eq!(
        registry
            .policy_status("p")
            .unwrap()
            .shadow
            .unwrap()
            .compared,
        grid.len() as u64
    );

    // Promotion makes the candidate active and keeps the old version for rollback.
    registry.promote("p").unwrap();
    let status = registry.policy_status("p").unwrap();
    assert_eq!(status.active.hash, guest_hash("fail_fast"));
    assert_eq!(status.previous.unwrap().hash, guest_hash("best_effort"));
    assert!(status.shadow.is_none());
}

#[test]
fn an_abandoned_or_unsampled_shadow_changes_nothing() {
    let ws = Workspace::new();
    let registry = single(&ws, "best_effort", "");
    let candidate = ws.install("candidate.wasm", "fail_fast");
    registry.shadow("p", &candidate, 0.0).unwrap();
    for _ in 0..20 {
        let _ = decide(
            &registry,
            request(RequestType::Get),
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        );
    }
    assert_eq!(
        registry
            .policy_status("p")
            .unwrap()
            .shadow
            .unwrap()
            .compared,
        0
    );
    let ended = registry.abandon("p").unwrap();
    assert_eq!(ended.hash, guest_hash("fail_fast"));
    let status = registry.policy_status("p").unwrap();
    assert!(status.shadow.is_none() && status.previous.is_none());
    assert_eq!(status.active.hash, guest_hash("best_effort"));
    assert_eq!(status.active.decisions, 20);
}

#[test]
fn a_new_configuration_keeps_unchanged_policies_and_a_bad_one_keeps_the_running_one() {
    let (ws, registry) = routed();
    for _ in 0..3 {
        let _ = decide(&registry, request(RequestType::Get), &reasons::UNKNOWN);
    }
    let robots_before = registry.active("robots").unwrap();
    ws.config(
        r#"
default_policy = "strict"
[policies.strict]
builtin = "fail-fast"
[policies.robots]
component = "robots.wasm"
"#,
    );
    registry.reload_config().unwrap();
    assert_eq!(registry.config().default_policy, "strict");
    let robots_after = registry.active("robots").unwrap();
    assert!(
        Arc::ptr_eq(&robots_before, &robots_after),
        "unchanged policy kept its version"
    );
    assert_eq!(robots_after.decisions(), 3);
    assert!(
        registry.active("standard").is_err(),
        "removed policy is gone"
    );

    // A configuration that does not parse, then one whose policy cannot load: both refused.
    ws.config("default_policy = \n");
    assert!(matches!(
        registry.reload_config(),
        Err(RegistryError::Config(_))
    ));
    let error = registry.status().config_error.unwrap();
    assert!(error.contains("rebound.toml:1:"), "{error}");
    ws.install("broken.wasm", "wrong_world");
    ws.config("default_policy = \"b\"\n[policies.b]\ncomponent = \"broken.wasm\"\n");
    assert!(matches!(
        registry.reload_config(),
        Err(RegistryError::Build(_))
    ));
    assert_eq!(registry.config().default_policy, "strict");
    assert_eq!(
        decided_by(&registry, request(RequestType::Upsert)),
        "strict"
    );
}

#[test]
fn the_cache_serves_a_compiled_component_and_discards_corrupt_or_foreign_entries() {
    let ws = Workspace::new();
    ws.install("policy.wasm", "best_effort");
    let cache_dir = ws.path("cache");
    ws.config("default_policy = \"p\"\ncache_dir = \"cache\"\n[policies.p]\ncomponent = \"policy.wasm\"\n");
    let origin = |registry: &PolicyRegistry| registry.active("p").unwrap().origin().unwrap();

    let first = ws.registry();
    assert_eq!(origin(&first), CodeOrigin::Compiled);
    assert_eq!(first.status().cache.unwrap().writes, 1);
    let second = ws.registry();
    assert_eq!(origin(&second), CodeOrigin::Cached);
    assert_eq!(second.status().cache.unwrap().hits, 1);
    assert!(is_retry(
        &decide(
            &second,
            request(RequestType::Get),
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT
        )
        .decision
    ));

    let entry = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("a cache entry");
    // Corrupt: one flipped byte in the payload.
    let mut bytes = std::fs::read(&entry).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    let third = ws.registry();
    assert_eq!(origin(&third), CodeOrigin::Compiled);
    assert_eq!(third.status().cache.unwrap().discarded, 1);
    assert_eq!(
        ws.registry().status().cache.unwrap().hits,
        1,
        "rewritten entry is used again"
    );

    // Foreign: a well-formed entry, bound to this component and engine and with a right
    // sha256, whose payload wasmtime did not produce.
    let magic = b"rebound-artifact-v3\n";
    let bytes = std::fs::read(&entry).unwrap();
    let binding = &bytes[magic.len()..magic.len() + 64];
    let payload = b"not a wasmtime artifact";
    let mut digest = <sha2::Sha256 as sha2::Digest>::new();
    for part in [&magic[..], binding, payload] {
        sha2::Digest::update(&mut digest, part);
    }
    let mut foreign = magic.to_vec();
    foreign.extend_from_slice(binding);
    foreign.extend_from_slice(&sha2::Digest::finalize(digest));
    foreign.extend_from_slice(payload);
    std::fs::write(&entry, foreign).unwrap();
    let fourth = ws.registry();
    assert_eq!(origin(&fourth), CodeOrigin::Compiled);
    assert_eq!(fourth.status().cache.unwrap().discarded, 1);
}

/// An entry is bound to the component it was compiled from, inside the
/// entry: another policy's entry renamed into place (a sound entry, right sha256, loadable by
/// wasmtime) is refused and the component compiled again, and the policy decides as itself.
/// An entry that others may write is refused like a directory others may write.
#[test]
fn a_cache_entry_of_another_component_or_writable_by_others_is_refused() {
    let ws = Workspace::new();
    ws.install("policy.wasm", "best_effort");
    ws.install("robots.wasm", "no_retry_for_robots");
    let cache_dir = ws.path("cache");
    ws.config("default_policy = \"p\"\ncache_dir = \"cache\"\n[policies.p]\ncomponent = \"policy.wasm\"\n[policies.r]\ncomponent = \"robots.wasm\"\n");
    let first = ws.registry();
    assert_eq!(first.status().cache.unwrap().writes, 2);
    let entry_of = |name: &str| {
        let bytes = std::fs::read(ws.path(name)).unwrap();
        let sha: String = <sha2::Sha256 as sha2::Digest>::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        std::fs::read_dir(&cache_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&sha))
            .unwrap()
    };
    let (policy_entry, robots_entry) = (entry_of("policy.wasm"), entry_of("robots.wasm"));
    std::fs::rename(&robots_entry, &policy_entry).unwrap();
    let second = ws.registry();
    let active = second.active("p").unwrap();
    assert_eq!(active.origin().unwrap(), CodeOrigin::Compiled);
    assert_eq!(second.status().cache.unwrap().discarded, 1);
    // Best effort, not the robots policy: a robot's idempotent get is retried.
    let robot = request(RequestType::Get).with_client_context("isRobotRequest", "yes");
    assert!(is_retry(
        &decide(&second, robot, &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT).decision
    ));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let policy_entry = entry_of("policy.wasm");
        std::fs::set_permissions(&policy_entry, std::fs::Permissions::from_mode(0o666)).unwrap();
        let third = ws.registry();
        assert_eq!(
            third.active("p").unwrap().origin().unwrap(),
            CodeOrigin::Compiled
        );
        assert_eq!(third.status().cache.unwrap().discarded, 1);
    }
}

/// docs/registry.md "The compiled-artifact cache": in a directory this user owns that others
/// may write to (a shared volume), the entries live in its subdirectory `private`, this user's
/// and `0700`, and serve as anywhere; a `private` that others may write to is refused, saying
/// how to fix it.
#[cfg(unix)]
#[test]
fn a_shared_cache_directory_keeps_its_entries_in_a_private_subdirectory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o2777)).unwrap();
    let bytes = std::fs::read(crate::wasm_support::guest("best_effort")).unwrap();
    let load = || {
        let cache = ArtifactCache::open(dir.path(), runtime().engine()).unwrap();
        let pre = rebound::wasm::PolicyPre::load_cached(runtime(), "p", &bytes, Some(&cache));
        (pre.unwrap().origin(), cache)
    };
    let (first, cache) = load();
    let private = dir.path().join("private");
    assert_eq!(cache.dir(), private);
    assert_eq!(first, CodeOrigin::Compiled);
    let mode = std::fs::metadata(&private).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(cache.entry_path(&[0; 32]).starts_with(&private));
    assert_eq!(load().0, CodeOrigin::Cached);

    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = ArtifactCache::open(dir.path(), runtime().engine()).unwrap_err();
    assert!(matches!(e, CacheError::Unsafe { .. }));
    assert!(
        e.to_string().contains("mode 777") && e.to_string().contains("chmod 700"),
        "{e}"
    );
}

/// docs/wit-versions.md: a deployed component of each
/// earlier released version (`rebound:policy@0.1.0`, `@0.2.0`, `@0.3.0`) serves under this host, status
/// names the version it was built for, and it is hot-swapped for its current rebuild (and
/// back) without a decision changing.
#[test]
fn released_components_serve_and_swap_with_their_current_rebuilds() {
    for version in registry_support::released_versions() {
        serves_and_swaps_with_its_current_rebuild(version);
    }
}

fn serves_and_swaps_with_its_current_rebuild(released: WitVersion) {
    let ws = Workspace::new();
    let old = registry_support::released(released, "no_retry_for_robots");
    let registry = single(&ws, &old, "");
    let robot = || request(RequestType::Get).with_client_context("isRobotRequest", "yes");
    let reason = reasons::KV_LOCKED;
    let wit_version =
        |registry: &PolicyRegistry| registry.policy_status("p").unwrap().active.wit_version;
    assert_eq!(wit_version(&registry), Some(released));
    let json = serde_json::to_value(registry.status()).unwrap();
    assert_eq!(
        json["policies"][0]["active"]["wit_version"],
        released.number()
    );
    // The retry delay, or none for an ending.
    let answers = |registry: &PolicyRegistry| {
        [robot(), request(RequestType::Get)].map(|r| match decide(registry, r, &reason).decision {
            Decision::Retry(plan) => Some(plan.delay),
            _ => None,
        })
    };
    let before = answers(&registry);
    assert!(before[0].is_none() && before[1].is_some(), "{before:?}");

    for (guest, version) in [
        ("no_retry_for_robots".to_owned(), WitVersion::CURRENT),
        (old, released),
    ] {
        ws.install("policy.wasm", &guest);
        assert!(matches!(
            registry.reload("p").unwrap(),
            ReloadOutcome::Swapped { .. }
        ));
        assert_eq!(active_hash(&registry, "p"), guest_hash(&guest));
        assert_eq!(wit_version(&registry), Some(version));
        assert_eq!(answers(&registry), before, "{guest}");
    }
}

/// docs/hedging.md "WebAssembly policies": a component's hedging is served as it is; hot-swapped
/// to a version that exports `hedging`, the policy hedges its idempotent requests at once, and
/// swapped back it stops.
#[test]
fn a_hot_swap_to_a_hedging_component_hedges_and_back_stops() {
    let ws = Workspace::new();
    let registry = single(&ws, "best_effort", "");
    let hedges = |registry: &PolicyRegistry| {
        let get = request(RequestType::Get);
        (registry.controls(&get))
            .hedging(&get, std::time::Instant::now())
            .is_some()
    };
    assert!(!hedges(&registry));
    for (guest, hedging) in [("hedge_echo", true), ("best_effort", false)] {
        ws.install("policy.wasm", guest);
        assert!(matches!(
            registry.reload("p").unwrap(),
            ReloadOutcome::Swapped { .. }
        ));
        assert_eq!(hedges(&registry), hedging, "{guest}");
    }
}

/// docs/registry.md `strict_start`: a policy that fails to load at start leaves the registry
/// starting, that policy answering its fail-safe (saying why) with the error in its status,
/// the others deciding as usual; a reload that succeeds replaces the stand-in (and it is no
/// version to roll back to). `strict_start = true` refuses to start instead. A component file
/// that does not exist is a configuration error either way, naming the file, line and field.
#[test]
fn a_policy_that_fails_to_load_at_start_answers_its_fail_safe_until_reloaded() {
    let ws = Workspace::new();
    std::fs::write(ws.path("policy.wasm"), b"not a component").unwrap();
    let text = "default_policy = \"standard\"\n[policies.standard]\nbuiltin = \"best-effort\"\n[policies.p]\ncomponent = \"policy.wasm\"\n";
    ws.config(&format!("strict_start = true\n{text}"));
    let refused = PolicyRegistry::with_runtime(ws.load_config(), runtime().clone()).unwrap_err();
    assert!(refused.to_string().contains("policy `p`"), "{refused}");

    ws.config(&text.replace("policy.wasm", "missing.wasm"));
    let missing = rebound::config::RegistryConfig::load(&ws.path("rebound.toml")).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("policies.p.component: no component file at"),
        "{missing}"
    );
    // What makes one: an author who has not built the project yet is told how.
    assert!(missing.to_string().contains("`rebound build`"), "{missing}");

    ws.config(text);
    let registry = PolicyRegistry::with_runtime(ws.load_config(), runtime().clone()).unwrap();
    let status = registry.policy_status("p").unwrap();
    assert_eq!(status.active.version, "not-loaded", "{status:?}");
    let error = status.last_error.clone().expect("the load error");
    assert!(
        error.contains("policy `p`")
            && error.contains("not a WebAssembly file")
            && !error.contains('\n'),
        "one line saying what the file is: {error}"
    );
    match decide(
        &registry,
        request(RequestType::Get).with_policy("p"),
        &reasons::KV_LOCKED,
    )
    .decision
    {
        Decision::Fail(RetryError::RequestCanceled {
            reason: CancelReason::PolicyFailed(failure, _),
            ..
        }) => {
            assert_eq!(failure.kind, PolicyFailureKind::NotLoaded);
            assert_eq!(failure.detail, error);
        }
        other => panic!("{other:?}"),
    }
    assert!(is_retry(
        &decide(&registry, request(RequestType::Get), &reasons::KV_LOCKED).decision
    ));

    ws.install("policy.wasm", "best_effort");
    assert!(matches!(
        registry.reload("p").unwrap(),
        ReloadOutcome::Swapped { .. }
    ));
    assert_eq!(active_hash(&registry, "p"), guest_hash("best_effort"));
    assert!(registry.policy_status("p").unwrap().last_error.is_none());
    assert!(is_retry(
        &decide(
            &registry,
            request(RequestType::Get).with_policy("p"),
            &reasons::KV_LOCKED
        )
        .decision
    ));
    assert!(matches!(
        registry.rollback("p").unwrap_err(),
        RegistryError::NoPrevious(_)
    ));
}

/// A pinned component loads only with its digest; a file whose digest
/// differs is refused at load, and at a reload the running version keeps serving with the
/// error in status. Changing the pin in the configuration accepts the new file.
#[test]
fn a_pinned_component_refuses_any_other_file() {
    let ws = Workspace::new();
    ws.install("policy.wasm", "best_effort");
    let best = guest_hash("best_effort");
    let pinned = |hash: &str| {
        format!("default_policy = \"p\"\n[policies.p]\ncomponent = {{ path = \"policy.wasm\", sha256 = \"{hash}\" }}\n")
    };
    ws.config(&pinned(&best));
    let registry = ws.registry();
    assert_eq!(active_hash(&registry, "p"), best);

    // Another file under the pinned name: refused, the pinned version keeps deciding.
    ws.install("policy.wasm", "fail_fast");
    let fail = guest_hash("fail_fast");
    let e = registry.reload("p").unwrap_err();
    assert!(
        matches!(&e, RegistryError::Build(BuildError::PinMismatch { .. })),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains(&format!("has sha256 {fail}, the configuration pins {best}")),
        "{text}"
    );
    assert_eq!(active_hash(&registry, "p"), best);
    assert!(is_retry(
        &decide(&registry, request(RequestType::Get), &reasons::KV_LOCKED).decision
    ));
    let status = registry.policy_status("p").unwrap();
    assert!(
        status.last_error.as_deref().unwrap().contains("pins"),
        "{status:?}"
    );

    // At a strict start, a mismatch is an error; otherwise the policy starts on its
    // fail-safe, the mismatch in its status.
    let fresh = Workspace::new();
    fresh.install("policy.wasm", "fail_fast");
    fresh.config(&format!("strict_start = true\n{}", pinned(&best)));
    let e = PolicyRegistry::with_runtime(fresh.load_config(), runtime().clone()).unwrap_err();
    assert!(e.to_string().contains("the configuration pins"), "{e}");
    fresh.config(&pinned(&best));
    let started = PolicyRegistry::with_runtime(fresh.load_config(), runtime().clone()).unwrap();
    let status = started.policy_status("p").unwrap();
    assert_eq!(status.active.version, "not-loaded", "{status:?}");
    assert!(
        status.last_error.as_deref().unwrap().contains("pins"),
        "{status:?}"
    );

    // Moving the pin to the new file's digest accepts it.
    ws.config(&pinned(&fail));
    registry.reload_config().unwrap();
    assert_eq!(active_hash(&registry, "p"), fail);
}

#[test]
fn status_reports_version_hash_load_time_decisions_and_failures() {
    let ws = Workspace::new();
    let registry = single(
        &ws,
        "adversary",
        "fail_safe = \"best_effort\"\nquarantine = { after_failures = 2, cooldown_ms = 60000 }\n",
    );
    let panicking = || request(RequestType::Get).with_client_context("panic", "boom");
    for _ in 0..3 {
        let _ = decide(
            &registry,
            panicking(),
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        );
    }
    let status = registry.status();
    assert_eq!(status.default_policy, "p");
    let p = &status.policies[0];
    assert_eq!(p.name, "p");
    assert_eq!(p.active.hash, guest_hash("adversary"));
    assert_eq!(p.active.version, guest_hash("adversary")[..12]);
    assert!(p.active.source.ends_with("policy.wasm"));
    assert!(p.active.loaded_at_unix_ms > 0 && p.active.load_time_us > 0);
    assert_eq!(p.active.decisions, 3);
    assert_eq!(p.failures.get("panic"), Some(&2));
    assert_eq!(p.failures.get("quarantined"), Some(&1));
    assert!(p.quarantined);
    assert!(p.last_failure.as_deref().unwrap().contains("boom"));
    // The status serialises for the binary's API.
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["policies"][0]["active"]["decisions"], 3);
}

#[test]
fn the_example_configuration_loads_every_policy() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rebound.toml");
    let config = rebound::config::RegistryConfig::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    // Keep the test's cache out of the source tree; a policy that does not load is an error.
    let mut config = config;
    config.cache_dir = Some(rebound::config::CacheDir::Configured(
        dir.path().join("cache"),
    ));
    config.strict_start = true;
    let registry =
        PolicyRegistry::with_runtime(config, runtime().clone()).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = registry
        .status()
        .policies
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(
        names,
        [
            "budgeted",
            "cassandra",
            "guarded",
            "hedged",
            "impatient",
            "impatient-budgeted",
            "proportional",
            "robots",
            "standard",
            "strict",
            "throttled"
        ]
    );
    assert_eq!(
        decided_by(&registry, request(RequestType::Upsert)),
        "budgeted"
    );
    assert_eq!(
        decided_by(&registry, request(RequestType::Cql)),
        "cassandra"
    );
    assert_eq!(
        decided_by(
            &registry,
            request(RequestType::Get).with_profile("custom-retries")
        ),
        "robots"
    );
}

/// docs/registry.md "The compiled-artifact cache": past `cache_max_mb`, writing an entry
/// deletes the entries used least recently until the rest fit, never the one just written; an
/// entry read (a hit) counts as used. `cache_max_mb = 0` is refused.
#[test]
fn the_cache_evicts_the_entries_used_least_recently() {
    let dir = tempfile::tempdir().unwrap();
    let load = |cache: &ArtifactCache, name: &str| {
        let bytes = std::fs::read(crate::wasm_support::guest(name)).unwrap();
        rebound::wasm::PolicyPre::load_cached(runtime(), name, &bytes, Some(cache)).unwrap()
    };
    let entries = || {
        (std::fs::read_dir(dir.path()).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
            .count()
    };
    let open = |max_bytes| {
        ArtifactCache::open(dir.path(), runtime().engine())
            .unwrap()
            .with_max_bytes(max_bytes)
    };
    let unbounded = open(u64::MAX);
    let size = |pre: &rebound::wasm::PolicyPre| {
        let path = unbounded.entry_path(pre.sha256());
        (std::fs::metadata(&path).unwrap().len(), path)
    };
    let (a, f, r) = (
        load(&unbounded, "best_effort"),
        load(&unbounded, "fail_fast"),
        load(&unbounded, "no_retry_for_robots"),
    );
    let ((size_a, path_a), (_, path_f), (size_r, path_r)) = (size(&a), size(&f), size(&r));
    std::fs::remove_file(&path_r).unwrap();
    assert_eq!(entries(), 2);
    // Room for `best_effort` and `no_retry_for_robots`: a hit on `best_effort` makes
    // `fail_fast` the entry used least recently, the one deleted when the third is written.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let bounded = open(size_a + size_r);
    assert_eq!(load(&bounded, "best_effort").origin(), CodeOrigin::Cached);
    load(&bounded, "no_retry_for_robots");
    assert_eq!(bounded.stats().evicted, 1);
    assert!(path_a.exists() && path_r.exists() && !path_f.exists());
    // A limit below one entry keeps only the one just written.
    let tiny = open(1);
    load(&tiny, "fail_fast");
    assert_eq!(entries(), 1);
    let ws = Workspace::new();
    ws.install("policy.wasm", "best_effort");
    ws.config(
        "default_policy = \"p\"\ncache_max_mb = 0\n[policies.p]\ncomponent = \"policy.wasm\"\n",
    );
    let e = rebound::config::RegistryConfig::load(&ws.path("rebound.toml")).unwrap_err();
    assert_eq!(e.field, "cache_max_mb", "{e}");
}
