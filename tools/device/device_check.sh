#!/usr/bin/env bash
# device_check.sh: the correctness checks of the GPU machine (not benchmarks: those are
# tools/bench/run). Run from anywhere after `bash tools/device/stage.sh build/release` staged
# ./stage (binaries in stage/bin, their libraries in stage/lib):
#
#   bash tools/device/device_check.sh [SECTION ...]    (default: every section, in this order)
#     device     nvidia-smi and oocinfo's device listing                       device.txt, oocinfo.txt
#     tests      every GoogleTest binary staged in stage/bin (test_*)          test_*.log
#     sanitizer  compute-sanitizer: memcheck of test_gpu sweeps (separable, 2-D, equalize, atax,
#                the specialized kernels), racecheck, synccheck, racecheck of the fused kernels on
#                aligned rows (u8, and f32's quad kernel; memcheck of it with a constant border),
#                and memcheck of one CUDA run of each operation (oocconv
#                separable on raw, oocconv --kernel, ooceq, oocatax, oocconv on a tiled LZW TIFF)
#     e2e        GPU against CPU end to end: .npy u16 x3, 32-bit integer output, a radius beyond the
#                image, --sigma 700, --kernel laplace/box:5, ooceq u16, TIFF of every layout (and
#                the float64 reference), --mem-limit and fixed-RSS runs                       e2e.log
#     parts      MPI ranks (one per GPU) on a PARTS_GIB (8) GiB file: 1 rank vs N ranks identical,
#                SIGTERM mid-run then --resume identical to an uninterrupted run (mpirun)  parts.log
#     python     tests/cli/test_{hostile_*,convolve_kernel,equalize,ooccheck_kernel_equalize,
#                cuda_convolve_equalize,parts_and_resume,atax}.py against the staged binaries
#                (slowest: every GPU run pays the CUDA start-up)                    <name>.log
#     pipeline   tests/cli/test_pipeline_*.py (oocrun pipelines, CUDA against the CPU bit for bit)
#                and compute-sanitizer memcheck/racecheck of oocrun chains on --device cuda
#                (every border, a reduction pass, multi-stage combinations)       *pipeline*.log
#     module     tests/python (the Python module, its GPU tests included) with the Python that
#                `stage.sh --python` packed into stage/python.tar.xz             pytest_module.log
# Logs go to $OUT (default /tmp/ooc-out); one summary line per step on stdout; exit 1 when any
# step failed. STAGE=dir picks another staging folder (default stage); PYTHON a python3 with NumPy.
set -u
cd "$(dirname "$0")/../.." || exit 2
S=${STAGE:-stage}
case $S in /*) B=$S/bin ;; *) B=$PWD/$S/bin ;; esac
OUT=${OUT:-/tmp/ooc-out}
if [ ! -x "$B/oocconv" ]; then
  echo "device_check: no $S/bin/oocconv: run 'bash tools/device/stage.sh build/release' first" >&2
  exit 2
fi
export LD_LIBRARY_PATH=$B/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The GPU checks compare the GPU's own results: no bands on the CPU while CUDA starts (the e2e
# section checks that mode on its own).
export OOC_BIN_DIR=$B NCCL_NVLS_ENABLE=0 OOC_CPU_START=off
PY=${PYTHON:-python3}  # with NumPy (the e2e inputs and the python section)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$OUT"
T=$(mktemp -d "${TMPDIR:-/tmp}/ooc-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "device_check: no GPU (nvidia-smi -L failed): the GPU checks would only skip" >&2
  exit 2
fi
failed=0

# step NAME CMD...: runs CMD with its output in $OUT/NAME.log; one summary line.
step() {
  local name=$1; shift
  local t=$SECONDS
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && failed=$((failed + 1))
  echo "$name: rc=$rc $((SECONDS - t))s $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |ERROR SUMMARY|^(OK|FAILED)( |$)' \
    "$OUT/$name.log" | tr -s ' ' | tr '\n' ' ')"
}

# check LABEL CMD...: inside the e2e/parts logs: prints the label and CMD's last line, counts failures.
check() {
  local label=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ $rc -ne 0 ] && failed=$((failed + 1))
  echo "-- $label: rc=$rc $(echo "$out" | tail -1)"
}

section_device() {
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
    --format=csv > "$OUT/device.txt" 2>&1
  "$B/oocinfo" > "$OUT/oocinfo.txt" 2>&1
  echo "NPP libraries in /usr/local/cuda/lib64: $(compgen -G '/usr/local/cuda/lib64/libnpp*' | wc -l)" >> "$OUT/device.txt"
  echo "device: $(nvidia-smi -L | wc -l) GPU(s), $(nproc) cores; $(tail -n +2 "$OUT/device.txt" | head -1)"
}

section_tests() {
  local t
  for t in "$B"/test_*; do
    [ -x "$t" ] && step "$(basename "$t")" "$t" --gtest_brief=1
  done
}

section_sanitizer() {
  local sweep='*f32_c3_reflect*:*u8_c1_constant*:*f64_c2_wrap*:*u16_c4_mirror*:Gpu.LargeBand*'
  step memcheck_test_gpu "$SAN" --tool memcheck --error-exitcode 9 "$B/test_gpu" \
    --gtest_filter="$sweep:GpuConv2d.*:GpuEqualize.*:GpuAtax*"
  step racecheck_test_gpu "$SAN" --tool racecheck --error-exitcode 9 "$B/test_gpu" \
    --gtest_filter='*f32_c3_reflect*:*i16_c2_nearest*'
  step synccheck_test_gpu "$SAN" --tool synccheck --error-exitcode 9 "$B/test_gpu" --gtest_filter='*f32_c1_wrap*'
  # The specialized kernels on every radius, border and geometry, 16-byte aligned rows included
  # (their tiles load in vectors).
  step memcheck_specialized "$SAN" --tool memcheck --error-exitcode 9 "$B/test_gpu" \
    --gtest_filter='Gpu.SpecializedKernelsBitIdenticalToGeneric'
  # One CUDA run of each operation through its tool.
  "$B/oocgen" "$T/s.raw" --width 4099 --height 3001 --type f32 -q
  "$B/oocgen" "$T/s16.raw" --width 4099 --height 3001 --type u16 --pattern gaussian-spots -q
  "$B/oocgen" "$T/s.tif" --width 8191 --height 6007 --type u16 --channels 3 --compress lzw --tile 256 -q
  "$B/oocgen" "$T/A.raw" --width 1031 --height 20011 --pattern low-rank -q
  step memcheck_separable "$SAN" --tool memcheck --error-exitcode 9 \
    "$B/oocconv" "$T/s.raw" "$T/o.raw" --width 4099 --radius 16 --device cuda -q
  "$B/oocgen" "$T/a.raw" --width 4096 --height 3001 --type u8 -q
  step racecheck_fused_aligned "$SAN" --tool racecheck --error-exitcode 9 \
    "$B/oocconv" "$T/a.raw" "$T/o.raw" --width 4096 --type u8 --radius 3 --device cuda -q
  # One-channel f32 on aligned rows: the quad kernel (cp.async into shared rows), its fallback
  # tiles at the row ends and, with the constant border, at the image's top and bottom.
  "$B/oocgen" "$T/f.raw" --width 4096 --height 3001 --type f32 -q
  step racecheck_fused_quad "$SAN" --tool racecheck --error-exitcode 9 \
    "$B/oocconv" "$T/f.raw" "$T/o.raw" --width 4096 --type f32 --radius 3 --device cuda -q
  step memcheck_fused_quad_constant "$SAN" --tool memcheck --error-exitcode 9 \
    "$B/oocconv" "$T/f.raw" "$T/o.raw" --width 4096 --type f32 --radius 8 --border constant \
    --device cuda -q
  step memcheck_conv2d "$SAN" --tool memcheck --error-exitcode 9 \
    "$B/oocconv" "$T/s.raw" "$T/o.raw" --width 4099 --kernel gaussian2d:2.5 --device cuda -q
  step memcheck_equalize "$SAN" --tool memcheck --error-exitcode 9 \
    "$B/ooceq" "$T/s16.raw" "$T/o.raw" --width 4099 --type u16 --device cuda -q
  step memcheck_atax "$SAN" --tool memcheck --error-exitcode 9 \
    "$B/oocatax" "$T/A.raw" --cols 1031 --x random --k 8 --out "$T/y.npy" --device cuda --no-progress
  step memcheck_tiff "$SAN" --tool memcheck --error-exitcode 9 \
    "$B/oocconv" "$T/s.tif" "$T/o.tif" --radius 5 --device cuda --compress lzw --tile 256 -q
  rm -f "$T"/*
}

e2e() {
  # .npy, u16 x 3 channels, radius 16: GPU equals CPU exactly.
  "$B/oocgen" "$T/a.npy" --width 4099 --height 3001 --type u16 --channels 3 -q
  "$B/oocconv" "$T/a.npy" "$T/g.npy" --radius 16 --device cuda -q
  "$B/oocconv" "$T/a.npy" "$T/c.npy" --radius 16 --device cpu -q
  check "npy u16 c3 r16: GPU vs CPU (tolerance 0)" "$B/ooccheck" --compare "$T/g.npy" "$T/c.npy" --tolerance 0
  # Bands on the CPU while CUDA starts (the first 3 of 12, then as many as the start takes): the
  # GPU's bytes.
  OOC_CPU_START=3 "$B/oocconv" "$T/a.npy" "$T/m.npy" --radius 16 --device cuda --band-rows 256 -q
  check "npy u16 c3 r16, 3 bands on the CPU: vs GPU (cmp)" cmp "$T/m.npy" "$T/g.npy"
  OOC_CPU_START=auto "$B/oocconv" "$T/a.npy" "$T/m.npy" --radius 16 --device cuda --band-rows 64 -q
  check "npy u16 c3 r16, --cpu-start auto: vs GPU (cmp)" cmp "$T/m.npy" "$T/g.npy"
  # The hardening cases: 32-bit integer output, a radius far beyond the image, a huge sigma.
  "$PY" - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]
rng = np.random.default_rng(5)
rng.uniform(1e7, 3e7, (3001, 4099)).astype(np.float32).tofile(t + "/big.raw")
rng.uniform(-1, 1, (50, 100)).astype(np.float32).tofile(t + "/tiny.raw")
PY
  local c in ot d
  for c in "big.raw --width 4099 --radius 3 --out-type i32" "tiny.raw --width 100 --radius 10000" \
           "tiny.raw --width 100 --sigma 700 --out-type u16"; do
    set -- $c
    in=$1; shift
    for d in cuda cpu; do "$B/oocconv" "$T/$in" "$T/$d.raw" "$@" --device $d -q || echo "rc=$? ($d)"; done
    ot=f32; case "$c" in *i32*) ot=i32;; *u16*) ot=u16;; esac
    check "$c: GPU vs CPU" "$B/ooccheck" --compare "$T/cuda.raw" "$T/cpu.raw" --width "$2" --type $ot
    check "$c: GPU vs float64 reference" "$B/ooccheck" "$T/cuda.raw" "$T/$in" "$@"
  done
  # 2-D kernels and equalization: GPU against CPU.
  "$B/oocgen" "$T/k.raw" --width 3001 --height 2001 --type f32 -q
  for c in laplace box:5; do
    for d in cuda cpu; do "$B/oocconv" "$T/k.raw" "$T/k$d.raw" --width 3001 --kernel $c --device $d -q; done
    check "--kernel $c: GPU vs CPU" "$B/ooccheck" --compare "$T/kcuda.raw" "$T/kcpu.raw" --width 3001
  done
  "$B/oocgen" "$T/e.raw" --width 3001 --height 2001 --type u16 --pattern gaussian-spots -q
  for d in cuda cpu; do "$B/ooceq" "$T/e.raw" "$T/e$d.raw" --width 3001 --type u16 --device $d -q; done
  check "ooceq u16: GPU vs CPU (cmp)" cmp "$T/ecuda.raw" "$T/ecpu.raw"
  # TIFF inputs of every layout on the GPU, against the CPU and the float64 reference.
  local layout
  for layout in "--compress none" "--compress none --tile 256" "--compress lzw --tile 256" \
                "--compress zstd" "--compress deflate --tile 512"; do
    # shellcheck disable=SC2086
    "$B/oocgen" "$T/in.tif" --width 8191 --height 6007 --type u16 --channels 3 $layout -q
    "$B/oocinfo" "$T/in.tif" --device cuda | grep -E "layout|plan"
    # shellcheck disable=SC2086
    "$B/oocconv" "$T/in.tif" "$T/g.tif" --radius 16 --device cuda $layout -q --stats text | grep -E "backend|throughput"
    # shellcheck disable=SC2086
    "$B/oocconv" "$T/in.tif" "$T/c.tif" --radius 16 --device cpu $layout -q
    check "TIFF $layout: GPU vs CPU" "$B/ooccheck" --compare "$T/g.tif" "$T/c.tif" --tolerance 1
    check "TIFF $layout: GPU vs float64 reference" "$B/ooccheck" "$T/g.tif" "$T/in.tif" --radius 16 --sample 12
  done
  "$B/oocgen" "$T/f.tif" --width 5000 --height 3001 --type f32 --compress zstd --tile 128 -q
  "$B/oocconv" "$T/f.tif" "$T/fg.npy" --sigma 3 --device cuda -q
  check "TIFF f32 zstd tiles 128 -> npy: GPU vs float64 reference" "$B/ooccheck" "$T/fg.npy" "$T/f.tif" --sigma 3
  # Memory: the CUDA path's fixed RSS and the ring within --mem-limit.
  "$B/oocconv" synth:noise null: --width 64 --height 64 --radius 1 --device cuda --stats json |
    grep -E "peak_rss|setup" | tr -s ' ' | tr '\n' ' '; echo " (CUDA fixed RSS)"
  local m rc
  for m in 64M 256M; do
    "$B/oocconv" synth:noise null: --width 65536 --height 40000 --radius 16 --mem-limit $m --device cuda \
      --stats json > "$T/m.json"
    rc=$?
    [ $rc -ne 0 ] && failed=$((failed + 1))
    echo "-- --mem-limit $m, 65536 x 40000 on the GPU: rc=$rc $("$PY" -c 'import json, sys
j = json.load(open(sys.argv[1])); p = j["plan"]
print("band_rows", p["band_rows"], "slots", p["slots"], "peak RSS MiB", j["peak_rss_bytes"] >> 20)' "$T/m.json" 2>&1)"
  done
  rm -f "$T"/*
}

# Runs the checks of function $1 into $OUT/$1.log; one summary line.
logged_section() {
  local t=$SECONDS before=$failed
  "$1" > "$OUT/$1.log" 2>&1
  echo "$1: $((failed - before)) failed of $(grep -c '^-- ' "$OUT/$1.log") checks, $((SECONDS - t))s ($1.log)"
}

section_e2e() { logged_section e2e; }

parts() {
  # An image of PARTS_GIB GiB (default 8), so that the SIGTERM after RESUME_AFTER (1.5) s lands mid-run.
  local n W=65536 H=$((${PARTS_GIB:-8} * 1024 * 1024 * 1024 / 4 / 65536))
  n=$(nvidia-smi -L | wc -l)
  if ! command -v mpirun > /dev/null; then echo "-- mpirun not installed: skipped"; return; fi
  "$B/oocgen" "$T/in.raw" --width $W --height $H -q
  for k in 1 "$n"; do
    mpirun --bind-to none -np "$k" "$B/oocconv" "$T/in.raw" "$T/o$k.raw" --width $W --radius 16 -q
  done
  check "1 rank vs $n ranks (cmp)" cmp "$T/o1.raw" "$T/o$n.raw"
  [ "$n" -gt 1 ] && rm -f "$T/o$n.raw"  # o1.raw is the reference of the resume check
  # Resume: SIGTERM mid-run, then --resume; the result equals the uninterrupted run's.
  mpirun --bind-to none -np "$n" "$B/oocconv" "$T/in.raw" "$T/r.raw" --width $W --radius 16 --progress-log=1 &
  local p=$!
  # 8 GiB file to file takes about 3 s on the H200 machine: the signal lands mid-run.
  sleep "${RESUME_AFTER:-1.5}"; kill -TERM $p; wait $p; echo "exit after SIGTERM: $?"
  ls -la "$T"/r.raw*; cat "$T"/r.raw.partial.*journal 2>/dev/null | grep -E "part|done"
  check "stopped mid-run (r.raw not in place yet)" test ! -e "$T/r.raw"
  mpirun --bind-to none -np "$n" "$B/oocconv" "$T/in.raw" "$T/r.raw" --width $W --radius 16 --resume -q
  check "stopped + resumed vs uninterrupted (cmp)" cmp "$T/o1.raw" "$T/r.raw"
  rm -f "$T"/*
}

section_parts() { logged_section parts; }

section_python() {
  local py
  for py in test_hostile_output_files test_hostile_signals test_hostile_limits \
            test_hostile_tiff_modes_precision test_hostile_names_and_locks test_atax \
            test_parts_and_resume test_convolve_kernel test_equalize test_ooccheck_kernel_equalize \
            test_cuda_convolve_equalize; do
    step "$py" "$PY" "tests/cli/$py.py" --bin-dir "$B"
  done
}

# Pipelines: the check script (its Cuda class compares --device cuda with cpu), then the sanitizer
# over chains that exercise the device intermediates, the border rows copied between stages and
# a histogram pass.
section_pipeline() {
  local py
  for py in test_pipeline_stages test_pipeline_fusion test_pipeline_working_type \
            test_pipeline_morphology test_pipeline_cuda; do
    step "$py" "$PY" "tests/cli/$py.py" --bin-dir "$B" -v
  done
  "$B/oocgen" "$T/p.raw" --width 1031 --height 517 --type u16 --channels 3 --pattern noise -q
  local chain border
  for border in reflect wrap constant; do
    chain="gaussian sigma=1.5 ! unsharp sigma=1 amount=0.7 ! gradient-magnitude ! dog sigma1=1 sigma2=2 ! convert type=u16 ! equalize"
    step "pipeline_memcheck_$border" "$SAN" --tool memcheck --error-exitcode 1 "$B/oocrun" "$T/p.raw" \
      null: "$chain" --width 1031 --type u16 --channels 3 --device cuda --border "$border" \
      --band-rows 37 -q
  done
  step pipeline_racecheck "$SAN" --tool racecheck --error-exitcode 1 "$B/oocrun" "$T/p.raw" null: \
    "scale mul=2 ! subtract-background sigma=2 ! clamp min=0 max=9000 ! convert type=u8" \
    --width 1031 --type u16 --channels 3 --device cuda --band-rows 64 -q
  rm -f "$T"/*
}

# The Python module's own tests on the GPU, in the interpreter it was built for.
section_module() {
  if [ ! -f "$S/python.tar.xz" ]; then
    echo "module: no $S/python.tar.xz: run 'bash tools/device/stage.sh --python build/release'"
    failed=$((failed + 1))
    return
  fi
  mkdir -p "$T/py" && tar -C "$T/py" -xJf "$S/python.tar.xz"
  step pytest_module env PYTHONHOME="$T/py" PYTHONPATH="$T/py/site" PYTHONDONTWRITEBYTECODE=1 \
    LD_LIBRARY_PATH="$T/py/lib:$LD_LIBRARY_PATH" "$T/py/bin/python3.11" -m pytest -v -p no:cacheprovider \
    tests/python
  echo "module: $(grep -E "^=+ .*(passed|failed|error)" "$OUT/pytest_module.log" | tail -1)"
  rm -rf "$T/py"
}

sections=${*:-device tests sanitizer e2e parts python pipeline module}
for s in $sections; do
  case $s in
    device|tests|sanitizer|e2e|parts|python|pipeline|module) "section_$s" ;;
    *) echo "device_check: unknown section '$s' (device tests sanitizer e2e parts python pipeline module)" >&2; exit 2 ;;
  esac
done
echo "device_check: $failed failed step(s); logs in $OUT"
[ "$failed" -eq 0 ]
