// Test guest: the bare export in JavaScript. Answers a constant retry (1 ms, same node) without
// looking at its arguments, so the languages benchmark measures what the call itself costs:
// lifting the request and reason into JavaScript values and lowering the answer.
const RETRY = { tag: "retry", val: { delayMs: 1, node: "same", consistency: null } };

export const strategy = {
  configure(_params) {},
  retryAfter(_request, _reason) {
    return RETRY;
  },
};
