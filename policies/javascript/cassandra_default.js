// The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
// most one retry, only where success is likely. The JavaScript twin of
// policies/cassandra-default (Rust). The request's facts are read from `failure` only where a
// rule needs them.
import { idempotent, retryAttempts, service } from "rebound:policy/failure@0.6.0";

const RETHROW = { tag: "rethrow" };
const BEST_EFFORT = { tag: "best-effort" };

// Reasons raised before the request was written anywhere: tried again on the next node.
const PRE_DISPATCH = new Set([
  "socket-not-available", "service-not-available", "node-not-available",
  "endpoint-not-writable", "circuit-breaker-open", "bucket-not-available",
  "bucket-open-in-progress", "global-config-load-in-progress",
  "collection-map-refresh-in-progress", "authentication-error", "tls-error",
  "bucket-access-error", "scope-not-found", "collection-not-found",
]);

// Coordinator errors rethrown whatever the request: never retried, or read/write failures.
const RETHROWN_ERRORS = new Set([
  "query-validation", "function-failure", "protocol-error", "read-failure", "write-failure",
]);

// Numbers and null, not BigInt and undefined: both JavaScript engines accept them (docs/policy-javascript.md).
const retryNow = (node) => ({ tag: "retry", val: { delayMs: 0, node, consistency: null, attemptTimeoutMs: null } });
const RETRY_SAME = retryNow("same");
const RETRY_NEXT = retryNow("next");

function decide(reason) {
  const e = reason.val;
  switch (reason.tag) {
    // The driver's verdict methods.
    case "read-timeout":
      return e.received >= e.blockFor && !e.dataPresent && retryAttempts() === 0 ? RETRY_SAME : RETHROW;
    case "unavailable":
      return retryAttempts() === 0 ? RETRY_NEXT : RETHROW;
    // Asked of the policy for idempotent requests only; rethrown otherwise.
    case "write-timeout":
      return e.writeType === "batch-log" && idempotent() && retryAttempts() === 0 ? RETRY_SAME : RETHROW;
    case "request-aborted":
      return e !== "other" && idempotent() ? RETRY_NEXT : RETHROW;
    case "socket-closed-while-in-flight": // a closed connection
      return idempotent() ? RETRY_NEXT : RETHROW;
    case "error-response":
      return !RETHROWN_ERRORS.has(e) && idempotent() ? RETRY_NEXT : RETHROW;
    // The driver's hard-coded rules.
    case "bootstrapping":
      return RETRY_NEXT;
    case "unprepared":
      return RETRY_SAME;
    default:
      return PRE_DISPATCH.has(reason.tag) ? RETRY_NEXT : RETHROW;
  }
}

export const strategy = {
  configure(_params) {},
  retryAfter(reason) {
    // The driver's rules are CQL's: a plain HTTP request or gRPC call gets the host's best
    // effort.
    const protocol = service();
    if (protocol === "http" || protocol === "grpc") return BEST_EFFORT;
    return decide(reason);
  },
};
