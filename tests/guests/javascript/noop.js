// Test guest: the bare export in JavaScript. Answers a constant retry (1 ms, same node) without
// reading the request or the reason, so the languages benchmark measures what the call itself
// costs: lifting the reason into a JavaScript value and lowering the answer.
const RETRY = { tag: "retry", val: { delayMs: 1, node: "same", consistency: null, attemptTimeoutMs: null } };

export const strategy = {
  configure(_params) {},
  retryAfter(_reason) {
    return RETRY;
  },
};
