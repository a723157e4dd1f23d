#!/usr/bin/env bash
# On the GPU machine, after tools/bench/stage.sh: every test suite (the CUDA backend is what
# --device auto picks there), compute-sanitizer memcheck of the 2-D convolution and equalization
# kernels, their throughput from the generator to null: against the 16-core CPU backend, then
# the python suites (slowest last: each GPU run pays the CUDA start-up).
# Writes its log to $OUT/gpu_ops.log when OUT is set.
set -u
export LD_LIBRARY_PATH=$PWD/stage/lib:/usr/local/cuda/lib64 OOC_BIN_DIR=$PWD/stage/bin
B=stage/bin T=$(mktemp -d)
log=${OUT:-$T}/gpu_ops.log
{
  nvidia-smi -L
  for s in test_gpu test_unit test_cli test_ooccheck; do
    echo "== $s"; "$B/$s" --gtest_brief=1 2>&1 | tail -4
  done
  echo "== compute-sanitizer memcheck"
  /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 "$B/test_gpu" \
    --gtest_filter='GpuConv2d.*:GpuEqualize.*' --gtest_brief=1 2>&1 | tail -4
  echo "== throughput, 32768 x 16384 synth:noise to null:, --stats json (s total, s setup)"
  python3 - "$T" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(1)
for k in (3, 7, 15, 31):
    m = rng.uniform(-1, 1, (k, k)); np.savetxt(f"{sys.argv[1]}/k{k}.txt", m / np.abs(m).sum())
PY
  run() { "$B/$1" "${@:2}" --stats json -q | python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.3f %.3f %s" % (j["seconds"]["total"], j["seconds"]["setup"], j["backend"]))'; }
  for t in f32 u8; do
    for k in 3 7 15 31; do
      for d in cuda cpu; do
        echo -n "$t K$k $d: "; run oocconv synth:noise null: --width 32768 --height 16384 --type $t --kernel "$T/k$k.txt" --device $d
      done
    done
  done
  for t in u8 u16; do
    for d in cuda cpu; do
      echo -n "equalize $t $d: "; run ooceq synth:gaussian-spots null: --width 32768 --height 16384 --type $t --device $d
    done
  done
  for py in hostile_check ops_check; do
    echo "== $py.py"; python3 tests/cli/$py.py --bin-dir "$B" 2>&1 | tail -12
  done
} 2>&1 | tee "$log"
rm -rf "$T"
