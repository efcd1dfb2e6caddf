"""RFC 0049 "Accessible Context in the RetryStrategy": a request whose client context holds the
key `isRobotRequest` (or the parameter `key`) is never retried; others get the host's best
effort. The Python twin of policies/no-retry-for-robots (Rust)."""

from wit_world import exports
from wit_world.imports import failure, types as t

NO_RETRY = t.RetryAction_NoRetry()
BEST_EFFORT = t.RetryAction_BestEffort()

robot_key = "isRobotRequest"


class Strategy(exports.Strategy):
    def configure(self, params):
        global robot_key
        robot_key = dict(params).get("key", "isRobotRequest")

    def retry_after(self, reason):
        if failure.client_context(robot_key) is not None:
            return NO_RETRY
        return BEST_EFFORT
