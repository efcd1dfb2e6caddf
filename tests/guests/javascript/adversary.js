// Test guest: misbehaves as the parameter `mode` says, so the host's sandbox can be checked on
// a JavaScript runtime. Never a policy to use.
let mode = "";
const hoard = [];

export const strategy = {
  configure(params) {
    for (const [name, value] of params) if (name === "mode") mode = value;
  },
  retryAfter(_reason) {
    if (mode === "infinite_loop") for (;;) {}
    if (mode === "memory_bomb") for (;;) hoard.push(new Array(1 << 20).fill(7));
    if (mode === "throw") throw new Error("policy bug");
    return { tag: "no-retry" };
  },
};
