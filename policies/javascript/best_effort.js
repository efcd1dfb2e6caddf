// Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy asks the host's own
// best-effort decision for every failure. The JavaScript twin of policies/best-effort (Rust).
import { bestEffort } from "rebound:policy/host@0.1.0";

export const strategy = {
  configure(_params) {},
  retryAfter(request, reason) {
    return bestEffort(request, reason);
  },
};
