#!/usr/bin/env bash
# `rebound serve` throughput and latency on loopback (docs/performance.md, "Serve"): builds the
# release binary and the example policies, starts the server with examples/rebound.toml and
# drives it with wrk (Debian's package, installed if missing) for each body of benches/serve.lua.
# Usage: ./scripts/bench-serve.sh [SECONDS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
connections=${2:-32}

if ! command -v wrk >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y wrk || { $sudo apt-get update && $sudo apt-get install -y wrk; }
fi
cargo build --release --locked -p rebound-cli
REBOUND=target/release/rebound ./scripts/build-guests.sh

log=$(mktemp)
out=$(mktemp)
./target/release/rebound serve examples/rebound.toml --listen 127.0.0.1:0 >"$out" 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log" "$out"' EXIT
for _ in $(seq 100); do grep -q listening "$out" && break; sleep 0.1; done
url=$(sed -n 's/^rebound serve listening on //p' "$out")
[ -n "$url" ] || { cat "$log"; exit 1; }

echo "rebound serve on $url, $(nproc) cores shared with wrk; ${seconds}s per run, $connections connections, 2 wrk threads"
# A short warm-up, not reported: the first seconds after start are slower for whichever body
# comes first.
WRK_POLICY=mixed wrk -t2 -c"$connections" -d2s -s benches/serve.lua "$url" >/dev/null
for policy in builtin component robots mixed; do
    WRK_POLICY=$policy wrk -t2 -c"$connections" -d"${seconds}s" --latency -s benches/serve.lua "$url" \
        | sed "s/^/[$policy] /"
done
curl -s "$url/metrics" | grep -E '^rebound_decisions_total' || true
