#!/usr/bin/env bash
# On the GPU machine (device tool): GPU, unit and CLI test suites and compute-sanitizer, from the
# staged binaries in $STAGE (default stage/); logs go to $OUT. Prints one summary line per step.
set -u
S=${STAGE:-stage}
export LD_LIBRARY_PATH=$PWD/$S/lib OOC_BIN_DIR=$PWD/$S/bin
B=$S/bin
OUT=${OUT:-/tmp/ooc-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv | tee "$OUT/device.txt"
step() { local name=$1; shift; local t=$SECONDS; "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name rc=$rc $((SECONDS - t))s $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/$name.log" | tr '\n' ' ')"; }
step test_gpu $B/test_gpu
step test_unit $B/test_unit
step test_cli $B/test_cli
sub='*f32_c3_reflect*:*u8_c1_constant*:*f64_c2_wrap*:*u16_c4_mirror*:Gpu.LargeBand*'
step memcheck compute-sanitizer --tool memcheck --error-exitcode 9 $B/test_gpu --gtest_filter="$sub"
step racecheck compute-sanitizer --tool racecheck --error-exitcode 9 $B/test_gpu --gtest_filter='*f32_c3_reflect*:*i16_c2_nearest*'
step synccheck compute-sanitizer --tool synccheck --error-exitcode 9 $B/test_gpu --gtest_filter='*f32_c1_wrap*'
tail -3 "$OUT"/memcheck.log "$OUT"/racecheck.log
grep -E "FAILED|Failure" -A3 "$OUT"/test_*.log | head -40
