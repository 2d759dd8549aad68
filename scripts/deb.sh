#!/usr/bin/env bash
# Builds numalab's Debian packages from its self-contained binaries (scripts/dist.sh):
#
#   scripts/deb.sh [--target x86_64|aarch64|all] [--out DIR] [--binary FILE]
#
#   dist/numalab_<version>-1_amd64.deb   dist/numalab_<version>-1_arm64.deb   (+ .sha256)
#
# Each package holds the binary (/usr/bin/numalab, no Depends: it needs no shared library),
# the man page and the bash, zsh and fish completions (written by that binary's own
# `numalab generate`, under qemu-aarch64 for the foreign target, so they match it), the
# README, and in /usr/share/doc/numalab the machine-readable `copyright` with the licence of
# everything inside: numalab's, the vendor data compiled in (Intel perfmon, Arm), the C
# libraries linked in (glibc, hwloc) and every Rust crate the binary is made of
# (`licenses/`, their licence files as the crates ship them).
#
# --binary FILE packages FILE (one --target) instead of building it with scripts/dist.sh:
# CI packages the aarch64 release build its Arm NUMA guests ran.
#
# Every package is checked before it is kept: installed into an empty dpkg root
# (`dpkg --root`, the foreign architecture added to that root only), its binary run from
# there (`--version`), its man page rendered with groff's warnings as errors, its bash
# completion parsed, then removed again with nothing left behind. By hand, Debian's
# `lintian dist/numalab_*.deb` (not in the test suite: 147 packages to install) reports no
# error and no warning (2026-12-06; its two deliberate tags overridden in the package: one
# static file, no bug closed; at "info" level it notes the crates' licence files kept
# beside copyright and spellings inside dependencies' strings).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=all
out=dist
binary=
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    *) echo "usage: $0 [--target x86_64|aarch64|all] [--out DIR] [--binary FILE]" >&2; exit 2 ;;
  esac
done
case "$targets" in
  x86_64|aarch64) ;;
  all) targets="x86_64 aarch64" ;;
  *) echo "deb: --target $targets: use x86_64, aarch64 or all" >&2; exit 2 ;;
esac
if [ -n "$binary" ] && [ "$targets" != x86_64 ] && [ "$targets" != aarch64 ]; then
  echo "deb: --binary packages one file: name its --target (x86_64 or aarch64)" >&2
  exit 2
fi
if [ -n "$binary" ] && [ ! -f "$binary" ]; then
  echo "deb: --binary $binary: no such file (build it first: scripts/cross-aarch64.sh build, or scripts/dist.sh)" >&2
  exit 2
fi
for tool in dpkg-deb dpkg gzip groff readelf python3; do
  command -v "$tool" >/dev/null || { echo "deb: $tool is missing (apt-get install dpkg-dev groff-base binutils python3)" >&2; exit 1; }
