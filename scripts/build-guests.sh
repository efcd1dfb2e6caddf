#!/usr/bin/env bash
# Builds the tree's guests into build/guests/ with `rebound build`, the code path an author's
# project takes (docs/authoring.md):
#   rust        each crate of policies/ and tests/guests/        -> LIBRARY.wasm
#   python      policies/python/*.py, tests/guests/python/*.py   -> python_NAME.wasm
#   javascript  policies/javascript/*.js, tests/guests/javascript/*.js on SpiderMonkey
#                                                                -> javascript_NAME.wasm
#   quickjs     the same sources on QuickJS                      -> quickjs_NAME.wasm
#   typescript  policies/typescript/*.ts (tsc, then QuickJS)     -> typescript_NAME.wasm
#   c, cpp, zig  policies/{c,cpp,zig}/*.{c,cpp,zig}              -> LANGUAGE_NAME.wasm
#   go           policies/go/*.go, tests/guests/go/*.go          -> go_NAME.wasm
#   wat         tests/guests/wat/*.wat (wasm-tools parse; a core module with a NAME.wit/
#               world beside it: wasm-tools component embed, new) -> NAME.wasm
# plus the Extism plugin of tests/guests (a core module, built by cargo: extism_*.wasm).
#
# Usage: scripts/build-guests.sh [LANGUAGE | SOURCE]...
#   No argument builds everything. A LANGUAGE above builds that language only; a SOURCE (a file
#   above, or a Rust crate's directory) builds that policy only, e.g.
#   `scripts/build-guests.sh policies/c/best_effort.c policies/best-effort`.
# Installs only the toolchains the selection needs (guest-toolchain.sh, polyglot-toolchain.sh,
# both idempotent). Python, JavaScript and TypeScript components are rebuilt only when their
# source or the WIT changed; cargo and the C/Zig builds are quick to redo. Uses the `rebound` binary in
# $REBOUND, else builds it (cargo build -p rebound-cli).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/polyglot-toolchain.sh
out="$root/build/guests"
# Both Rust guest workspaces share one target directory, so std is built once.
export CARGO_TARGET_DIR="$root/build/guest-target"
mkdir -p "$out"

languages=()
sources=()
for arg in "$@"; do
  case "$arg" in
    rust | python | javascript | quickjs | typescript | c | cpp | go | zig | wat) languages+=("$arg") ;;
    *)
      [ -e "$arg" ] || { echo "build-guests.sh: $arg is neither a language (rust python javascript quickjs typescript c cpp go zig wat) nor a source" >&2; exit 2; }
      sources+=("$(realpath --relative-to="$root" "$arg")")
      ;;
  esac
