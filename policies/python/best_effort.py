"""Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy answers the
`best-effort` action for every failure, and the host's own best effort decides. The Python twin
of policies/best-effort (Rust)."""

from wit_world import exports
from wit_world.imports import types as t

BEST_EFFORT = t.RetryAction_BestEffort()


class Strategy(exports.Strategy):
    def configure(self, params):
        pass

    def retry_after(self, reason):
        return BEST_EFFORT
