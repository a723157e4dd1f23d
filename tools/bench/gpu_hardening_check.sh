#!/usr/bin/env bash
# On the GPU machine, after tools/bench/stage.sh: every test suite, the hostile suite (the CUDA
# backend is what --device auto picks there), and the GPU against the CPU on the cases the
# hardening touched (32-bit integer output, a radius far beyond the image, a TIFF of big strips).
# Writes its log to $OUT/hardening.log when OUT is set.
set -u
export LD_LIBRARY_PATH=$PWD/stage/lib:/usr/local/cuda/lib64 OOC_BIN_DIR=$PWD/stage/bin
B=stage/bin T=$(mktemp -d)
log=${OUT:-$T}/hardening.log
{
  nvidia-smi -L
  for s in test_gpu test_unit test_cli test_ooccheck; do
    echo "== $s"; "$B/$s" --gtest_brief=1 2>&1 | tail -4
  done
  echo "== hostile_check.py"
  python3 tests/cli/hostile_check.py --bin-dir "$B" 2>&1 | tail -25
  echo "== GPU against CPU"
  python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]
rng = np.random.default_rng(5)
rng.uniform(1e7, 3e7, (3001, 4099)).astype(np.float32).tofile(t + "/big.raw")
rng.uniform(-1, 1, (50, 100)).astype(np.float32).tofile(t + "/tiny.raw")
PY
  for c in "big.raw --width 4099 --radius 3 --out-type i32" "tiny.raw --width 100 --radius 10000" \
           "tiny.raw --width 100 --sigma 700 --out-type u16"; do
    set -- $c
    in=$1; shift
    for d in cuda cpu; do "$B/oocconv" "$T/$in" "$T/$d.raw" "$@" --device $d -q || echo "rc=$? ($d)"; done
    ot=f32; case "$c" in *i32*) ot=i32;; *u16*) ot=u16;; esac
    echo "-- $c: GPU vs CPU"; "$B/ooccheck" --compare "$T/cuda.raw" "$T/cpu.raw" --width "$2" --type $ot | tail -1
    echo "-- $c: GPU vs float64 reference"; "$B/ooccheck" "$T/cuda.raw" "$T/$in" "$@" | tail -2
  done
} 2>&1 | tee "$log"
rm -rf "$T"
