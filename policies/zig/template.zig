//! A starting point for a Rebound policy in Zig: copy this file to a new name, change
//! `exports_rebound_policy_strategy_retry_after`, and build it with ./scripts/build-guests.sh
//! (see docs/policy-zig.md). The module `bindings` is wit-bindgen's C bindings of
//! wit/policy.wit, translated to Zig.
//!
//! This template caps retries at the parameter `max_attempts` (default 3), gives an attempt cut
//! by its attempt timeout twice as long the next time, and otherwise answers the host's best
//! effort, which already refuses unsafe retries of non-idempotent requests.
const std = @import("std");
const c = @import("bindings");

var max_attempts: u32 = 3;

/// Called once per instance with the policy's `params`; return false with `err` set to reject
/// them. Arguments are owned by the callee: free them.
export fn exports_rebound_policy_strategy_configure(
    params: *c.retry_policy_list_tuple2_string_string_t,
    err: *c.retry_policy_string_t,
) bool {
    defer c.retry_policy_list_tuple2_string_string_free(params);
    for (params.ptr[0..params.len]) |param| {
        if (!std.mem.eql(u8, param.f0.ptr[0..param.f0.len], "max_attempts")) continue;
        max_attempts = std.fmt.parseInt(u32, param.f1.ptr[0..param.f1.len], 10) catch {
            c.retry_policy_string_dup(err, "max_attempts: expected a whole number");
            return false;
        };
    }
    return true;
}

/// Decides for the failed request, which failed for `reason`, into `ret`. The request's facts
/// are functions of the `failure` import (c.rebound_policy_failure_retry_attempts(), ...;
/// c.rebound_policy_failure_request() reads them all at once).
export fn exports_rebound_policy_strategy_retry_after(
    reason: *c.exports_rebound_policy_strategy_retry_reason_t,
    ret: *c.exports_rebound_policy_strategy_retry_action_t,
) void {
    defer c.exports_rebound_policy_strategy_retry_reason_free(reason);
    if (c.rebound_policy_failure_retry_attempts() >= max_attempts) {
        ret.tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_NO_RETRY;
        return;
    }
    // An attempt cut by its attempt timeout: the retry best effort makes gets twice as long
    // (the request's deadline still ends it).
    var fired: u64 = 0;
    if (c.rebound_policy_failure_attempt_timeout_ms(&fired)) {
        var request: c.rebound_policy_types_request_t = undefined;
        c.rebound_policy_failure_request(&request);
        c.rebound_policy_host_best_effort(&request, reason, ret);
        if (ret.tag == c.REBOUND_POLICY_TYPES_RETRY_ACTION_RETRY) {
            ret.val.retry.attempt_timeout_ms = .{ .is_some = true, .val = 2 * fired };
        }
        return;
    }
    ret.tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
}
