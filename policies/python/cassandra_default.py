"""The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
most one retry, only where success is likely. The Python twin of policies/cassandra-default
(Rust)."""

from wit_world import exports
from wit_world.imports import types as t

RETHROW = t.RetryAction_Rethrow()

# Reasons raised before the request was written anywhere: tried again on the next node.
PRE_DISPATCH = (
    t.RetryReason_SocketNotAvailable, t.RetryReason_ServiceNotAvailable,
    t.RetryReason_NodeNotAvailable, t.RetryReason_EndpointNotWritable,
    t.RetryReason_CircuitBreakerOpen, t.RetryReason_BucketNotAvailable,
    t.RetryReason_BucketOpenInProgress, t.RetryReason_GlobalConfigLoadInProgress,
    t.RetryReason_CollectionMapRefreshInProgress, t.RetryReason_AuthenticationError,
    t.RetryReason_TlsError, t.RetryReason_BucketAccessError, t.RetryReason_ScopeNotFound,
    t.RetryReason_CollectionNotFound,
)

# Coordinator errors rethrown whatever the request: never retried, or read/write failures.
RETHROWN_ERRORS = (
    t.ServerErrorKind.QUERY_VALIDATION, t.ServerErrorKind.FUNCTION_FAILURE,
    t.ServerErrorKind.PROTOCOL_ERROR, t.ServerErrorKind.READ_FAILURE,
    t.ServerErrorKind.WRITE_FAILURE,
)


def retry_now(node):
    return t.RetryAction_Retry(t.Retry(delay_ms=0, node=node, consistency=None))


def decide(request, reason):
    retries = request.retry_attempts
    # The driver's verdict methods.
    if isinstance(reason, t.RetryReason_ReadTimeout):
        e = reason.value
        if retries == 0 and e.received >= e.block_for and not e.data_present:
            return retry_now(t.NodeChoice.SAME)
        return RETHROW
    if isinstance(reason, t.RetryReason_Unavailable):
        return retry_now(t.NodeChoice.NEXT) if retries == 0 else RETHROW
    # Asked of the policy for idempotent requests only; rethrown otherwise.
    if isinstance(reason, t.RetryReason_WriteTimeout):
        if request.idempotent and retries == 0 and reason.value.write_type == t.WriteType.BATCH_LOG:
            return retry_now(t.NodeChoice.SAME)
        return RETHROW
    if isinstance(reason, t.RetryReason_RequestAborted):
        if request.idempotent and reason.value != t.AbortKind.OTHER:
            return retry_now(t.NodeChoice.NEXT)
        return RETHROW
    if isinstance(reason, t.RetryReason_SocketClosedWhileInFlight):  # a closed connection
        return retry_now(t.NodeChoice.NEXT) if request.idempotent else RETHROW
    if isinstance(reason, t.RetryReason_ErrorResponse):
        if request.idempotent and reason.value not in RETHROWN_ERRORS:
            return retry_now(t.NodeChoice.NEXT)
        return RETHROW
    # The driver's hard-coded rules.
    if isinstance(reason, t.RetryReason_Bootstrapping):
        return retry_now(t.NodeChoice.NEXT)
    if isinstance(reason, t.RetryReason_Unprepared):
        return retry_now(t.NodeChoice.SAME)
    if isinstance(reason, PRE_DISPATCH):
        return retry_now(t.NodeChoice.NEXT)
    return RETHROW


class Strategy(exports.Strategy):
    def configure(self, params):
        pass

    def retry_after(self, request, reason):
        return decide(request, reason)
