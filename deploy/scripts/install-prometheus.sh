#!/usr/bin/env bash
# Installs Debian's Prometheus (2.42, with promtool) for `make test-deploy`
# (promtool: the alert rules) and `make test-viewers` when prometheus or
# promtool is not on PATH; a no-op when both are. The tests run their own prometheus process (own config, own TSDB
# directory, 127.0.0.1 only), so the package's service is neither wanted nor
# started: policy-rc.d refuses service starts during the install, and without
# systemd as PID 1 nothing would start it later.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "prometheus is not installed; as root: apt-get install prometheus" >&2
  exit 1
fi

policy=/usr/sbin/policy-rc.d
created_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  created_policy=1
fi
trap 'if [ -n "$created_policy" ]; then rm -f "$policy"; fi' EXIT

export DEBIAN_FRONTEND=noninteractive
# Wait for another apt run (a second install on the machine) instead of failing.
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus >/dev/null
prometheus --version | head -1
