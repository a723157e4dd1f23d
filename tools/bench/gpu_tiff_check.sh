#!/usr/bin/env bash
# On the GPU machine (issue 4), in one call: oocinfo's device listing; the test suites; TIFF inputs
# of every layout filtered on the GPU against the CPU result and the float64 reference (ooccheck);
# compute-sanitizer on a TIFF run; tiff_bench.sh on the GPU and on the CPU. Logs under $OUT.
set -u
export LD_LIBRARY_PATH=$PWD/stage/lib OOC_BIN_DIR=$PWD/stage/bin
B=stage/bin O=${OUT:-/tmp/ooc-out} T=/tmp/ooc-tiff
mkdir -p "$O" "$T"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$O/gpu.txt" 2>&1
$B/oocinfo > "$O/oocinfo.txt" 2>&1
for t in test_gpu test_unit test_cli test_ooccheck; do
  echo "== $t" >> "$O/tests.txt"
  $B/$t --gtest_brief=1 >> "$O/tests.txt" 2>&1
  echo "exit $?" >> "$O/tests.txt"
done
{
  for layout in "--compress none" "--compress none --tile 256" "--compress lzw --tile 256" \
                "--compress zstd" "--compress deflate --tile 512"; do
    echo "== layout: $layout"
    # shellcheck disable=SC2086
    $B/oocgen $T/in.tif --width 8191 --height 6007 --type u16 --channels 3 $layout -q
    $B/oocinfo $T/in.tif --device cuda | grep -E "layout|plan"
    # shellcheck disable=SC2086
    $B/oocconv $T/in.tif $T/g.tif --radius 16 --device cuda $layout -q --stats text |
      grep -E "backend|throughput"
    # shellcheck disable=SC2086
    $B/oocconv $T/in.tif $T/c.tif --radius 16 --device cpu $layout -q
    $B/ooccheck --compare $T/g.tif $T/c.tif --tolerance 1 | tail -1
    $B/ooccheck $T/g.tif $T/in.tif --radius 16 --sample 12 | tail -1
  done
  echo "== f32 separate planes? (oocgen writes chunky; the python suite covers planar on the CPU)"
  $B/oocgen $T/f.tif --width 5000 --height 3001 --type f32 --compress zstd --tile 128 -q
  $B/oocconv $T/f.tif $T/fg.npy --sigma 3 --device cuda -q && $B/ooccheck $T/fg.npy $T/f.tif --sigma 3 | tail -1
} > "$O/tiff_gpu.txt" 2>&1
/usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 \
  $B/oocconv $T/in.tif $T/s.tif --radius 5 --device cuda --compress lzw --tile 256 -q \
  > "$O/sanitizer.txt" 2>&1
echo "exit $?" >> "$O/sanitizer.txt"
for dev in cuda cpu; do
  tools/bench/tiff_bench.sh --bin $B --width 16384 --height 8192 --type u16 --device $dev \
    --repeats 3 --out "$O/bench-$dev" --dir /tmp/ooc-tiff-bench > "$O/tiff_bench_$dev.txt" 2>&1
done
rm -rf "$T"
