#!/usr/bin/env bash
# The C++ build's Debian packages for a device machine that has no network
# (its image holds cmake, ninja, g++, nanobind and scikit-build-core, but not
# the -dev packages of scripts/setup).
#   bash bench/gpu/build_deps.sh fetch     # here: downloads the .debs into .gpu-deps/ (git-ignored, ~8 MB)
#   source bench/gpu/build_deps.sh         # there (bench/gpu_check does it when .gpu-deps/ is present):
#                                          # unpacks them and points CMake, pkg-config and the loader at them
# Call the device tool with carry [".gpu-deps"].
DEPS_DIR=${GPU_DEPS_DIR:-$PWD/.gpu-deps}
DEPS_PACKAGES="libfmt-dev libfmt9 nlohmann-json3-dev libcli11-dev libeigen3-dev libsqlite3-dev libsqlite3-0 \
libssl-dev libssl3 pkgconf pkgconf-bin libpkgconf3"

if [[ ${1:-} == fetch ]]; then
  set -euo pipefail
  mkdir -p "$DEPS_DIR"
  (cd "$DEPS_DIR" && apt-get download $DEPS_PACKAGES)
  ls -la "$DEPS_DIR"
  exit 0
fi

# Sourced: unpack (dpkg -x, never into /) and export the search paths.
D=$DEPS_DIR/root
mkdir -p "$D/rt"
for f in "$DEPS_DIR"/*.deb; do dpkg -x "$f" "$D"; done
# Only what the built libraries and pkg-config load at run time; the rest of
# the system's libraries (libcrypto, libsqlite3) stay the machine's own.
cp -a "$D"/usr/lib/x86_64-linux-gnu/libfmt.so.9* "$D"/usr/lib/x86_64-linux-gnu/libpkgconf.so.3* "$D/rt/"
export CMAKE_PREFIX_PATH=$D/usr
export PKG_CONFIG_PATH=$D/usr/lib/x86_64-linux-gnu/pkgconfig:$D/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$D
export OPENSSL_ROOT_DIR=$D/usr
export LD_LIBRARY_PATH=$D/rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
command -v pkg-config > /dev/null || export PATH=$D/usr/bin:$PATH
# Plain g++ builds (bench/gpu/nvml_check) find the headers and libraries too.
export CPATH=$D/usr/include${CPATH:+:$CPATH}
export LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
