#!/usr/bin/env bash
# Copies the executables of a build for sm_90 (build/sm90, or the directory given: the release
# preset builds sm_90 too) and the shared libraries they need (libtiff, TBB, ...) into stage/
# (git-ignored), for the GPU machine, which lacks those libraries.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/sm90}
rm -rf stage && mkdir -p stage/bin
for f in oocconv oocgen ooccheck oocinfo ooceq oocatax tests/unit/test_unit tests/gpu/test_gpu tests/cli/test_cli \
         tests/cli/test_ooccheck tools/bench/ooc_gpu_stages tools/bench/ooc_gpu_ops_peers; do
  [ -f "$build/$f" ] && cp "$build/$f" stage/bin/
done
../shared/tools/bundle-libs.sh stage/lib stage/bin/*
strip stage/bin/* 2>/dev/null || true
du -sh stage
