#!/usr/bin/env bash
# bench_fft_median.sh: the FFT-halo and GPU-median measurements of docs/performance.md (tables
# "On one H200, after the alignment" and "Large windows of 8- and 16-bit samples on the GPU"),
# for one device call. Run from the repository root after `bash tools/device/stage.sh build/sm90`
# staged ./stage; OLD=dir names the stage/bin of an older build to time the FFT against (left
# out: no comparison rows). Writes one --stats json per run into $OUT (default /tmp/ooc-bench).
set -u
cd "$(dirname "$0")/../.." || exit 2
B=$PWD/stage/bin O=${OLD:-}
OUT=${OUT:-/tmp/ooc-bench}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$B/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OOC_CPU_START=auto
j() {
  local n=$1; shift
  timeout 60 "$@" --stats json > "$OUT/b_$n.json" 2> "$OUT/b_$n.err"
  echo "bench $n rc=$?"
}
# 8 GiB f32 in /dev/shm (the page cache) to null:, one GPU.
"$B/oocgen" /dev/shm/in.raw --width 65536 --height 32768 --type f32 --pattern noise -q
IN=(/dev/shm/in.raw null: --width 65536 --type f32 --device cuda --devices 0)
j sep_r3 "$B/oocconv" "${IN[@]}" --radius 3
for k in 21 42 85; do
  j fft_g$k "$B/oocconv" "${IN[@]}" --kernel gaussian2d:$k --method fft
  [ -n "$O" ] && j fftold_g$k "$O/oocconv" "${IN[@]}" --kernel gaussian2d:$k --method fft
done
j sep_r3b "$B/oocconv" "${IN[@]}" --radius 3
rm -f /dev/shm/in.raw
# Medians of 16384 x 16384 u8 and u16 from the generator, on the GPU and on every CPU core.
for t in u16 u8; do
  for k in 15 51 101; do
    for d in cuda cpu; do
      j med_${t}_${k}_$d "$B/oocrun" synth:noise null: "median size=$k" --width 16384 \
        --height 16384 --type $t --device $d --devices 0
    done
  done
done
# CuPy's median_filter on a 4096 x 4096 u16 array in device memory.
for k in 51 15; do
  timeout 60 python3 tools/device/cupy_median.py 4096 $k > "$OUT/cupy$k.txt" 2>&1
done
