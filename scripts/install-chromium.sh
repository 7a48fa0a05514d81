#!/usr/bin/env bash
# The browser the UI tests drive (Playwright with Debian's chromium: `playwright install` would download a
# browser at run time, which this project never does). Installs it with apt when missing and we are root.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests (apt-get install chromium)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null \
    || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }
else
  echo "note: the browser tests need chromium: sudo apt-get install -y --no-install-recommends chromium" >&2
fi
