#!/usr/bin/env bash
# On the GPU machine (best: device kind nvidia-h200-x2), after tools/bench/stage.sh: the issue-11
# measurements and the issue-9 kernel peers, in one call.
#  1. ooc_gpu_ops_peers: the 2-D convolution and equalization kernels against NPP on one band.
#  3. MPI, one rank per GPU, against one rank: a 32 GiB synthetic image to null:, and a file of
#     GIB GiB (page cache) to null: and to a file; medians of 3 (GB = 1e9 bytes).
#  4. A resume: SIGTERM mid-run on the file, --resume, cmp against an uninterrupted run.
#  5. parts_check.py on the GPU (the --device cuda parts, MPI ranks on the GPU).
#  2. (last: the slowest) test_gpu, and compute-sanitizer memcheck of the new kernels.
# Writes its log to $OUT/gpu_parts.log when OUT is set. Usage: gpu_parts_check.sh [GIB]
set -u
export LD_LIBRARY_PATH=$PWD/stage/lib:/usr/local/cuda/lib64 OOC_BIN_DIR=$PWD/stage/bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
B=$PWD/stage/bin GIB=${1:-8}
T=${TMPDIR_BIG:-/root}/ooc-parts.$$
mkdir -p "$T"
log=${OUT:-$T}/gpu_parts.log
json() { python3 -c 'import json,sys; j=json.load(sys.stdin); m=j.get("mpi"); s=m["seconds"] if m else j["seconds"]["total"]; b=m["bytes_read"] if m else j["input"]["bytes"]; print("%.3f s %.2f GB/s" % (s, b/s/1e9))'; }
{
  nvidia-smi -L; nproc; free -g | head -2; df -h "$T" | tail -1
  GPUS=$(nvidia-smi -L | wc -l)
  echo "== 1. kernels against NPP (one band in device memory, medians of 10)"
  "$B/ooc_gpu_ops_peers" --width 16384 --rows 1024 --repeats 10
  echo "== 3. MPI ranks, one per GPU ($GPUS GPUs), radius 16"
  W=65536 H32=$((32 * 1024 * 1024 * 1024 / 4 / 65536)) HF=$((GIB * 1024 * 1024 * 1024 / 4 / 65536))
  for n in 1 $GPUS; do
    for rep in 1 2 3; do
      echo -n "synth 32 GiB -> null:, $n rank(s), run $rep: "
      mpirun --bind-to none -np $n "$B/oocconv" synth:noise null: --width $W --height $H32 --radius 16 --stats json -q | json
    done
  done
  "$B/oocgen" "$T/in.raw" --width $W --height $HF --type f32 -q
  cat "$T/in.raw" > /dev/null
  TIMEFORMAT="%R s"
  for rep in 1 2 3; do echo -n "cat $GIB GiB (page cache) > /dev/null, run $rep: "; { time cat "$T/in.raw" > /dev/null; } 2>&1; done
  for n in 1 $GPUS; do
    for rep in 1 2 3; do
      echo -n "file $GIB GiB -> null:, $n rank(s), run $rep: "
      mpirun --bind-to none -np $n "$B/oocconv" "$T/in.raw" null: --width $W --radius 16 --stats json -q | json
    done
  done
  echo -n "cp $GIB GiB: "; { time cp "$T/in.raw" "$T/cp.raw"; } 2>&1; rm -f "$T/cp.raw"
  for n in 1 $GPUS; do
    echo -n "file -> file, $n rank(s): "
    rm -f "$T/o$n.raw"
    mpirun --bind-to none -np $n "$B/oocconv" "$T/in.raw" "$T/o$n.raw" --width $W --radius 16 --stats json -q | json
  done
  cmp "$T/o1.raw" "$T/o$GPUS.raw" && echo "cmp 1 rank vs $GPUS ranks: identical"
  rm -f "$T/o$GPUS.raw"
  echo "== 4. resume after SIGTERM mid-run ($GPUS ranks)"
  mpirun --bind-to none -np $GPUS "$B/oocconv" "$T/in.raw" "$T/r.raw" --width $W --radius 16 --progress-log=1 &
  P=$!; sleep 3; kill -TERM $P; wait $P; echo "exit after SIGTERM: $?"
  ls -la "$T" | grep r.raw; cat "$T"/r.raw.partial.*journal 2>/dev/null | grep -E "part|done"
  mpirun --bind-to none -np $GPUS "$B/oocconv" "$T/in.raw" "$T/r.raw" --width $W --radius 16 --resume --stats json -q | json
  cmp "$T/o1.raw" "$T/r.raw" && echo "cmp uninterrupted vs stopped+resumed: identical"
  rm -f "$T"/*.raw
  echo "== 5. parts_check.py"
  python3 tests/cli/parts_check.py --bin-dir "$B" 2>&1 | tail -6
  echo "== 2. test_gpu"; "$B/test_gpu" --gtest_brief=1 2>&1 | tail -3
  echo "== memcheck"
  /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 "$B/test_gpu" \
    --gtest_filter='GpuConv2d.*:GpuEqualize.*' --gtest_brief=1 2>&1 | tail -3
} 2>&1 | tee "$log"
rm -rf "$T"
