// The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
// most one retry, only where success is likely. The JavaScript twin of
// policies/cassandra-default (Rust).

const RETHROW = { tag: "rethrow" };

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
const retryNow = (node) => ({ tag: "retry", val: { delayMs: 0, node, consistency: null } });

function decide(request, reason) {
  const retries = request.retryAttempts;
  const e = reason.val;
  switch (reason.tag) {
    // The driver's verdict methods.
    case "read-timeout":
      return retries === 0 && e.received >= e.blockFor && !e.dataPresent ? retryNow("same") : RETHROW;
    case "unavailable":
      return retries === 0 ? retryNow("next") : RETHROW;
    // Asked of the policy for idempotent requests only; rethrown otherwise.
    case "write-timeout":
      return request.idempotent && retries === 0 && e.writeType === "batch-log" ? retryNow("same") : RETHROW;
    case "request-aborted":
      return request.idempotent && e !== "other" ? retryNow("next") : RETHROW;
    case "socket-closed-while-in-flight": // a closed connection
      return request.idempotent ? retryNow("next") : RETHROW;
    case "error-response":
      return request.idempotent && !RETHROWN_ERRORS.has(e) ? retryNow("next") : RETHROW;
    // The driver's hard-coded rules.
    case "bootstrapping":
      return retryNow("next");
    case "unprepared":
      return retryNow("same");
    default:
      return PRE_DISPATCH.has(reason.tag) ? retryNow("next") : RETHROW;
  }
}

export const strategy = {
  configure(_params) {},
  retryAfter(request, reason) {
    return decide(request, reason);
  },
};
