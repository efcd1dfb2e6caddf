"""The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
most one retry, only where success is likely. The Python twin of policies/cassandra-default
(Rust). The request's facts are read from `failure` only where a rule needs them."""

from wit_world import exports
from wit_world.imports import failure, types as t

RETHROW = t.RetryAction_Rethrow()
BEST_EFFORT = t.RetryAction_BestEffort()
OTHER_PROTOCOLS = frozenset((t.Service.HTTP, t.Service.GRPC))
RETRY_SAME = t.RetryAction_Retry(t.Retry(delay_ms=0, node=t.NodeChoice.SAME, consistency=None, attempt_timeout_ms=None))
RETRY_NEXT = t.RetryAction_Retry(t.Retry(delay_ms=0, node=t.NodeChoice.NEXT, consistency=None, attempt_timeout_ms=None))

# Coordinator errors rethrown whatever the request: never retried, or read/write failures.
RETHROWN_ERRORS = frozenset((
    t.ServerErrorKind.QUERY_VALIDATION, t.ServerErrorKind.FUNCTION_FAILURE,
    t.ServerErrorKind.PROTOCOL_ERROR, t.ServerErrorKind.READ_FAILURE,
    t.ServerErrorKind.WRITE_FAILURE,
))


# The driver's verdict methods.
def read_timeout(reason):
    e = reason.value
    if e.received >= e.block_for and not e.data_present and failure.retry_attempts() == 0:
        return RETRY_SAME
    return RETHROW


def unavailable(_reason):
    return RETRY_NEXT if failure.retry_attempts() == 0 else RETHROW


# Asked of the policy for idempotent requests only; rethrown otherwise.
def write_timeout(reason):
    if (reason.value.write_type == t.WriteType.BATCH_LOG and failure.idempotent()
            and failure.retry_attempts() == 0):
        return RETRY_SAME
    return RETHROW


def request_aborted(reason):
    return RETRY_NEXT if reason.value != t.AbortKind.OTHER and failure.idempotent() else RETHROW


def closed_connection(_reason):
    return RETRY_NEXT if failure.idempotent() else RETHROW


def error_response(reason):
    return RETRY_NEXT if reason.value not in RETHROWN_ERRORS and failure.idempotent() else RETHROW


def next_node(_reason):
    return RETRY_NEXT


def same_node(_reason):
    return RETRY_SAME


# The rule of each reason's class; any other reason is rethrown.
RULES = {
    t.RetryReason_ReadTimeout: read_timeout,
    t.RetryReason_Unavailable: unavailable,
    t.RetryReason_WriteTimeout: write_timeout,
    t.RetryReason_RequestAborted: request_aborted,
    t.RetryReason_SocketClosedWhileInFlight: closed_connection,
    t.RetryReason_ErrorResponse: error_response,
    # The driver's hard-coded rules.
    t.RetryReason_Bootstrapping: next_node,
    t.RetryReason_Unprepared: same_node,
    # Reasons raised before the request was written anywhere: tried again on the next node.
    **dict.fromkeys((
        t.RetryReason_SocketNotAvailable, t.RetryReason_ServiceNotAvailable,
        t.RetryReason_NodeNotAvailable, t.RetryReason_EndpointNotWritable,
        t.RetryReason_CircuitBreakerOpen, t.RetryReason_BucketNotAvailable,
        t.RetryReason_BucketOpenInProgress, t.RetryReason_GlobalConfigLoadInProgress,
        t.RetryReason_CollectionMapRefreshInProgress, t.RetryReason_AuthenticationError,
        t.RetryReason_TlsError, t.RetryReason_BucketAccessError, t.RetryReason_ScopeNotFound,
        t.RetryReason_CollectionNotFound,
    ), next_node),
}


class Strategy(exports.Strategy):
    def configure(self, params):
        pass

    def retry_after(self, reason):
        # The driver's rules are CQL's: a plain HTTP request or gRPC call gets the host's best
        # effort.
        if failure.service() in OTHER_PROTOCOLS:
            return BEST_EFFORT
        rule = RULES.get(type(reason))
        return rule(reason) if rule else RETHROW
