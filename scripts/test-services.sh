#!/usr/bin/env bash
# Installs (idempotently) the servers the end-to-end tests start themselves on loopback:
# memcached (Debian's package) for the example client's tests (examples/memcached). The tests
# start and stop their own instances; nothing is left running.
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! [ -x /usr/bin/memcached ]; then
  echo "test services: installing Debian's memcached" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends memcached >/dev/null
fi
# Debian's package may start a system-wide memcached on 11211; the tests use ports of their own.
echo "test services: $(/usr/bin/memcached -V)" >&2
