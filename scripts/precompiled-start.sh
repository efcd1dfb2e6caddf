#!/usr/bin/env bash
# How long a new host takes to answer its first decision with a Python policy from an OCI
# registry: compiling the component, against installing the compiled layer `rebound push
# --precompile` added (docs/performance.md "Precompiled components"). Each run starts with an
# empty artifact cache, as a new host does; the registry is Debian's docker-registry on
# loopback (./scripts/test-services.sh installs it).
#
# Usage: scripts/precompiled-start.sh [COMPONENT.wasm] [RUNS]
#   default: build/guests/python_best_effort.wasm (./scripts/build-guests.sh python), 3 runs,
#   with the release binary (cargo build --release -p rebound-cli).
set -euo pipefail
cd "$(dirname "$0")/.."
component=${1:-build/guests/python_best_effort.wasm}
runs=${2:-3}
rebound=${REBOUND:-target/release/rebound}
for needed in "$component" "$rebound" /usr/bin/docker-registry; do
  [ -e "$needed" ] || { echo "precompiled-start.sh: $needed is missing" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'kill "$registry" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/data
http:
  addr: 127.0.0.1:$port
EOF
/usr/bin/docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
registry=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.1; done

reference=127.0.0.1:$port/policies/measured:1
pushed=$("$rebound" push "$component" "$reference" --precompile 2>/dev/null)
pin=$(sed -n 's/^pin it: *//p' <<<"$pushed")
sha256=$(sed 's/.*sha256 = "\([0-9a-f]*\)".*/\1/' <<<"$pin")
precompiled=$(sed 's/.*precompiled = "\([0-9a-f]*\)".*/\1/' <<<"$pin")

# The configuration of a new host: the component pinned, with or without its compiled layer.
host() {
  local name=$1 component=$2
  cat >"$work/$name.toml" <<EOF
default_policy = "p"
cache_dir = "$work/cache-$name"
[watch]
enabled = false
[policies.p]
component = $component
EOF
}
host compiled "{ oci = \"$reference\", sha256 = \"$sha256\" }"
host precompiled "{ oci = \"$reference\", sha256 = \"$sha256\", precompiled = \"$precompiled\" }"

printf '%s (%s bytes), %s runs each, empty artifact cache each run\n' \
  "$component" "$(stat -c %s "$component")" "$runs"
grep '^  compiled' <<<"$pushed"
printf '%-12s %s\n' "host" "seconds to the first decision"
for name in compiled precompiled; do
  times=()
  for _ in $(seq "$runs"); do
    rm -rf "$work/cache-$name"
    started=$EPOCHREALTIME
    echo '{"reason": "KV_LOCKED"}' | "$rebound" eval --config "$work/$name.toml" >/dev/null
    times+=("$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')")
  done
  printf '%-12s %s\n' "$name" "${times[*]}"
done
