#!/usr/bin/env bash
# Sets up (packages), builds (Release) and runs the whole test suite. CI runs exactly this.
# GPU tests skip with a reason where no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
preset=${OOC_PRESET:-release}
cmake --preset "$preset" -DOOC_BUILD_TESTS=ON
cmake --build --preset "$preset"
ctest --preset "$preset" -j 2 --timeout 1500
