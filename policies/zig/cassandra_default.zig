//! The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
//! most one retry, only where success is likely. The Zig twin of policies/cassandra-default
//! (Rust). The request's facts are read from the `failure` import only where a rule needs them.
const c = @import("bindings");

const Reason = c.exports_rebound_policy_strategy_retry_reason_t;
const Action = c.exports_rebound_policy_strategy_retry_action_t;

const rethrow = Action{ .tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_RETHROW, .val = undefined };

fn retryNow(node: u8) Action {
    return .{
        .tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_RETRY,
        .val = .{ .retry = .{ .delay_ms = 0, .node = node, .consistency = .{ .is_some = false, .val = 0 }, .attempt_timeout_ms = .{ .is_some = false, .val = 0 } } },
    };
}

const same = c.REBOUND_POLICY_TYPES_NODE_CHOICE_SAME;
const next = c.REBOUND_POLICY_TYPES_NODE_CHOICE_NEXT;

/// Reasons raised before the request was written anywhere: tried again on the next node.
fn preDispatch(tag: u8) bool {
    return switch (tag) {
        c.REBOUND_POLICY_TYPES_RETRY_REASON_SOCKET_NOT_AVAILABLE,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_SERVICE_NOT_AVAILABLE,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_NODE_NOT_AVAILABLE,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_ENDPOINT_NOT_WRITABLE,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_CIRCUIT_BREAKER_OPEN,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_BUCKET_NOT_AVAILABLE,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_BUCKET_OPEN_IN_PROGRESS,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_GLOBAL_CONFIG_LOAD_IN_PROGRESS,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_COLLECTION_MAP_REFRESH_IN_PROGRESS,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_AUTHENTICATION_ERROR,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_TLS_ERROR,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_BUCKET_ACCESS_ERROR,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_SCOPE_NOT_FOUND,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_COLLECTION_NOT_FOUND,
        => true,
        else => false,
    };
}

/// Coordinator errors rethrown whatever the request: never retried, or read/write failures.
fn rethrownError(kind: u8) bool {
    return switch (kind) {
        c.REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_QUERY_VALIDATION,
        c.REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_FUNCTION_FAILURE,
        c.REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_PROTOCOL_ERROR,
        c.REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_READ_FAILURE,
        c.REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_WRITE_FAILURE,
        => true,
        else => false,
    };
}

fn firstTry() bool {
    return c.rebound_policy_failure_retry_attempts() == 0;
}

fn idempotent() bool {
    return c.rebound_policy_failure_idempotent();
}

fn decide(reason: *const Reason) Action {
    return switch (reason.tag) {
        // The driver's verdict methods.
        c.REBOUND_POLICY_TYPES_RETRY_REASON_READ_TIMEOUT => blk: {
            const e = reason.val.read_timeout;
            break :blk if (e.received >= e.block_for and !e.data_present and firstTry()) retryNow(same) else rethrow;
        },
        c.REBOUND_POLICY_TYPES_RETRY_REASON_UNAVAILABLE => if (firstTry()) retryNow(next) else rethrow,
        // Asked of the policy for idempotent requests only; rethrown otherwise.
        c.REBOUND_POLICY_TYPES_RETRY_REASON_WRITE_TIMEOUT => if (reason.val.write_timeout.write_type ==
            c.REBOUND_POLICY_TYPES_WRITE_TYPE_BATCH_LOG and idempotent() and firstTry()) retryNow(same) else rethrow,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_REQUEST_ABORTED => if (reason.val.request_aborted !=
            c.REBOUND_POLICY_TYPES_ABORT_KIND_OTHER and idempotent()) retryNow(next) else rethrow,
        // A closed connection.
        c.REBOUND_POLICY_TYPES_RETRY_REASON_SOCKET_CLOSED_WHILE_IN_FLIGHT => if (idempotent()) retryNow(next) else rethrow,
        c.REBOUND_POLICY_TYPES_RETRY_REASON_ERROR_RESPONSE => if (!rethrownError(reason.val.error_response) and
            idempotent()) retryNow(next) else rethrow,
        // The driver's hard-coded rules.
        c.REBOUND_POLICY_TYPES_RETRY_REASON_BOOTSTRAPPING => retryNow(next),
        c.REBOUND_POLICY_TYPES_RETRY_REASON_UNPREPARED => retryNow(same),
        else => if (preDispatch(reason.tag)) retryNow(next) else rethrow,
    };
}

export fn exports_rebound_policy_strategy_configure(
    params: *c.retry_policy_list_tuple2_string_string_t,
    err: *c.retry_policy_string_t,
) bool {
    _ = err;
    c.retry_policy_list_tuple2_string_string_free(params);
    return true;
}

export fn exports_rebound_policy_strategy_retry_after(
    reason: *Reason,
    ret: *Action,
) void {
    // The driver's rules are CQL's: a plain HTTP request or gRPC call gets the host's best effort.
    const service = c.rebound_policy_failure_service();
    if (service == c.REBOUND_POLICY_TYPES_SERVICE_HTTP or service == c.REBOUND_POLICY_TYPES_SERVICE_GRPC) {
        ret.tag = c.REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
    } else {
        ret.* = decide(reason);
    }
    c.exports_rebound_policy_strategy_retry_reason_free(reason);
}
