#!/usr/bin/env bash
# Sets up, builds, makes a 1 GiB sample image and filters it: what a newcomer runs first.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
cmake --preset release -DOOC_BUILD_TESTS=OFF >/dev/null
cmake --build --preset release
bin=build/release
dir=${OOC_SAMPLE_DIR:-${TMPDIR:-/tmp}/ooc-quickstart}
mkdir -p "$dir"
if [ ! -f "$dir/sample.raw" ]; then
  echo "quickstart: writing a 16384 x 16384 f32 sample image (1 GiB) to $dir/sample.raw"
  # The identity filter (--taps 1) turns the synthetic input into a file.
  "$bin/oocconv" synth:gradient "$dir/sample.raw" --width 16384 --height 16384 --taps 1 -q
fi
echo "quickstart: oocconv $dir/sample.raw $dir/blurred.raw --width 16384 --radius 16"
"$bin/oocconv" "$dir/sample.raw" "$dir/blurred.raw" --width 16384 --radius 16 --stats text
