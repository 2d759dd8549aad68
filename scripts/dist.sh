#!/usr/bin/env bash
# Builds numalab's self-contained binaries: one file per target that runs on a Linux
# server with no hwloc, no libudev and no Rust (glibc and Debian's hwloc linked in; see
# scripts/static/env.sh), with a SHA-256 file beside each:
#
#   scripts/dist.sh [--target x86_64|aarch64|all] [--out DIR]
#
#   dist/numalab-<version>-x86_64-linux      dist/numalab-<version>-x86_64-linux.sha256
#   dist/numalab-<version>-aarch64-linux     dist/numalab-<version>-aarch64-linux.sha256
#
# Each file is checked before it is kept: `readelf -d` must show no NEEDED library and no
# program interpreter (a fully static executable), and it must run: `--version` and
# `topo --json`: natively from an empty environment inside an empty root folder (chroot,
# as root, with only /proc and /sys mounted: nothing of this machine's /usr is reachable,
# so a library it still needed would make it fail here), or under qemu-aarch64 for the
# foreign target.
# The oldest kernel it runs on is glibc's minimum for the target (readelf's ABI note,
# printed). Installs what is missing (scripts/deps.sh; --arm for aarch64).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=all
out=dist
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--target x86_64|aarch64|all] [--out DIR]" >&2; exit 2 ;;
  esac
done
case "$targets" in
  x86_64|aarch64) ;;
  all) targets="x86_64 aarch64" ;;
  *) echo "dist: --target $targets: use x86_64, aarch64 or all" >&2; exit 2 ;;
esac
# shellcheck source=scripts/static/env.sh
. scripts/static/env.sh
version=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="numalab"))')
mkdir -p "$out"

# Checks a static executable and runs it inside an empty root.
check() {
  local bin="$1" arch="$2" root
  if readelf -d "$bin" | grep -q '(NEEDED)'; then
    echo "dist: $bin needs shared libraries:" >&2
    readelf -d "$bin" | grep '(NEEDED)' >&2
    return 1
  fi
  if readelf -l "$bin" | grep -q 'program interpreter'; then
    echo "dist: $bin asks for a dynamic loader" >&2
    return 1
  fi
  readelf -n "$bin" | awk -v f="$(basename "$bin")" '/OS: Linux, ABI:/{print "dist: " f " runs on Linux " $NF " and later (glibc'"'"'s minimum)"}' 
  root=$(mktemp -d "${TMPDIR:-/tmp}/numalab-dist-root.XXXXXX")
  if [ "$arch" != "$(uname -m)" ]; then
    # A foreign file runs under qemu-aarch64 (user mode) from an empty environment;
    # readelf above already showed it asks for no library.
    env -i "$(command -v qemu-aarch64)" -cpu max "$bin" --version
    env -i "$(command -v qemu-aarch64)" -cpu max "$bin" topo --json >"$root/topo.json"
  elif [ "$(id -u)" = 0 ] && mkdir -p "$root/proc" "$root/sys" "$root/bin" &&
    mount -t proc proc "$root/proc" 2>/dev/null && mount --rbind /sys "$root/sys" 2>/dev/null; then
    cp "$bin" "$root/bin/numalab"
    local rc=0 chroot
    chroot=$(command -v chroot)
    { env -i "$chroot" "$root" /bin/numalab --version &&
      env -i "$chroot" "$root" /bin/numalab topo --json >"$root/topo.json"; } || rc=$?
    umount -R "$root/sys"; umount "$root/proc"
    [ "$rc" = 0 ] || { echo "dist: $bin failed inside an empty root (exit $rc)" >&2; return 1; }
  else
    echo "dist: not root (or no mount): $bin runs from an empty environment only, not an empty root" >&2
    env -i "$bin" --version
    env -i "$bin" topo --json >"$root/topo.json"
  fi
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d, "empty topology"' "$root/topo.json"
  rm -rf "$root"
}

for arch in $targets; do
  triple="$arch-unknown-linux-gnu"
  if [ "$arch" = aarch64 ]; then
    scripts/deps.sh --arm
    rustup target list --installed 2>/dev/null | grep -qx "$triple" || rustup target add "$triple"
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
  else
    scripts/deps.sh
  fi
  (
    static_link_env "$triple"
    cargo build --release --locked --target "$triple" -p numalab --bin numalab
  )
  name="numalab-$version-$arch-linux"
  # Debug line tables out (the release profile keeps them for backtraces: 166 MB with
  # them), function names kept.
  strip_tool=strip
  [ "$arch" = aarch64 ] && strip_tool=aarch64-linux-gnu-strip
  "$strip_tool" --strip-debug -o "$out/$name" "target/$triple/release/numalab"
  check "$out/$name" "$arch"
  (cd "$out" && sha256sum "$name" >"$name.sha256")
  echo "dist: $out/$name ($(du -h "$out/$name" | cut -f1)), sha256 $(cut -c1-16 "$out/$name.sha256")..."
done
