//! Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy answers the
//! `best-effort` action for every failure, and the host's own best effort decides. The Zig twin
//! of policies/best-effort (Rust).
const c = @import("bindings");

export fn exports_rebound_policy_strategy_configure(
    params: *c.retry_policy_list_tuple2_string_string_t,
    err: *c.retry_policy_string_t,
) bool {
    _ = err;
    c.retry_policy_list_tuple2_string_string_free(params);
    return true;
}

export fn exports_rebound_policy_strategy_retry_after(
    reason: *c.exports_rebound_policy_strategy_retry_reason_t,
    ret: *c.exports_rebound_policy_strategy_retry_action_t,
) void {
    ret.tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
    c.exports_rebound_policy_strategy_retry_reason_free(reason);
}
