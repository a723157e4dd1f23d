#!/usr/bin/env bash
# Copies the executables of a build for sm_90 (build/sm90, or the directory given: the release
# preset builds sm_90 too) and the shared libraries they need (libtiff, TBB, ...) into stage/
# (git-ignored), for the GPU machine, which lacks those libraries. There:
#   export LD_LIBRARY_PATH=$PWD/stage/lib:/usr/local/cuda/lib64
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/sm90}
rm -rf stage && mkdir -p stage/bin
for f in oocconv oocgen ooccheck oocinfo ooceq oocatax tests/unit/test_unit tests/gpu/test_gpu tests/cli/test_cli \
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
du -sh stage
