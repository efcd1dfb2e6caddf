"""Test guest: the bare export in Python. Answers a constant retry (1 ms, same node) without
reading the request or the reason, so the languages benchmark measures what the call itself
costs: lifting the reason into a Python object and lowering the answer."""

from wit_world import exports
from wit_world.imports import types as t

RETRY = t.RetryAction_Retry(t.Retry(delay_ms=1, node=t.NodeChoice.SAME, consistency=None, attempt_timeout_ms=None))


class Strategy(exports.Strategy):
    def configure(self, params):
        pass

    def retry_after(self, reason):
        return RETRY
