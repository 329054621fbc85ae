#!/usr/bin/env bash
# Installs the real peers the tests run against (Debian packages), when one is missing and this
# runs as root with apt-get. Elsewhere it only says what is missing; the peer tests then fail
# naming the package (test/helpers/peers.ts). Never starts a system service.
#
# syslog-ng: Debian's syslog-ng-core conflicts with rsyslog (both are the system logger), so it is
# not installed but unpacked (apt-get download + dpkg -x) into a private prefix, and run from there
# by the tests in the foreground with LD_LIBRARY_PATH (test/helpers/syslog-ng.ts); its runtime
# libraries are ordinary packages and install normally.
set -uo pipefail
declare -A need=([rsyslogd]=rsyslog [logger]=bsdutils [chromium]=chromium [nats-server]=nats-server [tmux]=tmux [promtool]=prometheus [prometheus]=prometheus [python3]=python3)
SYSLOG_NG_PREFIX=${LOGRELAY_SYSLOG_NG_PREFIX:-/opt/logrelay-peers/syslog-ng}
SYSLOG_NG_LIBS=(libivykis0 libjson-c5 libnet1 libpcre3 libwrap0 libglib2.0-0 libcap2 libssl3 libsystemd0)
missing=()
for bin in "${!need[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || missing+=("${need[$bin]}")
done
if command -v dpkg-query >/dev/null 2>&1; then
  for lib in "${SYSLOG_NG_LIBS[@]}"; do
    dpkg-query -W -f='${Status}' "$lib" 2>/dev/null | grep -q 'install ok installed' || missing+=("$lib")
  done
fi
unpack_syslog_ng=0
[ -x "$SYSLOG_NG_PREFIX/usr/sbin/syslog-ng" ] || unpack_syslog_ng=1
[ ${#missing[@]} -eq 0 ] && [ $unpack_syslog_ng -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || exit 1
  rc=0
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing test peers: ${missing[*]}" >&2
    # policy-rc.d 101: packages must not start their daemons (the tests run their own, on loopback)
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    rc=$?
    rm -f /usr/sbin/policy-rc.d
  fi
  if [ $unpack_syslog_ng -eq 1 ]; then
    echo "unpacking syslog-ng-core into $SYSLOG_NG_PREFIX" >&2
    work=$(mktemp -d)
    chown _apt "$work" 2>/dev/null || true # apt-get download fetches as the _apt user
    if (cd "$work" && apt-get download -qq syslog-ng-core) && mkdir -p "$SYSLOG_NG_PREFIX" && dpkg -x "$work"/syslog-ng-core_*.deb "$SYSLOG_NG_PREFIX"; then
      :
    else
      echo "could not unpack syslog-ng-core into $SYSLOG_NG_PREFIX" >&2
      rc=1
    fi
    rm -rf "$work"
  fi
  exit $rc
fi
[ ${#missing[@]} -gt 0 ] && echo "test peers missing (install them: apt-get install ${missing[*]}); their tests will fail" >&2
[ $unpack_syslog_ng -eq 1 ] && echo "syslog-ng-core is not unpacked in $SYSLOG_NG_PREFIX (run test/install-peers.sh as root); the syslog-ng tests will fail" >&2
exit 0
