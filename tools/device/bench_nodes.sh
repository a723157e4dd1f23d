#!/usr/bin/env bash
# bench_nodes.sh: the GPU-node measurements of docs/performance.md ("--device auto on GPU nodes",
# "Pinned memory", "Several GPUs", "Pyramids and parts on many cores") for one device call. Run
# from the repository root after `bash tools/device/stage.sh build/sm90` staged ./stage. Sections
# (default: all): pinned auto gpus pyramid. MACHINE names the results folder (default gpu-node).
# cold: a COLD_GIB (default 32) GiB file on DISK (default /var/tmp) read with the page cache
# dropped (root): dd iflag=direct against oocconv --io direct (CPU, CUDA) and --io mmap; then a
# cold copy with sync of COPY_GIB (default 16) GiB: dd iflag=direct oflag=direct, cp, and oocconv
# --radius 0 --io direct (CPU, CUDA). COLD_REPS (default 2) runs of each.
# rank: the GPU rank filters (16384^2 u8/u16 medians 15/51/101, minimum 101; CPU beside) and a
# RANK_GIB (default 16) GiB u16 median 15 from the page cache with the default --device cuda.
# fft: the 2-D FFT's CUDA kernels alone on a 16384 x 1024 band against CuPy and NPP
# (ooc_gpu_stages --stages fft, gpu_fft_peers.py), and 16 GiB f32 with 129^2, 255^2, 511^2
# random PSFs from the page cache to null: against --radius 3 of the same file.
# footprint: rank and min/max filters with footprints (disks of radius 2, 7, 25, 50, a random
# 25 x 25), and the f32/f64 medians the GPU takes by its radix select (sizes 15, 51, 101, a disk
# of radius 20), on 16384^2 from synth:noise, --device cuda (--cpu-start off) against cpu and
# auto; tools/device/footprint_csv.py turns the --stats json into footprints.csv.
# Every section has a time limit of its own; the bench's CSVs and every --stats json go to $OUT.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=$PWD/stage/bin
OUT=${OUT:-/tmp/ooc-bench}
MACHINE=${MACHINE:-gpu-node}
PYR=${PYR:-32768}  # side of the pyramid section's u16 image
W=/dev/shm/ooc-nodes
mkdir -p "$OUT" "$W"
export LD_LIBRARY_PATH=$B/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sections=${*:-pinned auto gpus pyramid cold rank fft footprint}
has() { [[ " $sections " == *" $1 "* ]]; }
j() {  # j NAME LIMIT CMD...: one run, its --stats json and stderr in $OUT
  local n=$1 lim=$2; shift 2
  local t0=$EPOCHREALTIME
  timeout "$lim" "$@" --stats json > "$OUT/$n.json" 2> "$OUT/$n.err"
  local rc=$?
  echo "$n rc=$rc wall=$(since "$t0")"
}
since() { python3 -c "import sys; print(f'{$EPOCHREALTIME - float(sys.argv[1]):.3f}')" "$1"; }
nvidia-smi -L
nproc
free -g | head -2
df -h /dev/shm | tail -1

if has pinned; then
  timeout 120 "$B/ooc_gpu_stages" --stages pinned --csv "$OUT/pinned.csv" > "$OUT/pinned.txt" 2>&1
  echo "pinned rc=$?"
fi

if has auto; then
  # 64^2 and 1 GiB: 3 repeats; 16 and 64 GiB: one run each.
  timeout 120 python3 tools/bench/run startup --no-build --build-dir "$B" --machine "$MACHINE" --workdir "$W" \
    --images 64x64,16384x16384 --jobs sep3,sep16,k7,k31,eq,atax --repeats 3 > "$OUT/auto_small.txt" 2>&1
  echo "auto small rc=$?"
  timeout 270 python3 tools/bench/run startup --no-build --build-dir "$B" --machine "$MACHINE" --workdir "$W" \
    --images 65536x65536,131072x131072 --jobs sep3,sep16,k7,k31,eq,atax --repeats 1 \
    > "$OUT/auto_big.txt" 2>&1
  echo "auto big rc=$?"
  cp tools/bench/results/"$MACHINE"/startup.csv "$OUT/" 2>/dev/null
  rm -f "$W"/startup_*
