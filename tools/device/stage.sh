#!/usr/bin/env bash
# Copies the executables of a build for sm_90 (build/sm90, or the directory given: the release
# preset builds sm_90 too) and the shared libraries they need (libtiff, TBB, ...) into stage/
# (git-ignored), for the GPU machine, which lacks those libraries. There:
#   export LD_LIBRARY_PATH=$PWD/stage/lib:/usr/local/cuda/lib64
# With --python it also packs stage/python.tar.xz: the Python module of the build with this
# machine's Python 3.11, NumPy, the parts of SciPy the tests import, and pytest (the GPU machine's
# Python is another version, which cannot load the module). There, tools/device/device_check.sh
# module unpacks it and runs tests/python.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=0
if [ "${1:-}" = "--python" ]; then python=1; shift; fi
build=${1:-build/sm90}
if [ ! -x "$build/oocconv" ]; then
  echo "stage.sh: no $build/oocconv: build for sm_90 first (cmake --preset release &&" \
       "cmake --build build/release) and name that folder" >&2
  exit 2
fi
if [ "$python" = 1 ] && ! compgen -G "$build/python/ooc/_core*.so" > /dev/null; then
  echo "stage.sh: no Python module in $build/python/ooc: configure with pybind11-dev installed" >&2
  exit 2
fi
rm -rf stage && mkdir -p stage/bin
for f in oocconv oocgen ooccheck oocinfo ooceq oocatax oocrun ooclabel tests/unit/test_unit tests/gpu/test_gpu tests/cli/test_cli \
         tests/cli/test_ooccheck tools/bench/ooc_gpu_stages tools/bench/ooc_gpu_ops_peers; do
  [ -f "$build/$f" ] && cp "$build/$f" stage/bin/
done
# The shared libraries the binaries need, less what the GPU machine has: the C/C++ runtime, the
# CUDA driver and toolkit libraries (in /usr/local/cuda/lib64 there; cuBLAS alone is 500 MB) and
# OpenMPI (4.1.6 there, ABI-compatible with Debian's 4.1.4: use its mpirun).
mkdir -p stage/lib
for bin in stage/bin/*; do
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      libcuda.so*|libcublas*|libcufft*|libcurand*|libcusparse*|libcusolver*|libnpp*|libnvrtc*|libnvJitLink*|libcudart.so*) ;;
      libmpi*|libopen-pal*|libopen-rte*|libpmix*|libhwloc*|libevent*|libfabric*|libucp*|libucs*|libuct*) ;;
      *) cp -Lu "$lib" stage/lib/ ;;
    esac
  done
done
strip stage/bin/* 2>/dev/null || true
if [ "$python" = 1 ]; then
  py=$(mktemp -d)
  trap 'rm -rf "$py"' EXIT
  dist=/usr/lib/python3/dist-packages
  mkdir -p "$py/bin" "$py/lib" "$py/site/scipy"
  cp /usr/bin/python3.11 "$py/bin/"
  tar -C /usr/lib -cf - --exclude=test --exclude=tests --exclude=idlelib --exclude=tkinter \
    --exclude=turtledemo --exclude=ensurepip --exclude=lib2to3 --exclude=__pycache__ \
    --exclude='config-3.11-*' python3.11 | tar -C "$py/lib" -xf -
  tar -C "$dist" -cf - --exclude=tests --exclude=__pycache__ numpy _pytest pytest pluggy attr tifffile \
    iniconfig packaging py py.py | tar -C "$py/site" -xf -
  tar -C "$dist/scipy" -cf - --exclude=tests --exclude=__pycache__ __init__.py __config__.py \
    _distributor_init.py version.py _lib linalg ndimage sparse special |
    tar -C "$py/site/scipy" -xf -
  cp -r "$build/python/ooc" "$py/site/"
  find "$py/site/ooc" -name __pycache__ -prune -exec rm -rf {} +
  # Libraries the extension modules need that are not in stage/lib or on an Ubuntu machine.
  find "$py" -name '*.so' -exec ldd {} + 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
    while read -r lib; do
      case "$(basename "$lib")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
        libresolv.so*|libmvec.so*|libutil.so*|libanl.so*) ;;  # parts of glibc: the machine's own
        *) [ -e "stage/lib/$(basename "$lib")" ] || cp -Lu "$lib" "$py/lib/" ;;
      esac
    done
  tar -C "$py" -cJf stage/python.tar.xz .
  du -h stage/python.tar.xz
fi
du -sh stage
