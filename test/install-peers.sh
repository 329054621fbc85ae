#!/usr/bin/env bash
# Installs the real peers the tests run against (Debian packages), when one is missing and this
# runs as root with apt-get. Elsewhere it only says what is missing; the peer tests then fail
# naming the package (test/helpers/peers.ts). Never starts a system service.
set -uo pipefail
declare -A need=([rsyslogd]=rsyslog [logger]=bsdutils [chromium]=chromium [nats-server]=nats-server [tmux]=tmux [promtool]=prometheus [prometheus]=prometheus)
missing=()
for bin in "${!need[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || missing+=("${need[$bin]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing test peers: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d 101: packages must not start their daemons (the tests run their own, on loopback)
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  rc=$?
  rm -f /usr/sbin/policy-rc.d
  exit $rc
fi
echo "test peers missing (install them: apt-get install ${missing[*]}); their tests will fail" >&2
exit 0
