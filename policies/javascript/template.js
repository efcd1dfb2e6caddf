// A starting point for a Rebound policy in JavaScript: copy this file to a new name, change
// `retryAfter`, and build it with ./scripts/build-guests.sh (see docs/policy-javascript.md).
//
// This template caps retries at the parameter `max_attempts` (default 3), gives an attempt cut
// by its attempt timeout twice as long the next time, and otherwise answers the host's best
// effort, which already refuses unsafe retries of non-idempotent requests.
import { attemptTimeoutMs, request, retryAttempts } from "rebound:policy/failure@0.6.0";
import { bestEffort } from "rebound:policy/host@0.6.0";

let maxAttempts = 3;

export const strategy = {
  // Called once per instance with the policy's `params` ([name, value] pairs) from the host
  // configuration. Throw a string to reject them.
  configure(params) {
    for (const [name, value] of params) {
      if (name !== "max_attempts") continue;
      if (!/^[0-9]+$/.test(value)) throw `max_attempts: expected a whole number, got "${value}"`;
      maxAttempts = Number(value);
    }
  },
  // Decides for the failed request, which failed for `reason` ({ tag: "kv-locked" },
  // { tag: "read-timeout", val: {...} }, ...). The request's facts are functions imported from
  // "rebound:policy/failure@0.6.0" (retryAttempts(), idempotent(), ...; request() reads them
  // all at once).
  retryAfter(reason) {
    if (retryAttempts() >= maxAttempts) return { tag: "no-retry" };
    // An attempt cut by its attempt timeout: the retry best effort makes gets twice as long
    // (the request's deadline still ends it). A 64-bit value is a BigInt on one engine and a
    // number on the other: answer numbers.
    const fired = attemptTimeoutMs();
    if (fired != null) {
      const answer = bestEffort(request(), reason);
      if (answer.tag === "retry") {
        const { node, consistency } = answer.val;
        const delayMs = Number(answer.val.delayMs);
        return { tag: "retry", val: { delayMs, node, consistency, attemptTimeoutMs: 2 * Number(fired) } };
      }
    }
    return { tag: "best-effort" };
  },
};
