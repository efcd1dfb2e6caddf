//! Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy asks the host's own
//! best-effort decision for every failure. The Zig twin of policies/best-effort (Rust).
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
    request: *c.exports_rebound_policy_strategy_request_t,
    reason: *c.exports_rebound_policy_strategy_retry_reason_t,
    ret: *c.exports_rebound_policy_strategy_retry_action_t,
) void {
    c.rebound_policy_host_best_effort(request, reason, ret);
    c.exports_rebound_policy_strategy_retry_reason_free(reason);
}
