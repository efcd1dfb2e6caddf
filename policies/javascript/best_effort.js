// Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy answers the
// `best-effort` action for every failure, and the host's own best effort decides. The
// JavaScript twin of policies/best-effort (Rust).
const BEST_EFFORT = { tag: "best-effort" };

export const strategy = {
  configure(_params) {},
  retryAfter(_reason) {
    return BEST_EFFORT;
  },
};
