#!/usr/bin/env bash
# Cross builds (or lints) numalab for aarch64-unknown-linux-gnu on an x86-64 Debian host:
#   scripts/cross-aarch64.sh [build [-p CRATE...]]   release build (default: the workspace),
#                                                    self-contained (scripts/static/env.sh);
#                                                    NUMALAB_STATIC=0 for a dynamic one (the
#                                                    C library libnumalab_home.so needs it);
#                                                    NUMALAB_ARM_PROFILE=test for the test
#                                                    profile's build (what CI and the Arm guest
#                                                    use: see below)
#   scripts/cross-aarch64.sh clippy [-p CRATE...]    cargo clippy -D warnings for the target
#   scripts/cross-aarch64.sh test -p CRATE   unit tests, run under qemu-aarch64 (user mode),
#                                            linked self-contained like the binaries
#   scripts/cross-aarch64.sh CARGO-ARGS...   any other cargo command for the target
# Installs what is missing (scripts/deps.sh --arm: the arm64 architecture in dpkg,
# gcc-aarch64-linux-gnu, libhwloc-dev:arm64, libudev-dev:arm64, qemu-user, the rustup
# target). On an Arm host none of this is needed: plain `cargo build --release` there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --arm
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  rustup target add aarch64-unknown-linux-gnu
fi
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
# Tests run in user-mode emulation; -cpu max has SVE (vector length 512 bits by default
# here unless NUMALAB_QEMU_USER_CPU says otherwise).
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -cpu ${NUMALAB_QEMU_USER_CPU:-max}"
export PKG_CONFIG_ALLOW_CROSS=1
export PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=/
t=aarch64-unknown-linux-gnu
# Binaries and unit tests are linked self-contained (glibc and hwloc in: the Arm guests
# hold no libhwloc; scripts/dist.sh ships the same kind of build). Both with the same
# flags, so the test profile's dependencies compiled for the binaries (CI, the Arm guest)
# are the ones the unit tests under qemu-user link: one aarch64 compile, not two. A
# static build drops cdylib crate types (rustc warns), so home's C library is built with
# NUMALAB_STATIC=0.
static_env() {
  if [ "${NUMALAB_STATIC:-1}" != 0 ]; then
    # shellcheck source=scripts/static/env.sh
    . scripts/static/env.sh
    static_link_env "$t"
  fi
}
case "${1:-build}" in
  build)
    shift || true
    if [ $# -eq 0 ]; then set -- --workspace; fi
    static_env
    # The release profile by default (scripts/dist.sh's). NUMALAB_ARM_PROFILE=test: the
    # test profile (opt-level 1, debug assertions and overflow checks on, in
    # target/aarch64-unknown-linux-gnu/debug), what the x86 guest runs too.
    profile=${NUMALAB_ARM_PROFILE:-release}
    exec cargo build --profile "$profile" --locked --target "$t" "$@" ;;
  clippy)
    shift
    if [ $# -eq 0 ]; then set -- --workspace; fi
    exec cargo clippy --locked --target "$t" --all-targets "$@" -- -D warnings ;;
  test)
    shift
    static_env
    exec cargo test --locked --target "$t" "$@" ;;
  *) cmd="$1"; shift; exec cargo "$cmd" --locked --target "$t" "$@" ;;
esac
