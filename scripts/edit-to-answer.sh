#!/usr/bin/env bash
# Measures, per policy language, the time from a saved edit to the new answer in a running
# `rebound serve`: a project made by `rebound new`, built, served with the watch on (20 ms
# debounce), then its template edited (max_attempts 3 -> 1), rebuilt by `rebound build`, and
# `POST /v1/decide` asked until the new version answers. Prints one line per language: the
# whole time and its build part (the rest is the host noticing, compiling and swapping).
#
# Usage: scripts/edit-to-answer.sh [debug|release] [LANGUAGE...]
#   debug (default) or release: which build of the `rebound` binary runs (cargo builds it).
#   LANGUAGE: rust python quickjs spidermonkey typescript c cpp go zig (default: all).
# Needs the toolchains scripts/build-guests.sh installs; `rebound build` finds them there.
# Figures: docs/performance.md "Edit to answer".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
profile="${1:-debug}"
shift || true
case "$profile" in
  debug) cargo build -q -p rebound-cli; rebound="$root/target/debug/rebound" ;;
  release) cargo build -q --release -p rebound-cli; rebound="$root/target/release/rebound" ;;
  *) echo "edit-to-answer.sh: the first argument is debug or release, not $profile" >&2; exit 2 ;;
esac
languages=("$@")
[ ${#languages[@]} -gt 0 ] || languages=(rust python quickjs spidermonkey typescript c cpp go zig)
# A Rust project shares the tree's guest target directory: std is built once, as it is for an
# author after a first build.
export CARGO_TARGET_DIR="$root/build/guest-target"

now_ms() { date +%s%3N; }

# language -> "new arguments|source|from|to"
edit_of() {
  case "$1" in
    # This checkout's guest SDK: the crate registry's is `rebound new`'s default.
    rust) echo "rust --sdk $root/guest-sdk|src/lib.rs|params.parse_or(\"max_attempts\", 3)|params.parse_or(\"max_attempts\", 1)" ;;
    python) echo "python|policy.py|dict(params).get(\"max_attempts\", \"3\")|dict(params).get(\"max_attempts\", \"1\")" ;;
    quickjs) echo "javascript|policy.js|let maxAttempts = 3;|let maxAttempts = 1;" ;;
    spidermonkey) echo "javascript --engine spidermonkey|policy.js|let maxAttempts = 3;|let maxAttempts = 1;" ;;
    typescript) echo "typescript|policy.ts|let maxAttempts = 3;|let maxAttempts = 1;" ;;
    c | cpp) echo "$1|policy.$1|static uint32_t max_attempts = 3;|static uint32_t max_attempts = 1;" ;;
    go) echo "go|policy.go|var maxAttempts uint32 = 3|var maxAttempts uint32 = 1" ;;
    zig) echo "zig|policy.zig|var max_attempts: u32 = 3;|var max_attempts: u32 = 1;" ;;
    *) echo "edit-to-answer.sh: unknown language $1" >&2; exit 2 ;;
  esac
}

version_of() { # url -> the version deciding
  curl -s -X POST "$1/v1/decide" -H 'content-type: application/json' \
    -d '{"request": {"type": "get", "retry_attempts": 2}, "reason": "SERVICE_NOT_AVAILABLE"}' |
    sed -n 's/.*"version":"\([^"]*\)".*/\1/p'
}

port=18400
for language in "${languages[@]}"; do
  IFS='|' read -r new source from to <<<"$(edit_of "$language")"
  scratch="$(mktemp -d)"
  name="edit-$language"
  # shellcheck disable=SC2086
  "$rebound" new $new "$name" "$scratch/$name" >/dev/null
  dir="$scratch/$name"
  (cd "$dir" && "$rebound" build >/dev/null)
  printf 'default_policy = "p"\npolicy_dir = "."\n[watch]\nenabled = true\ndebounce_ms = 20\n[policies.p]\ncomponent = "%s.wasm"\n' \
    "$name" >"$dir/rebound.toml"
  port=$((port + 1))
  url="http://127.0.0.1:$port"
  XDG_CACHE_HOME="$scratch/cache" "$rebound" serve "$dir/rebound.toml" --listen "127.0.0.1:$port" \
    >"$scratch/serve.log" 2>&1 &
  server=$!
  first=""
  for _ in $(seq 1 600); do
    first="$(version_of "$url" || true)"
    [ -n "$first" ] && break
    sleep 0.1
  done
  [ -n "$first" ] || { echo "$language: the server did not answer"; cat "$scratch/serve.log"; exit 1; }
  text="$(cat "$dir/$source")"
  [ "${text/"$from"/}" != "$text" ] || { echo "$language: $source has no \`$from\`"; exit 1; }
  started=$(now_ms)
  printf '%s\n' "${text/"$from"/"$to"}" >"$dir/$source"
  (cd "$dir" && "$rebound" build >/dev/null)
  built=$(now_ms)
  while [ "$(version_of "$url" || true)" = "$first" ]; do
    sleep 0.01
    if [ $(( $(now_ms) - started )) -gt 600000 ]; then
      echo "$language: no new version after 10 minutes"; cat "$scratch/serve.log"; exit 1
    fi
  done
  answered=$(now_ms)
  kill "$server"; wait "$server" 2>/dev/null || true
  printf '%-13s %s host: %6.1f s from the saved edit to the new answer (build %5.1f s, then %5.1f s)\n' \
    "$language" "$profile" "$(echo "($answered - $started) / 1000" | bc -l)" \
    "$(echo "($built - $started) / 1000" | bc -l)" "$(echo "($answered - $built) / 1000" | bc -l)"
  rm -rf "$scratch"
done
