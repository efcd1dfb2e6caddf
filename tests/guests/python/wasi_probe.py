"""Test guest: each decision exercises one thing a Python runtime reaches through WASI or the
sandbox, chosen by the parameter `probe`, and reports what it saw as the retry delay (so the
host test can read it). Never a policy to use."""

import os
import socket
import sys
import time

from wit_world import exports
from wit_world.imports import types

probe = ""
seen = []


def observe():
    if probe == "environment":
        return len(os.environ) + len(sys.argv[1:])
    if probe == "wall_clock":
        return int(time.time())
    if probe == "monotonic_clock":
        return time.monotonic_ns()
    if probe == "random":
        return int.from_bytes(os.urandom(6), "little")
    if probe == "socket":
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            return 0
        except OSError as e:
            return 1000 + (e.errno or 0)
    if probe == "file":
        try:
            open("/etc/hostname").read()
            return 0
        except OSError as e:
            return 1000 + (e.errno or 0)
    if probe == "stdin":
        return len(sys.stdin.read())
    if probe == "print":
        print("probe says hello")
        print("probe warns", file=sys.stderr)
        return 1
    if probe == "exit":
        sys.exit(3)
    if probe == "sleep":
        time.sleep(5)
        return 1
    if probe.startswith("naps_"):
        # As many 1 ms naps as the probe's number: a runtime's short pauses.
        for _ in range(int(probe[len("naps_"):])):
            time.sleep(0.001)
        return 2
    if probe == "infinite_loop":
        while True:
            pass
    if probe == "memory_bomb":
        while True:
            seen.append(bytearray(1 << 20))
    raise ValueError(f"unknown probe {probe!r}")


class Strategy(exports.Strategy):
    def configure(self, params):
        global probe
        probe = dict(params).get("probe", "")

    def retry_after(self, reason):
        if probe == "raise_on_a_third":
            # Fails on about a third of the grid (the reasons whose class name's length is 2
            # more than a multiple of 3), as a policy with a bug in a common branch does.
            if len(type(reason).__name__) % 3 == 2:
                raise ValueError("this reason is not for this probe")
            return types.RetryAction_NoRetry()
        if probe == "raise_on_locked":
            # Fails on one reason only, so that a host's smoke calls pass and a decision fails.
            if isinstance(reason, types.RetryReason_KvLocked):
                raise ValueError("a locked document is not for this probe")
            return types.RetryAction_NoRetry()
        delay = observe()
        return types.RetryAction_Retry(types.Retry(delay_ms=delay, node=types.NodeChoice.SAME, consistency=None, attempt_timeout_ms=None))
