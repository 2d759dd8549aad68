#!/usr/bin/env bash
# Installs the Debian packages numalab needs, if missing.
#   scripts/deps.sh          what building and running numalab needs
#   scripts/deps.sh --test   plus what the test suite needs (the x86 and Arm guests too)
#   scripts/deps.sh --arm    what cross building for aarch64 needs (scripts/cross-aarch64.sh)
# As root it uses apt-get directly; otherwise sudo if available, else it prints the
# command for an administrator.
set -euo pipefail

pkgs=(libhwloc-dev libudev-dev pkg-config)
arm=()
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--arm" ]; then
  # Cross building for aarch64 (scripts/cross-aarch64.sh): Debian's cross linker and the
  # arm64 builds of the C libraries numalab links, side by side with the amd64 ones;
  # qemu-user runs the cross-built unit tests.
  arm+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross libhwloc-dev:arm64 libudev-dev:arm64 qemu-user)
fi
if [ "${1:-}" = "--test" ]; then
  # The emulated Arm server (docs/numa-guest.md): qemu-system-aarch64. Its kernel and
  # busybox are arm64 packages fetched with `apt-get download` by the guest driver.
  pkgs+=(qemu-system-arm)
  # Keep in sync with README ("What the tests need").
  # The NUMA test guest (docs/numa-guest.md): QEMU, Debian's kernel, busybox, cpio, xz.
  pkgs+=(qemu-system-x86 linux-image-amd64 busybox-static cpio xz-utils)
  # The HTML report in a real browser (crates/cli/tests/cli/browser.rs).
  pkgs+=(chromium)
  # BMC power (crates/bmc/tests): OpenIPMI's simulator on loopback, ipmitool as its
  # client, openssl for the Redfish TLS test's self-signed certificate.
  pkgs+=(openipmi ipmitool openssl)
  # numalab fleet (crates/fleet/tests): a real Slurm cluster on this machine
  # (scripts/slurm-cluster.sh) and Open MPI's mpirun.
  pkgs+=(slurm-wlm munge openmpi-bin)
  # hwloc's own tools read the exported memory attributes (crates/topo/tests/memattrs.rs).
  pkgs+=(hwloc)
  # The Debian package check (scripts/deb.sh): dpkg-deb builds it, groff renders its man
  # page with warnings as errors.
  pkgs+=(dpkg-dev groff-base)
fi

missing=()
if [ ${#arm[@]} -gt 0 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  need_arch=1
else
  need_arch=0
fi
for p in "${pkgs[@]}" "${arm[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && [ "$need_arch" = 0 ] && exit 0

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
if [ "$need_arch" = 1 ]; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
