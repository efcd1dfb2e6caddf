#!/usr/bin/env bash
# Installs (idempotently) what the workspace needs to compile besides Rust: OpenSSL's headers
# and pkg-config, for the Couchbase SDK that adapters/couchbase builds on (couchbase-core
# refuses to build without a TLS backend; its native-tls one links the system OpenSSL).
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! { command -v pkg-config >/dev/null && pkg-config --exists openssl; }; then
  echo "build deps: installing Debian's pkg-config and libssl-dev" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pkg-config libssl-dev >/dev/null
fi
echo "build deps: OpenSSL $(pkg-config --modversion openssl)" >&2
