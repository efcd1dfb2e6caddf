#!/usr/bin/env bash
# What compiling and swapping large components costs in memory (docs/performance.md,
# "Compiling"): the peak resident memory and time of `rebound compile-component` (the child
# process `serve` compiles in) for each shipped Python and JavaScript component, then the
# resident memory of a `serve` swapping between them (no artifact cache: every swap compiles).
# Builds the release binary and the guests first.
# Usage: ./scripts/compile-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p rebound-cli
REBOUND=target/release/rebound ./scripts/build-guests.sh python javascript
rebound=$PWD/target/release/rebound
guests=(python_best_effort javascript_template python_template javascript_cassandra_default python_cassandra_default)

echo "compile in a child process: guest, size, seconds, peak resident memory"
for guest in "${guests[@]}"; do
    file=build/guests/$guest.wasm
    /usr/bin/time -f "$guest $(stat -c %s "$file") bytes %e s %M KiB" \
        "$rebound" compile-component --max-memory-bytes 67108864 --optimization none --instances 256 \
        <"$file" >/dev/null
done

dir=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$dir"' EXIT
cp "build/guests/${guests[0]}.wasm" "$dir/p.wasm"
printf 'default_policy = "p"\ncache_dir = false\n[watch]\nenabled = false\n[policies.p]\ncomponent = "p.wasm"\n' >"$dir/rebound.toml"
"$rebound" serve --listen 127.0.0.1:0 "$dir/rebound.toml" >"$dir/out" 2>"$dir/log" &
server=$!
for _ in $(seq 600); do grep -q listening "$dir/out" && break; sleep 0.1; done
url=$(sed -n 's/^rebound serve listening on //p' "$dir/out")
[ -n "$url" ] || { cat "$dir/log"; exit 1; }
resident() { awk '/VmRSS/ {print $2 " KiB"}' "/proc/$server/status"; }
echo "serve's resident memory, loaded with ${guests[0]}: $(resident)"
for guest in "${guests[@]:1}" "${guests[@]}"; do
    cp "build/guests/$guest.wasm" "$dir/p.wasm"
    curl -sf -X POST -H 'Content-Type: application/json' "$url/v1/policies/p/reload" >/dev/null
    echo "after swapping to $guest: $(resident)"
done
