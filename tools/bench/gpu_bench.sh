#!/usr/bin/env bash
# On the GPU machine (device tool): stage ceilings, oocconv GPU vs CPU with the input in the page
# cache, cold file-to-file against cp + sync, and a larger-than-RAM-budget run under a cgroup v2
# memory limit. Staged binaries in $STAGE (default stage/); logs and CSV in $OUT.
set -u
S=${STAGE:-stage}
export LD_LIBRARY_PATH=$PWD/$S/lib
B=$PWD/$S/bin
OUT=${OUT:-/tmp/ooc-out}; mkdir -p "$OUT"
D=${BENCH_DIR:-/root/oocb}; mkdir -p "$D"
W=65536
now() { date +%s.%N; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
log() { echo "$*" | tee -a "$OUT/gpu_bench.log"; }
secs() { awk "BEGIN{print $2 - $1}"; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/device.txt"

# Inputs written once from the synthetic source: 16 GiB f32 (65536^2), 16 GiB u8, 2 GiB f32.
$B/oocconv synth:noise $D/f32.raw --width $W --height 65536 --taps 1 --device cpu -q
$B/oocconv synth:noise $D/u8.raw --width $W --height 262144 --type u8 --taps 1 --device cpu -q
$B/oocconv synth:noise $D/small.raw --width $W --height 8192 --taps 1 --device cpu -q

# Stage ceilings, each stage alone (2 GiB file).
for t in f32 u8; do
  rows=256; [ $t = u8 ] && rows=1024
  $B/ooc_gpu_stages --file $D/small.raw --width $W --rows $rows --radius 16 --type $t --repeats 5 \
    --threads 8 --csv $OUT/gpu_stages_$t.csv 2>&1 | tee -a "$OUT/gpu_bench.log"
done
python3 tools/bench/cupy_band.py $W 256 16 2>&1 | tee -a "$OUT/gpu_bench.log"

# Page cache -> discard (16 GiB): GPU 3 runs, CPU (all cores) 2 runs, interleaved.
for t in f32 u8; do
  cat $D/$t.raw > /dev/null
  for i in 1 2 3; do
    $B/oocconv $D/$t.raw null: --width $W --type $t --radius 16 --device cuda --stats json > $OUT/pc_${t}_cuda_$i.json
    [ $i -le 2 ] && $B/oocconv $D/$t.raw null: --width $W --type $t --radius 16 --device cpu --stats json > $OUT/pc_${t}_cpu_$i.json
  done
done
$B/oocconv synth:noise null: --width $W --height 65536 --radius 16 --device cuda --stats json > $OUT/synth_f32_cuda.json

# Cold file -> file (16 GiB f32): cp + sync against oocconv + sync, 2 runs each.
for i in 1 2; do
  drop; t0=$(now); cp $D/f32.raw $D/cp.raw && sync; t1=$(now); rm -f $D/cp.raw
  drop; t2=$(now); $B/oocconv $D/f32.raw $D/out.raw --width $W --radius 16 --device cuda -q && sync; t3=$(now)
  rm -f $D/out.raw
  log "cold f32 16 GiB run $i: cp+sync $(secs $t0 $t1) s, oocconv+sync $(secs $t2 $t3) s, ratio cp/oocconv $(awk "BEGIN{print ($t1-$t0)/($t3-$t2)}")"
done
rm -f $D/u8.raw $D/small.raw

# The 16 GiB f32 file to file, cold, under memory.max = 2 GiB (1/8 of the image).
drop
CG=/sys/fs/cgroup/ooc
echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
mkdir -p $CG && echo 2G > $CG/memory.max
t0=$(now)
bash -c "echo \$\$ > $CG/cgroup.procs && exec $B/oocconv $D/f32.raw $D/bigout.raw --width $W --radius 16 --device cuda --mem-limit 1G --stats json" > $OUT/big_cgroup.json
rc=$?; t1=$(now)
log "big 16 GiB under memory.max=2G: rc=$rc wall $(secs $t0 $t1) s, cgroup memory.peak $(cat $CG/memory.peak 2>/dev/null) bytes, memory.max $(cat $CG/memory.max), $(grep oom_kill $CG/memory.events 2>/dev/null)"
python3 tools/bench/check_bands.py $D/f32.raw $D/bigout.raw --width $W --type f32 --radius 16 --bands 10 2>&1 | tee -a "$OUT/gpu_bench.log"
rm -f $D/f32.raw $D/bigout.raw

python3 tools/bench/summarize_gpu.py "$OUT" | tee -a "$OUT/gpu_bench.log"
