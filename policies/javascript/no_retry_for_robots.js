// RFC 0049 "Accessible Context in the RetryStrategy": a request whose client context holds the
// key `isRobotRequest` (or the parameter `key`) is never retried; others get the host's best
// effort. The JavaScript twin of policies/no-retry-for-robots (Rust).
import { clientContext } from "rebound:policy/failure@0.6.0";

let robotKey = "isRobotRequest";

export const strategy = {
  configure(params) {
    for (const [name, value] of params) {
      if (name === "key") robotKey = value;
    }
  },
  retryAfter(_reason) {
    // An absent key is undefined on SpiderMonkey and null on QuickJS: `!= null` means present.
    if (clientContext(robotKey) != null) return { tag: "no-retry" };
    return { tag: "best-effort" };
  },
};
