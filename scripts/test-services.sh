#!/usr/bin/env bash
# Installs (idempotently) the servers the end-to-end tests start themselves on loopback:
# memcached (Debian's package) for the example client's tests (examples/memcached),
# docker-registry (Debian's OCI distribution registry) for pushing and pulling policies
# (cli/tests/oci.rs), a headless Chromium (Debian's chromium-headless-shell) that loads a page
# of another site against `rebound serve` (cli/tests/serve.rs), podman with runc and
# debootstrap, which build and run the container image (cli/tests/container.rs), and systemd's
# `systemd-analyze`, which checks the example unit (cli/tests/deploy.rs), and moto's
# AWS-compatible server from PyPI, in .tools/moto, which the AWS SDK client talks to
# (adapters/aws/tests/dynamodb.rs), and the gRPC project's Envoy API packages (grpcio and
# xds-protos from PyPI, in .tools/xds), on which tests/xds/management_server.py serves ADS to
# the xDS source (cli/tests/xds_source.rs). The tests start and stop their own instances;
# nothing is left running.
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
[ -x /usr/bin/memcached ] || missing+=(memcached)
[ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
# The signing keys of the signed-policy tests.
[ -x /usr/bin/openssl ] || missing+=(openssl)
[ -x /usr/bin/chromium-headless-shell ] || missing+=(chromium-headless-shell)
[ -x /usr/bin/podman ] || missing+=(podman)
[ -x /usr/sbin/runc ] || missing+=(runc)
[ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
[ -x /usr/bin/systemd-analyze ] || missing+=(systemd)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "test services: installing Debian's ${missing[*]}" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's package may start a system-wide memcached on 11211; the tests use ports of their own.
echo "test services: $(/usr/bin/memcached -V)" >&2
echo "test services: $(/usr/bin/docker-registry --version)" >&2
echo "test services: $(/usr/bin/chromium-headless-shell --version 2>/dev/null | head -1)" >&2
echo "test services: $(/usr/bin/podman --version), $(/usr/sbin/runc --version | head -1)" >&2
# moto's server, pinned, in a virtual environment of its own (its Python packages stay out of
# the guest toolchains' environment).
MOTO_VERSION=5.2.1
moto="$(cd "$(dirname "$0")/.." && pwd)/.tools/moto"
if ! "$moto/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
  echo "test services: installing moto[server,dynamodb] $MOTO_VERSION into .tools/moto" >&2
  rm -rf "$moto"
  python3 -m venv "$moto"
  "$moto/bin/pip" install --quiet "moto[server,dynamodb]==$MOTO_VERSION"
fi
echo "test services: moto $("$moto/bin/python" -c 'import moto; print(moto.__version__)')" >&2
# An xDS management server's packages, pinned, in a virtual environment of their own.
XDS_PROTOS_VERSION=1.85.0
GRPCIO_VERSION=1.85.1
xds="$(cd "$(dirname "$0")/.." && pwd)/.tools/xds"
if ! "$xds/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('xds-protos') != '$XDS_PROTOS_VERSION' or m.version('grpcio') != '$GRPCIO_VERSION')" 2>/dev/null; then
  echo "test services: installing grpcio $GRPCIO_VERSION and xds-protos $XDS_PROTOS_VERSION into .tools/xds" >&2
  rm -rf "$xds"
  python3 -m venv "$xds"
  "$xds/bin/pip" install --quiet "grpcio==$GRPCIO_VERSION" "xds-protos==$XDS_PROTOS_VERSION"
fi
echo "test services: grpcio $("$xds/bin/python" -c 'import grpc; print(grpc.__version__)'), xds-protos $XDS_PROTOS_VERSION" >&2
