#!/usr/bin/env bash
# On the GPU machine: --device auto against both backends, side by side, on 64^2, 1 GiB and
# 16 GiB f32 inputs (radius 3 and 16, page cache -> null:), 3 runs each interleaved, medians;
# plus oocinfo's estimate for each. Wall seconds from date; the engine's own split from --stats.
set -u
S=${STAGE:-stage}
export LD_LIBRARY_PATH=$PWD/$S/lib:/usr/local/cuda/lib64
B=$S/bin
OUT=${OUT:-/tmp/ooc-out}; D=${WORK:-/root/oocauto}; mkdir -p "$OUT" "$D"
csv=$OUT/startup_auto.csv
echo "case,radius,device,run,wall_s,setup_s,backend" > "$csv"
$B/oocgen $D/small.raw --width 64 --height 64 > /dev/null
$B/oocgen $D/g1.raw --width 16384 --height 16384 > /dev/null
$B/oocgen $D/g16.raw --width 65536 --height 65536 > /dev/null
cat $D/g1.raw $D/g16.raw > /dev/null
for f in small:64 g1:16384 g16:65536; do
  name=${f%%:*}; w=${f##*:}
  for r in 3 16; do
    $B/oocinfo $D/$name.raw --width $w --radius $r | grep -E "backend:" | sed "s/^/$name r$r /"
    for run in 1 2 3; do
      for dev in cpu cuda auto; do
        t0=$(date +%s.%N)
        $B/oocconv $D/$name.raw null: --width $w --radius $r --device $dev --stats json > $OUT/s.json 2>/dev/null
        t1=$(date +%s.%N)
        python3 - "$name" "$r" "$dev" "$run" "$t0" "$t1" "$OUT/s.json" >> "$csv" <<'PY'
import json, sys
name, r, dev, run, t0, t1, path = sys.argv[1:]
j = json.load(open(path))
print(f"{name},{r},{dev},{run},{float(t1)-float(t0):.3f},{j['seconds']['setup']:.3f},\"{j['backend']}; {j['backend_choice']}\"")
PY
      done
    done
  done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r['case'], r['radius']) for r in rows}, key=lambda k: (k[0], int(k[1])))
print("case radius  cpu_s  cuda_s  auto_s  auto/best  auto picks")
for k in keys:
    med = {}
    for dev in ("cpu", "cuda", "auto"):
        sel = [r for r in rows if (r['case'], r['radius'], r['device']) == (*k, dev)]
        med[dev] = statistics.median(float(r['wall_s']) for r in sel)
        if dev == "auto": pick = sel[-1]['backend']
    best = min(med['cpu'], med['cuda'])
    print(f"{k[0]:6} r{k[1]:3} {med['cpu']:6.3f} {med['cuda']:7.3f} {med['auto']:7.3f} {med['auto']/best:9.2f}  {pick}")
PY
