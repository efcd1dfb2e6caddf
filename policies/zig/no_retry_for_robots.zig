//! RFC 0049 "Accessible Context in the RetryStrategy": a request whose client context holds the
//! key `isRobotRequest` (or the parameter `key`) is never retried; others get the host's best
//! effort. The Zig twin of policies/no-retry-for-robots (Rust).
const std = @import("std");
const c = @import("bindings");

var robot_key: c.retry_policy_string_t = undefined;

export fn exports_rebound_policy_strategy_configure(
    params: *c.retry_policy_list_tuple2_string_string_t,
    err: *c.retry_policy_string_t,
) bool {
    _ = err;
    c.retry_policy_string_dup(&robot_key, "isRobotRequest");
    for (params.ptr[0..params.len]) |*param| {
        if (std.mem.eql(u8, param.f0.ptr[0..param.f0.len], "key")) {
            c.retry_policy_string_free(&robot_key);
            c.retry_policy_string_dup_n(&robot_key, param.f1.ptr, param.f1.len);
        }
    }
    c.retry_policy_list_tuple2_string_string_free(params);
    return true;
}

export fn exports_rebound_policy_strategy_retry_after(
    reason: *c.exports_rebound_policy_strategy_retry_reason_t,
    ret: *c.exports_rebound_policy_strategy_retry_action_t,
) void {
    var value: c.retry_policy_string_t = undefined;
    if (c.rebound_policy_failure_client_context(&robot_key, &value)) {
        c.retry_policy_string_free(&value);
        ret.tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_NO_RETRY;
    } else {
        ret.tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
    }
    c.exports_rebound_policy_strategy_retry_reason_free(reason);
}
