#!/usr/bin/env bash
# Measures `rebound serve` following an xDS control plane that sends a flood of versions at
# once (docs/performance.md "xDS"): tests/xds/management_server.py sends N versions (default
# 10 000) of a route configuration without waiting for their answers; the server's ACK count
# and resident memory are sampled every half second until the last version serves.
# Usage: scripts/xds-flood.sh [N]   (needs scripts/test-services.sh and a release build)
set -euo pipefail
n="${1:-10000}"
root="$(cd "$(dirname "$0")/.." && pwd)"
rebound="$root/target/release/rebound"
[ -x "$rebound" ] || { echo "xds-flood: build it first: cargo build --release -p rebound-cli" >&2; exit 1; }
python="$root/.tools/xds/bin/python"
[ -x "$python" ] || { echo "xds-flood: run scripts/test-services.sh first" >&2; exit 1; }
dir="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
cat > "$dir/snapshot.json" <<JSON
{"version": "a", "flood": $n, "route_configurations": [{"name": "shop-routes", "virtual_hosts": [{"name": "shop", "domains": ["*"], "routes": [
  {"name": "inventory", "match": {"prefix": "/shop.Inventory/"}, "route": {"cluster": "inventory", "retry_policy": {"retry_on": "unavailable", "num_retries": 1}}}]}]}]}
JSON
"$python" "$root/tests/xds/management_server.py" "$dir/snapshot.json" "$dir/ads.jsonl" "$dir/port" &
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
cat > "$dir/rebound.toml" <<TOML
default_policy = "standard"
[policies.standard]
builtin = "fail-fast"
[source.xds]
server = "http://127.0.0.1:$(cat "$dir/port")"
node_id = "flood"
route_configurations = ["shop-routes"]
TOML
"$rebound" serve "$dir/rebound.toml" --listen 127.0.0.1:0 > "$dir/serve.out" 2> "$dir/serve.err" &
serve_pid=$!
for _ in $(seq 100); do grep -q listening "$dir/serve.out" 2>/dev/null && break; sleep 0.1; done
base="$(grep -o 'http://[0-9.:]*' "$dir/serve.out")"
start=$(date +%s.%N)
echo "| seconds | versions ACKed | resident MiB |"
echo "| ---: | ---: | ---: |"
while :; do
  acks="$(curl -s "$base/v1/policies" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["xds"]["acks"])')"
  rss="$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$serve_pid/status")"
  printf '| %.1f | %s | %s |\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$acks" "$rss"
  [ "$acks" -ge $((n + 1)) ] && break
  sleep 0.5
done
