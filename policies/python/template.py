"""A starting point for a Rebound policy in Python: copy this file to a new name, change
`retry_after`, and build it with ./scripts/build-guests.sh (see docs/policy-python.md).

This template caps retries at the parameter `max_attempts` (default 3), gives an attempt cut
by its attempt timeout twice as long the next time, and otherwise answers the host's best
effort, which already refuses unsafe retries of non-idempotent requests.
"""

from wit_world import exports
from wit_world.imports import failure, host, types

max_attempts = 3


class Strategy(exports.Strategy):
    def configure(self, params):
        """Called once per instance with the policy's `params` from the host configuration.
        Raise `componentize_py_types.Err("...")` to reject them."""
        global max_attempts
        value = dict(params).get("max_attempts", "3")
        if not value.isdigit():
            from componentize_py_types import Err
            raise Err(f"max_attempts: expected a whole number, got {value!r}")
        max_attempts = int(value)

    def retry_after(self, reason):
        """Decides for the failed request, which failed for `reason` (a types.RetryReason_*
        value); returns a types.RetryAction_* value. The request's facts are functions of
        `failure` (failure.retry_attempts(), failure.idempotent(), ...; failure.request() reads
        them all at once)."""
        if failure.retry_attempts() >= max_attempts:
            return types.RetryAction_NoRetry()
        # An attempt cut by its attempt timeout: the retry best effort makes gets twice as long
        # (the request's deadline still ends it).
        fired = failure.attempt_timeout_ms()
        if fired is not None:
            answer = host.best_effort(failure.request(), reason)
            if isinstance(answer, types.RetryAction_Retry):
                retry = answer.value
                retry.attempt_timeout_ms = 2 * fired
                return types.RetryAction_Retry(retry)
        return types.RetryAction_BestEffort()
