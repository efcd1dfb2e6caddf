// Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy answers the
// `best-effort` action for every failure, and the host's own best effort decides. The
// TypeScript twin of policies/best-effort (Rust).
import type { Strategy } from "rebound:policy/strategy@0.6.0";
import type { RetryAction } from "rebound:policy/types@0.6.0";

const BEST_EFFORT: RetryAction = { tag: "best-effort" };

export const strategy: Strategy = {
  configure(_params) {},
  retryAfter(_reason) {
    return BEST_EFFORT;
  },
};
