#!/usr/bin/env bash
# promtool checks the shipped Prometheus alert rules (`promtool check rules`, `promtool test rules`) in the tests.
# It comes with Debian's prometheus package (installed, not started). Installs it with apt when missing and root.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's prometheus for promtool (apt-get install prometheus; the service is not started)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends prometheus >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends prometheus >/dev/null; }
else
  echo "note: the alert-rule tests need promtool: sudo apt-get install -y --no-install-recommends prometheus" >&2
fi
