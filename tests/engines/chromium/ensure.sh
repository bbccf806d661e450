#!/usr/bin/env bash
# Make sure Debian's Chromium is installed for the browser tests (tests/browser/).
#
# Idempotent: with the browser already there it only prints its path. Otherwise it installs
# the `chromium` package with apt-get (through sudo when not root), running `apt-get update`
# only when a first install fails (a fresh machine's package lists may be missing or stale).
#
# The browser: $REARVIEW_CHROMIUM if set, else /usr/bin/chromium (what the tests launch).
# Stdout: the browser's path (one line). Progress goes to stderr.
# REARVIEW_SKIP_BROWSER=1 skips the install (the browser tests then skip too).
set -euo pipefail

browser="${REARVIEW_CHROMIUM:-/usr/bin/chromium}"

if [[ "${REARVIEW_SKIP_BROWSER:-0}" == 1 ]]; then
  echo "ensure.sh: REARVIEW_SKIP_BROWSER=1: not installing Chromium (browser tests are skipped)" >&2
  exit 0
fi

if [[ -x "$browser" ]]; then
  echo "$browser"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure.sh: $browser is missing and apt-get is not available: install Chromium and set" \
    "REARVIEW_CHROMIUM to its path, or set REARVIEW_SKIP_BROWSER=1 to skip the browser tests" >&2
  exit 1
fi

sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "ensure.sh: installing Chromium needs root (no sudo here): run 'apt-get install -y chromium' as root" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi

install() {
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2
}

echo "ensure.sh: $browser is missing; installing Debian's chromium package" >&2
if ! install; then
  echo "ensure.sh: install failed; refreshing the package lists and retrying" >&2
  "${sudo_cmd[@]}" apt-get update >&2
  install
fi

if [[ ! -x "$browser" ]]; then
  echo "ensure.sh: the chromium package installed but $browser is still missing" >&2
  exit 1
fi
echo "$browser"