done
version=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="numalab"))')
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/numalab-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The Rust crates linked into the binary for TRIPLE (normal dependencies of the numalab
# package, no build or dev ones), one "name version license source-folder" line each.
crates_of() { # TRIPLE
  cargo metadata --locked --format-version 1 --filter-platform "$1" | python3 -c '
import json, sys, os
m = json.load(sys.stdin)
pk = {p["id"]: p for p in m["packages"]}
nodes = {n["id"]: n for n in m["resolve"]["nodes"]}
root = next(p["id"] for p in m["packages"] if p["name"] == "numalab" and p["source"] is None)
seen, todo = set(), [root]
while todo:
    i = todo.pop()
    if i in seen:
        continue
    seen.add(i)
    for d in nodes[i]["deps"]:
        if any(k["kind"] is None for k in d["dep_kinds"]):
            todo.append(d["pkg"])
for i in sorted(seen, key=lambda i: (pk[i]["name"], pk[i]["version"])):
    p = pk[i]
    print(p["name"], p["version"], (p.get("license") or "see-its-files").replace(" ", "_"),
          os.path.dirname(p["manifest_path"]))
'
}

# /usr/share/doc/numalab/copyright (Debian's machine-readable format) and licenses/.
write_copyright() { # TRIPLE DOCDIR
  local triple="$1" doc="$2" libc hwloc dpkg_arch
  dpkg_arch=$3
  mkdir -p "$doc/licenses/crates"
  cp LICENSE-MIT LICENSE-APACHE "$doc/licenses/"
  cp crates/pmu/data/x86/intel/LICENSE "$doc/licenses/intel-perfmon-BSD-3-Clause"
  cp crates/pmu/data/arm/telemetry/LICENSE.md "$doc/licenses/arm-telemetry-solution.md"
  cp crates/pmu/data/arm/pmu/LICENSE "$doc/licenses/arm-data"
  libc=$(dpkg-query -W -f='${Version}' "libc6-dev:$dpkg_arch" 2>/dev/null || echo unknown)
  hwloc=$(dpkg-query -W -f='${Version}' "libhwloc-dev:$dpkg_arch" 2>/dev/null || echo unknown)
  for f in libc6 libhwloc-dev; do
    if [ -f "/usr/share/doc/$f/copyright" ]; then cp "/usr/share/doc/$f/copyright" "$doc/licenses/debian-$f-copyright"; fi
  done
  {
    cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: numalab
Source: https://example.invalid/numalab
Comment: numalab is one statically linked file. Besides numalab's own code it contains
 the vendor data files below (compiled in), the C libraries glibc and hwloc linked in from
 Debian (libc6-dev $libc, libhwloc-dev $hwloc: their Debian copyright files are in
 licenses/debian-*-copyright; numalab's source, which rebuilds and relinks this file, is
 public under the licence below), and the Rust crates listed in licenses/crates/LIST with
 their licence files.

Files: *
Copyright: 2026 The numalab developers
License: MIT or Apache-2.0

Files: crates/pmu/data/x86/intel/*
Copyright: 2021 Intel Corporation
License: BSD-3-Clause
Comment: a subset of intel/perfmon's event and metric files; text in
 licenses/intel-perfmon-BSD-3-Clause.

Files: crates/pmu/data/arm/*
Copyright: Arm Ltd.
License: Apache-2.0
Comment: Arm's telemetry-solution and ARM-software/data files, unmodified.

License: MIT
EOF
    sed -e 's/^$/./' -e 's/^/ /' LICENSE-MIT
    cat <<EOF

License: Apache-2.0
 On Debian systems the full text of the Apache License, Version 2.0 is in
 /usr/share/common-licenses/Apache-2.0 (and in licenses/LICENSE-APACHE).

License: BSD-3-Clause
EOF
    sed -e 's/^$/./' -e 's/^/ /' crates/pmu/data/x86/intel/LICENSE
  } >"$doc/copyright"
  # Every crate linked in: its name, version and licence, and its licence files.
  local name ver lic dir f n=0
  : >"$doc/licenses/crates/LIST"
  while read -r name ver lic dir; do
    echo "$name $ver ${lic//_/ }" >>"$doc/licenses/crates/LIST"
    case "$dir" in "$PWD"/*) continue ;; esac # our own crates: LICENSE-MIT/-APACHE above
    for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/NOTICE*; do
      [ -f "$f" ] || continue
      mkdir -p "$doc/licenses/crates/$name-$ver"
      cp "$f" "$doc/licenses/crates/$name-$ver/"
      n=$((n + 1))
    done
  done < <(crates_of "$triple")
  echo "deb: $(wc -l <"$doc/licenses/crates/LIST") crates linked in, $n licence files" >&2
}

# Builds and checks one package.
package() { # ARCH
  local arch="$1" triple="$1-unknown-linux-gnu" dpkg_arch run=() bin stage deb
  case "$arch" in x86_64) dpkg_arch=amd64 ;; aarch64) dpkg_arch=arm64 ;; esac
  if [ "$arch" != "$(uname -m)" ]; then
    command -v qemu-aarch64 >/dev/null || scripts/deps.sh --arm
    run=("$(command -v qemu-aarch64)" -cpu max)
  fi
  if [ -n "$binary" ]; then
    bin="$binary"
  else
    scripts/dist.sh --target "$arch" --out "$out"
    bin="$out/numalab-$version-$arch-linux"
  fi
  if readelf -d "$bin" | grep -q '(NEEDED)' || readelf -l "$bin" | grep -q 'program interpreter'; then
    echo "deb: $bin is not self-contained (readelf -d shows shared libraries): package the output of scripts/dist.sh" >&2
    return 1
  fi
  stage="$work/$dpkg_arch"
  rm -rf "$stage"
  mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/share/man/man1" "$stage/usr/share/doc/numalab" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d"
  local strip_tool=strip
  [ "$arch" = aarch64 ] && strip_tool=aarch64-linux-gnu-strip
  # Stripped as Debian's policy asks (dh_strip's options): the package is not for reading
  # backtraces (dist.sh's file keeps the function names for that).
  "$strip_tool" --strip-unneeded --remove-section=.comment --remove-section=.note \
    -o "$stage/usr/bin/numalab" "$bin"
  chmod 0755 "$stage/usr/bin/numalab"
  local exe=("${run[@]}" "$stage/usr/bin/numalab")
  "${exe[@]}" generate man | gzip -9n >"$stage/usr/share/man/man1/numalab.1.gz"
  "${exe[@]}" generate bash >"$stage/usr/share/bash-completion/completions/numalab"
  "${exe[@]}" generate zsh >"$stage/usr/share/zsh/vendor-completions/_numalab"
  "${exe[@]}" generate fish >"$stage/usr/share/fish/vendor_completions.d/numalab.fish"
  gzip -9n <README.md >"$stage/usr/share/doc/numalab/README.md.gz"
  printf 'numalab (%s-1) unstable; urgency=medium\n\n  * Built from commit %s by scripts/deb.sh.\n\n -- The numalab developers <numalab@example.invalid>  %s\n' \
    "$version" "$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" "$(date -R -u)" |
    gzip -9n >"$stage/usr/share/doc/numalab/changelog.Debian.gz"
  write_copyright "$triple" "$stage/usr/share/doc/numalab" "$dpkg_arch"
  # lintian (run by hand: `lintian dist/numalab_*.deb`) knows these two as deliberate.
  mkdir -p "$stage/usr/share/lintian/overrides"
  cat >"$stage/usr/share/lintian/overrides/numalab" <<'EOF'
# One self-contained file is the point: it runs on servers without hwloc or libudev.
numalab: statically-linked-binary [usr/bin/numalab]
# Not an upload to Debian's archive: no bug to close.
numalab: initial-upload-closes-no-bugs [usr/share/doc/numalab/changelog.Debian.gz:1]
EOF
  find "$stage/usr" -type d -exec chmod 0755 {} +
  find "$stage/usr" -type f ! -path '*/usr/bin/*' -exec chmod 0644 {} +
  local built_using=() src
  for p in libc6-dev libhwloc-dev; do
    src=$(dpkg-query -W -f='${source:Package} (= ${source:Version})' "$p:$dpkg_arch" 2>/dev/null) && built_using+=("$src")
  done
  {
    echo "Package: numalab"
    echo "Version: $version-1"
    echo "Architecture: $dpkg_arch"
    echo "Maintainer: The numalab developers <numalab@example.invalid>"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
    if [ ${#built_using[@]} -gt 0 ]; then
      (IFS=,; echo "Built-Using: ${built_using[*]}" | sed 's/,/, /g')
    fi
    echo "Section: utils"
    echo "Priority: optional"
    echo "Homepage: https://example.invalid/numalab"
    echo "Description: measure, explain, model and tune NUMA many-core machines"
    echo " numalab measures topology, memory bandwidth and latency per NUMA node pair,"
    echo " core-to-core latency, page migration and the scaling of your own program;"
    echo " turns PMU counters into explanations; models machines you do not have; and"
    echo " writes versioned JSON bundles and a self-contained HTML report."
    echo " ."
    echo " One statically linked file: it needs no shared library (hwloc is linked in)."
  } >"$stage/DEBIAN/control"
  (cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
  deb="$out/numalab_${version}-1_${dpkg_arch}.deb"
  dpkg-deb --root-owner-group -Zxz -z3 --build "$stage" "$deb" >/dev/null
  check_deb "$deb" "$dpkg_arch" "${run[@]}"
  (cd "$out" && sha256sum "$(basename "$deb")" >"$(basename "$deb").sha256")
  echo "deb: $deb ($(du -h "$deb" | cut -f1)), sha256 $(cut -c1-16 "$deb.sha256")..."
}

# Installs DEB into an empty dpkg root, runs and reads what it installed, removes it.
check_deb() { # DEB DPKG_ARCH [RUNNER...]
  local deb="$1" dpkg_arch="$2"; shift 2
  local root="$work/root-$dpkg_arch" n
  rm -rf "$root"
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
  : >"$root/var/lib/dpkg/status"
  : >"$root/var/lib/dpkg/available"
  if [ "$dpkg_arch" != "$(dpkg --print-architecture)" ]; then
    dpkg --root="$root" --add-architecture "$dpkg_arch"
  fi
  dpkg --root="$root" --force-script-chrootless --force-not-root --log=/dev/null -i "$deb" >/dev/null
  dpkg --root="$root" -s numalab | grep -q '^Status: install ok installed' ||
    { echo "deb: $deb did not install into an empty root" >&2; return 1; }
  local said
  said=$("$@" "$root/usr/bin/numalab" --version) && [[ "$said" == numalab* ]] ||
    { echo "deb: the installed /usr/bin/numalab of $deb does not run" >&2; return 1; }
  local warn
  warn=$(zcat "$root/usr/share/man/man1/numalab.1.gz" | groff -man -Tutf8 -ww -z 2>&1) || true
  if [ -n "$warn" ]; then
    echo "deb: the man page of $deb has groff warnings:" >&2
    echo "$warn" | head -20 >&2
    return 1
  fi
  bash -n "$root/usr/share/bash-completion/completions/numalab" ||
    { echo "deb: the bash completion of $deb does not parse" >&2; return 1; }
  dpkg --root="$root" --force-script-chrootless --force-not-root --log=/dev/null -r numalab >/dev/null
  n=0
  if [ -d "$root/usr" ]; then n=$(find "$root/usr" -type f | wc -l); fi
  [ "$n" = 0 ] || { echo "deb: removing $deb left $n files behind" >&2; return 1; }
  echo "deb: $(basename "$deb") installs into an empty root, runs, its man page renders, and it removes cleanly" >&2
}

for arch in $targets; do
  package "$arch"
done
