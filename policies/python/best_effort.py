"""Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy asks the host's own
best-effort decision for every failure. The Python twin of policies/best-effort (Rust)."""

from wit_world import exports
from wit_world.imports import host


class Strategy(exports.Strategy):
    def configure(self, params):
        pass

    def retry_after(self, request, reason):
        return host.best_effort(request, reason)
