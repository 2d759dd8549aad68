#!/usr/bin/env bash
# Installs the Debian packages numalab needs, if missing.
#   scripts/deps.sh          what building and running numalab needs
#   scripts/deps.sh --test   plus what the test suite needs
# As root it uses apt-get directly; otherwise sudo if available, else it prints the
# command for an administrator.
set -euo pipefail

pkgs=(libhwloc-dev libudev-dev pkg-config)
if [ "${1:-}" = "--test" ]; then
  # Keep in sync with README ("What the tests need").
  # The NUMA test guest (docs/numa-guest.md): QEMU, Debian's kernel, busybox, cpio, xz.
  pkgs+=(qemu-system-x86 linux-image-amd64 busybox-static cpio xz-utils)
  # The HTML report in a real browser (crates/cli/tests/cli/browser.rs).
  pkgs+=(chromium)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "numalab: installing missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "numalab: not root and no sudo; ask an administrator to run:" >&2
  echo "  apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