fi

if has gpus; then
  # One GPU against what --devices all picks and against every GPU listed, 16 GiB f32.
  "$B/oocgen" "$W/g.raw" --width 65536 --height 65536 --type f32 --pattern noise -q
  python3 -c "import numpy as np; np.save('$W/k31.npy', np.random.default_rng(31).uniform(0.1, 1, (31, 31)) / 528)"
  n=$(nvidia-smi -L | grep -c '^GPU ')
  list=$(seq -s, 0 $((n - 1)))
  cat "$W/g.raw" > /dev/null
  for rep in 1 2; do
    for cfg in "0" "all" "$list"; do
      c=${cfg//,/-}
      j "gpus_sep16_${c}_$rep" 60 "$B/oocconv" "$W/g.raw" null: --width 65536 --radius 16 --device cuda --devices "$cfg"
      j "gpus_k31_${c}_$rep" 90 "$B/oocconv" "$W/g.raw" null: --width 65536 --kernel "$W/k31.npy" --device cuda --devices "$cfg"
      j "gpus_chain_${c}_$rep" 90 "$B/oocrun" "$W/g.raw" null: "gaussian sigma=2 ! unsharp sigma=1 amount=0.7 ! median size=3 ! maximum size=5 ! gaussian sigma=1 ! convert type=u8" --width 65536 --type f32 --device cuda --devices "$cfg"
      j "gpus_median7_${c}_$rep" 90 "$B/oocrun" "$W/g.raw" null: "median size=7" --width 65536 --type f32 --device cuda --devices "$cfg"
    done
  done
  rm -f "$W/g.raw"
fi

if has rank; then
  for t in u8 u16; do
    for k in 15 51 101; do
      [ $t = u8 ] && [ $k != 51 ] && continue
      for dev in cuda cpu; do
        j "rank_${t}_median${k}_$dev" 90 "$B/oocrun" synth:noise null: "median size=$k" --width 16384 --height 16384 --type $t --device $dev --devices 0
      done
    done
  done
  for dev in cuda cpu; do
    j "rank_u16_minimum101_$dev" 60 "$B/oocrun" synth:noise null: "minimum size=101" --width 16384 --height 16384 --type u16 --device $dev --devices 0
  done
  n=${RANK_GIB:-16}
  "$B/oocgen" "$W/r.raw" --width 65536 --height $((n * 8192)) --type u16 --pattern noise -q
  cat "$W/r.raw" > /dev/null
  for rep in 1 2; do
    j "rank_big_u16_median15_$rep" 120 "$B/oocrun" "$W/r.raw" null: "median size=15" --width 65536 --type u16 --device cuda
  done
  j "rank_big_u16_median15_cpu" 120 "$B/oocrun" "$W/r.raw" null: "median size=15" --width 65536 --type u16 --device cpu
  rm -f "$W/r.raw"
fi

if has footprint; then
  python3 - "$W" <<'PY'
import sys, numpy as np
def disk(r):
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    return (x * x + y * y <= r * r + r).astype(np.uint8)
for r in (2, 7, 20, 25, 50):
    np.save("%s/disk%d.npy" % (sys.argv[1], r), disk(r))
f = (np.random.default_rng(3).random((25, 25)) < 0.33).astype(np.uint8)
f[12, 12] = 1
np.save("%s/rand25.npy" % sys.argv[1], f)
PY
  for rep in 1 2; do
    for spec in "median u16 disk7" "median u16 disk25" "median u16 rand25" "median u8 disk25" \
                "minimum f32 disk2" "minimum f32 disk7" "minimum f32 disk25" "minimum f32 disk50" \
                "minimum f32 rand25" "white-tophat f32 disk25" "median f32 disk20" \
                "median f32 size15" "median f32 size51" "median f32 size101" "median f64 size51"; do
      set -- $spec
      window="footprint=$W/$3.npy"
      [[ $3 == size* ]] && window="size=${3#size}"
      for dev in cuda cpu auto; do
        extra=(); [ $dev = cuda ] && extra=(--cpu-start off)
        j "footprint_$1_$2_$3_${dev}_$rep" 120 "$B/oocrun" synth:noise null: "$1 $window" \
          --width 16384 --height 16384 --type "$2" --device $dev "${extra[@]}"
      done
    done
  done
fi

if has fft; then
  timeout 120 "$B/ooc_gpu_stages" --stages fft --width 16384 --rows 1024 --repeats 5 --csv "$OUT/fft_kernels.csv" > "$OUT/fft_kernels.txt" 2>&1
  echo "fft kernels rc=$?"
  timeout 180 python3 tools/device/gpu_fft_peers.py --width 16384 --rows 1024 > "$OUT/fft_peers.csv" 2> "$OUT/fft_peers.err"
  echo "fft peers rc=$?"
  "$B/oocgen" "$W/f.raw" --width 65536 --height 65536 --type f32 --pattern noise -q
  for k in 129 255 511; do
    python3 -c "import numpy as np; k=np.random.default_rng($k).uniform(0.1, 1, ($k, $k)); np.save('$W/k$k.npy', k / k.sum())"
  done
  cat "$W/f.raw" > /dev/null
  for rep in 1 2; do
    j "fft_r3_$rep" 60 "$B/oocconv" "$W/f.raw" null: --width 65536 --radius 3 --device cuda
    j "fft_r3_gpuonly_$rep" 60 "$B/oocconv" "$W/f.raw" null: --width 65536 --radius 3 --device cuda --cpu-start off
    for k in 129 255 511; do
      j "fft_k${k}_$rep" 90 "$B/oocconv" "$W/f.raw" null: --width 65536 --kernel "$W/k$k.npy" --device cuda
      j "fft_k${k}_4G_$rep" 90 "$B/oocconv" "$W/f.raw" null: --width 65536 --kernel "$W/k$k.npy" --device cuda --mem-limit 4G
    done
    # A separable Gaussian of sigma 100 (radius 300): CUDA runs it directly.
    j "fft_sep_sigma100_$rep" 90 "$B/oocconv" "$W/f.raw" null: --width 65536 --sigma 100 --device cuda
  done
  rm -f "$W/f.raw"
fi

if has pyramid; then
  # A pyramid against level 0 alone (Zarr blosc lz4, TIFF zstd), and 4 parts against one process.
  "$B/oocgen" "$W/p.raw" --width $PYR --height $PYR --type u16 --pattern noise -q
  cat "$W/p.raw" > /dev/null
  P=("$W/p.raw" --width $PYR --type u16 --radius 2 --device cpu -q)
  for rep in 1 2 3; do
    rm -rf "$W"/o*.zarr "$W"/o*.tif
    j "pyr_zarr_l0_$rep" 60 "$B/oocconv" "${P[@]}" "$W/o0.zarr"
    j "pyr_zarr_pyr_$rep" 60 "$B/oocconv" "${P[@]}" "$W/o1.zarr" --pyramid
    j "pyr_tif_l0_$rep" 60 "$B/oocconv" "${P[@]}" "$W/o0.tif" --compress zstd --tile 512
    j "pyr_tif_pyr_$rep" 60 "$B/oocconv" "${P[@]}" "$W/o1.tif" --compress zstd --tile 512 --pyramid
  done
  du -sb "$W"/o*.zarr "$W"/o*.tif > "$OUT/pyr_sizes.txt"
  # 4 parts as separate processes of T threads each, against one process of T threads and one of all.
  T=$(($(nproc) / 4)); [ $T -lt 1 ] && T=1
  for rep in 1 2; do
    for fmt in zarr tif; do
      ex=(); [ $fmt = tif ] && ex=(--compress zstd --tile 512)
      rm -rf "$W"/q*."$fmt" "$W"/q*."$fmt".partial*
      j "parts_${fmt}_one_T${T}_$rep" 120 "$B/oocconv" "${P[@]}" "$W/q1.$fmt" --pyramid "${ex[@]}" --threads $T
      j "parts_${fmt}_one_all_$rep" 120 "$B/oocconv" "${P[@]}" "$W/q2.$fmt" --pyramid "${ex[@]}"
      t0=$EPOCHREALTIME
      for i in 0 1 2 3; do
        timeout 120 "$B/oocconv" "${P[@]}" "$W/q4.$fmt" --pyramid "${ex[@]}" --threads $T --part $i/4 \
          > "$OUT/parts_${fmt}_$i.err" 2>&1 &
      done
      wait
      timeout 120 "$B/oocconv" --finish "$W/q4.$fmt" > "$OUT/parts_${fmt}_finish.err" 2>&1
      echo "parts_${fmt}_four_T${T}_$rep rc=$? wall=$(since "$t0")"
      if [ $fmt = tif ]; then cmp "$W/q1.tif" "$W/q4.tif" && echo "parts tif identical"; fi
      if [ $fmt = zarr ]; then  # the stores' names (in .zattrs) differ, as their paths do
        diff -r -x .zattrs "$W/q1.zarr" "$W/q4.zarr" > /dev/null && echo "parts zarr identical"
      fi
    done
  done
  rm -rf "$W"
fi

if has cold; then
  D=${DISK:-/var/tmp}/ooc-cold
  mkdir -p "$D"
  n=${COLD_GIB:-32}
  df -h "$D" | tail -1
  t0=$EPOCHREALTIME
  "$B/oocgen" "$D/c.raw" --width 65536 --height $((n * 4096)) --type f32 --pattern noise -q
  sync
  echo "cold: wrote $n GiB in $(since "$t0") s"
  drop() { sync; echo 3 > /proc/sys/vm/drop_caches || echo "cold: cannot drop the page cache"; }
  C=("$D/c.raw" null: --width 65536 --radius 16)
  for rep in $(seq 1 "${COLD_REPS:-2}"); do
    drop; t0=$EPOCHREALTIME
    timeout 120 dd if="$D/c.raw" of=/dev/null iflag=direct bs=16M 2> "$OUT/cold_dd_$rep.err"
    echo "cold_dd_direct_$rep rc=$? wall=$(since "$t0")"
    drop; j "cold_direct_cpu_$rep" 120 "$B/oocconv" "${C[@]}" --io direct --device cpu
    drop; j "cold_direct_cuda_$rep" 120 "$B/oocconv" "${C[@]}" --io direct --device cuda
    drop; j "cold_mmap_cpu_$rep" 120 "$B/oocconv" "${C[@]}" --io mmap --device cpu
  done
  m=${COPY_GIB:-16}
  if [ "$m" -gt 0 ]; then
    rm -f "$D/c.raw"
    "$B/oocgen" "$D/s.raw" --width 65536 --height $((m * 4096)) --type f32 --pattern noise -q
    S=("$D/s.raw" "$D/o.raw" --width 65536 --radius 0 --io direct)
    for rep in $(seq 1 "${COLD_REPS:-2}"); do
      rm -f "$D/o.raw"; drop; t0=$EPOCHREALTIME
      timeout 120 dd if="$D/s.raw" of="$D/o.raw" iflag=direct oflag=direct bs=16M 2> /dev/null; sync
      echo "copy_dd_direct_$rep rc=$? wall=$(since "$t0")"
      rm -f "$D/o.raw"; drop; t0=$EPOCHREALTIME
      timeout 120 cp "$D/s.raw" "$D/o.raw"; sync
      echo "copy_cp_$rep rc=$? wall=$(since "$t0")"
      for dev in cpu cuda; do
        rm -f "$D/o.raw"; drop; t0=$EPOCHREALTIME
        timeout 120 "$B/oocconv" "${S[@]}" --device $dev --stats json > "$OUT/copy_${dev}_$rep.json" 2> "$OUT/copy_${dev}_$rep.err"; sync
        echo "copy_direct_${dev}_$rep rc=$? wall=$(since "$t0")"
      done
    done
  fi
  rm -rf "$D"
fi