done
if [ $# = 0 ]; then
  languages=(rust python javascript quickjs typescript c cpp go zig wat)
fi
wanted() { # language
  local l
  for l in "${languages[@]}"; do [ "$l" = "$1" ] && return 0; done
  return 1
}

# What each source is built as: "LANGUAGE SOURCE".
jobs=()
wanted rust && for manifest in policies/*/Cargo.toml tests/guests/*/Cargo.toml; do
  jobs+=("rust $(dirname "$manifest")")
done
for language in python javascript quickjs typescript c cpp go zig wat; do
  wanted "$language" || continue
  case "$language" in
    python) globs=(policies/python/*.py tests/guests/python/*.py) ;;
    javascript | quickjs) globs=(policies/javascript/*.js tests/guests/javascript/*.js) ;;
    typescript) globs=(policies/typescript/*.ts) ;;
    c) globs=(policies/c/*.c) ;;
    cpp) globs=(policies/cpp/*.cpp) ;;
    go) globs=(policies/go/*.go tests/guests/go/*.go) ;;
    zig) globs=(policies/zig/*.zig) ;;
    wat) globs=(tests/guests/wat/*.wat) ;;
  esac
  for source in "${globs[@]}"; do jobs+=("$language $source"); done
done
for source in "${sources[@]}"; do
  case "$source" in
    *.py) jobs+=("python $source") ;;
    *.js) jobs+=("javascript $source" "quickjs $source") ;;
    *.ts) jobs+=("typescript $source") ;;
    *.c) jobs+=("c $source") ;;
    *.cpp) jobs+=("cpp $source") ;;
    *.go) jobs+=("go $source") ;;
    *.zig) jobs+=("zig $source") ;;
    *.wat) jobs+=("wat $source") ;;
    *) [ -f "$source/Cargo.toml" ] || { echo "build-guests.sh: cannot tell how to build $source" >&2; exit 2; }
       jobs+=("rust $source") ;;
  esac
done

# The toolchains of the selection, and the binary.
needed=" "
for job in "${jobs[@]}"; do needed+="${job%% *} "; done
case "$needed" in *" rust "*) toolchain_wasm_tools; toolchain_rust ;; esac
case "$needed" in *" python "*) toolchain_python ;; esac
case "$needed" in *" javascript "* | *" quickjs "* | *" typescript "*) toolchain_javascript ;; esac
case "$needed" in *" c "*) toolchain_c ;; esac
case "$needed" in *" cpp "*) toolchain_cpp ;; esac
case "$needed" in *" go "*) toolchain_go ;; esac
case "$needed" in *" zig "*) toolchain_zig ;; esac
case "$needed" in *" wat "*) toolchain_wasm_tools ;; esac
export PATH="$root/.tools/bin:$PATH"
if [ -z "${REBOUND:-}" ]; then
  echo "building the rebound binary (cargo build -p rebound-cli)" >&2
  (unset CARGO_TARGET_DIR; cargo build --quiet --locked -p rebound-cli)
  REBOUND="$root/target/debug/rebound"
fi
REBOUND="$(realpath "$REBOUND")"

# Whether $1 is missing or older than any of the other files.
stale() {
  local out="$1" input
  shift
  [ -e "$out" ] || return 0
  for input in "$@"; do [ "$input" -nt "$out" ] && return 0; done
  return 1
}
wit_files=(wit/*.wit)
# `rebound build` run in build/guests/, so a Rust crate's component lands there by its name.
build() { # SOURCE [rebound build options]
  local source="$1"
  shift
  (cd "$out" && "$REBOUND" build "$root/$source" --wit "$root/wit" "$@" >/dev/null)
}

# Builds one "LANGUAGE SOURCE" job; returns 3 when its component is up to date. Called where
# `set -e` does not apply, so every step that can fail is chained.
build_job() {
  local language="${1%% *}" source="${1#* }" name product engine=()
  name="$(basename "$source")"
  name="${name%.*}"
  case "$language" in
    rust)
      if [[ "$name" == extism-* ]]; then
        # An Extism plugin is a core module with Extism's ABI, not a component
        # (benches/extism-compare compares the two).
        echo "building $source (Extism plugin, cargo)" >&2
        # shellcheck disable=SC2086
        (cd "$source" && $GUEST_CARGO build --release --quiet --target wasm32-unknown-unknown $GUEST_CARGO_FLAGS) &&
          cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/${name//-/_}.wasm" "$out/"
      else
        echo "building $source" >&2
        (cd "$out" && "$REBOUND" build "$root/$source" >/dev/null)
      fi
      ;;
    python | javascript | quickjs | typescript)
      product="$out/${language}_$name.wasm"
      stale "$product" "$source" "${wit_files[@]}" || return 3
      echo "building $source ($language)" >&2
      case "$language" in
        javascript) engine=(--engine spidermonkey) ;;
        quickjs | typescript) engine=(--engine quickjs) ;;
      esac
      build "$source" "${engine[@]}" -o "$product"
      ;;
    c | cpp | go | zig)
      echo "building $source" >&2
      build "$source" -o "$out/${language}_$name.wasm"
      ;;
    wat)
      if [ -d "${source%.wat}.wit" ]; then
        # A core module beside its world (NAME.wit/): embedded in it, then made a component.
        # `|| return 1`: a job runs where `set -e` does not stop it (`build_job … || rc=$?`).
        wasm-tools component embed "${source%.wat}.wit" "$source" -o "$out/$name.core.wasm" || return 1
        wasm-tools component new "$out/$name.core.wasm" -o "$out/$name.wasm" || return 1
        rm -f "$out/$name.core.wasm"
      else
        wasm-tools parse "$source" -o "$out/$name.wasm" || return 1
      fi
      ;;
  esac
}

# The Rust crates build one after another (cargo holds the shared target directory); the other
# sources build beside them, as many at a time as there are processors: most of their tools
# (componentize-py, the JavaScript engines' snapshots, wit-bindgen) run on one.
rust_jobs=()
other_jobs=()
for job in "${jobs[@]}"; do
  case "$job" in
    "rust "*) rust_jobs+=("$job") ;;
    *) other_jobs+=("$job") ;;
  esac
done
lanes="$(nproc)"
status_dir="$(mktemp -d)"
trap 'rm -rf "$status_dir"' EXIT
# Runs the jobs given one after another; writes how many it built, or "failed".
lane() { # STATUS-FILE JOB...
  local file="$1" job built=0 rc
  shift
  for job in "$@"; do
    rc=0
    build_job "$job" || rc=$?
    case "$rc" in
      0) built=$((built + 1)) ;;
      3) ;;
      *) echo "failed" >"$file"; echo "build-guests.sh: building $job failed" >&2; return 1 ;;
    esac
  done
  echo "$built" >"$file"
}
lane "$status_dir/rust" "${rust_jobs[@]}" &
for i in "${!other_jobs[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n || true; done
  lane "$status_dir/$i" "${other_jobs[i]}" &
done
wait
built=0
for file in "$status_dir"/*; do
  [ "$(cat "$file")" = failed ] && exit 1
  built=$((built + $(cat "$file")))
done

echo "guests built: $built of ${#jobs[@]} selected (the rest were up to date); $(ls "$out" | wc -l) components in build/guests/" >&2
