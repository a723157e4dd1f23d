#!/usr/bin/env bash
# On the GPU machine (device tool): stage ceilings, oocconv GPU vs CPU with the input in the page
# cache, cold file-to-file against cp + sync, and a larger-than-RAM run under a cgroup v2 memory
# limit. Staged binaries in $STAGE (default stage/); logs and CSV in $OUT.
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
df -h "$D" | tail -1; nproc; free -g | head -2
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/device.txt"

# Inputs: 4 GiB each (f32 65536 x 16384, u8 65536 x 65536), written once from the synthetic source.
$B/oocconv synth:noise $D/f32.raw --width $W --height 16384 --taps 1 --device cpu -q
$B/oocconv synth:noise $D/u8.raw --width $W --height 65536 --type u8 --taps 1 --device cpu -q

# Stage ceilings, each stage alone.
[ -x $B/ooc_gpu_stages ] && for t in f32 u8; do
  rows=256; [ $t = u8 ] && rows=1024
  $B/ooc_gpu_stages --file $D/$t.raw --width $W --rows $rows --radius 16 --type $t --repeats 5 \
    --threads 8 --csv $OUT/gpu_stages_$t.csv 2>&1 | tee -a "$OUT/gpu_bench.log"
done

# Page cache -> discard: GPU and CPU (all cores), 3 runs each, interleaved.
for t in f32 u8; do
  cat $D/$t.raw > /dev/null
  for i in 1 2 3; do
    for dev in cuda cpu; do
      $B/oocconv $D/$t.raw null: --width $W --type $t --radius 16 --device $dev --stats json \
        > $OUT/pc_${t}_${dev}_$i.json 2>>$OUT/gpu_bench.log
    done
  done
done
# Synthetic -> discard on the GPU (16 GiB f32), no file at all.
$B/oocconv synth:noise null: --width $W --height 65536 --radius 16 --device cuda --stats json > $OUT/synth_f32_cuda.json

# Cold file -> file: cp + sync against oocconv + sync, f32 then u8, 2 runs each.
for t in f32 u8; do
  for i in 1 2; do
    drop; t0=$(now); cp $D/$t.raw $D/cp.raw && sync; t1=$(now); rm -f $D/cp.raw
    drop; t2=$(now); $B/oocconv $D/$t.raw $D/out.raw --width $W --type $t --radius 16 --device cuda -q && sync; t3=$(now)
    rm -f $D/out.raw
    log "cold $t run $i: cp+sync $(awk "BEGIN{print $t1 - $t0}") s, oocconv+sync $(awk "BEGIN{print $t3 - $t2}") s"
  done
done
rm -f $D/f32.raw $D/u8.raw

# Larger than RAM for the job: 16 GiB f32 in, 16 GiB out, under memory.max = 2 GiB.
$B/oocconv synth:gradient $D/big.raw --width $W --height 65536 --taps 1 --device cpu -q
drop
CG=/sys/fs/cgroup/ooc
echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
mkdir -p $CG && echo 2G > $CG/memory.max
t0=$(now)
bash -c "echo \$\$ > $CG/cgroup.procs && exec $B/oocconv $D/big.raw $D/bigout.raw --width $W --radius 16 --device cuda --mem-limit 1G --stats json" > $OUT/big_cgroup.json 2>>$OUT/gpu_bench.log
rc=$?; t1=$(now)
log "big 16 GiB under memory.max=2G: rc=$rc wall $(awk "BEGIN{print $t1 - $t0}") s, cgroup memory.peak $(cat $CG/memory.peak 2>/dev/null) bytes, memory.max $(cat $CG/memory.max), oom_kill $(grep oom_kill $CG/memory.events 2>/dev/null)"
python3 tools/bench/check_bands.py $D/big.raw $D/bigout.raw --width $W --type f32 --radius 16 --bands 10 2>&1 | tee -a "$OUT/gpu_bench.log"
rm -f $D/big.raw $D/bigout.raw

python3 - "$OUT" <<'PY' | tee -a "$OUT/gpu_bench.log"
import glob, json, statistics, sys
out = sys.argv[1]
def load(p):
    return json.load(open(p))
for t in ("f32", "u8"):
    for dev in ("cuda", "cpu"):
        runs = [load(p) for p in sorted(glob.glob(f"{out}/pc_{t}_{dev}_*.json"))]
        if not runs: continue
        gbs = statistics.median(r["throughput"]["input_mb_per_s"] / 1e3 for r in runs)
        r = runs[0]
        print(f"page cache -> null {t} {dev:4s}: {gbs:6.2f} GB/s in (median of {len(runs)}), "
              f"plan {r['plan']['bands']} bands x {r['plan']['band_rows']} rows, {r['plan']['slots']} slots, "
              f"peak RSS {r['peak_rss_bytes']/2**20:.0f} MiB, stages read {r['seconds']['read_stage']:.2f} "
              f"compute {r['seconds']['compute_stage']:.2f} write {r['seconds']['write_stage']:.2f} s, {r['backend']}")
s = load(f"{out}/synth_f32_cuda.json")
print(f"synthetic -> null f32 cuda: {s['throughput']['input_mb_per_s']/1e3:.2f} GB/s, {s['seconds']['total']:.2f} s")
b = load(f"{out}/big_cgroup.json")
print(f"big: {b['input']['bytes']/2**30:.1f} GiB in {b['seconds']['total']:.1f} s = "
      f"{b['throughput']['input_mb_per_s']/1e3:.2f} GB/s, peak RSS {b['peak_rss_bytes']/2**20:.0f} MiB, "
      f"plan {b['plan']['band_rows']} rows x {b['plan']['slots']} slots, ring {b['plan']['ring_bytes']/2**20:.0f} MiB")
PY
