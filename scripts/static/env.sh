# Sourced by scripts/cross-aarch64.sh (release builds) and scripts/dist.sh:
#   static_link_env TRIPLE
# makes the next `cargo build --target TRIPLE` link numalab as one static executable:
# glibc statically (-C target-feature=+crt-static, position-dependent: see
# crates/cli/build.rs), Debian's libhwloc.a (from
# libhwloc-dev, or libhwloc-dev:arm64 for aarch64) and, in place of libudev (Debian
# ships no static one), scripts/static/udev-none.c (see there why hwloc needs no udev).
# hwlocality-sys finds hwloc through pkg-config; pkg-config links static archives only
# from folders outside /usr, so target/static-deps/TRIPLE holds links to the archive, the
# compiled udev stand-in and a hwloc.pc naming them, and PKG_CONFIG_LIBDIR points there
# alone. Libraries, tests and host tools are not affected: the flags are the target's.
static_link_env() {
  local triple="$1" here cc ar arch ver dir
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  case "$triple" in
    x86_64-unknown-linux-gnu) cc=gcc; ar=ar; arch=x86_64-linux-gnu ;;
    aarch64-unknown-linux-gnu) cc=aarch64-linux-gnu-gcc; ar=aarch64-linux-gnu-ar; arch=aarch64-linux-gnu ;;
    *) echo "static build: no recipe for $triple (x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu)" >&2; return 2 ;;
  esac
  if [ ! -f "/usr/lib/$arch/libhwloc.a" ]; then
    echo "static build: /usr/lib/$arch/libhwloc.a is missing (install libhwloc-dev for $arch: scripts/deps.sh)" >&2
    return 1
  fi
  ver=$(PKG_CONFIG_LIBDIR="/usr/lib/$arch/pkgconfig" pkg-config --modversion hwloc)
  dir="${CARGO_TARGET_DIR:-$here/target}/static-deps/$triple"
  mkdir -p "$dir/lib" "$dir/pkgconfig"
  ln -sf "/usr/lib/$arch/libhwloc.a" "$dir/lib/libhwloc.a"
  if [ ! -f "$dir/lib/libudev.a" ] || [ "$here/scripts/static/udev-none.c" -nt "$dir/lib/libudev.a" ]; then
    "$cc" -O2 -fPIC -c "$here/scripts/static/udev-none.c" -o "$dir/lib/udev-none.o"
    rm -f "$dir/lib/libudev.a"
    "$ar" rcs "$dir/lib/libudev.a" "$dir/lib/udev-none.o"
  fi
  cat > "$dir/pkgconfig/hwloc.pc" <<PC
libdir=$dir/lib
includedir=/usr/include
Name: hwloc
Description: Debian's static hwloc $ver for numalab's self-contained binary
Version: $ver
Cflags: -I\${includedir}
Libs: -L\${libdir} -lhwloc
Libs.private: -lm -ludev -lpthread
PC
  local up
  up=$(echo "$triple" | tr 'a-z-' 'A-Z_')
  export PKG_CONFIG_ALLOW_CROSS=1
  export PKG_CONFIG_LIBDIR="$dir/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR=/
  export "CARGO_TARGET_${up}_RUSTFLAGS=-C target-feature=+crt-static -C relocation-model=static"
  export NUMALAB_BUILD_HWLOC="$ver"
}
