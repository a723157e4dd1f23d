#!/usr/bin/env bash
# On the GPU machine: file to file against cp of the same file, with and without sync, CPU and
# CUDA backends, 1 GiB and 8 GiB f32 radius 3 (page-cache input), 3 runs interleaved, medians.
set -u
S=${STAGE:-stage}
export LD_LIBRARY_PATH=$PWD/$S/lib:/usr/local/cuda/lib64
B=$S/bin
OUT=${OUT:-/tmp/ooc-out}; D=${WORK:-/root/oocwrite}; mkdir -p "$OUT" "$D"
csv=$OUT/write_path.csv
echo "size,case,sync,run,wall_s" > "$csv"
$B/oocgen $D/w1.raw --width 16384 --height 16384 > /dev/null
$B/oocgen $D/w8.raw --width 32768 --height 65536 > /dev/null
for f in w1:16384 w8:32768; do
  name=${f%%:*}; w=${f##*:}
  cat $D/$name.raw > /dev/null
  for s in 0 1; do
    for run in 1 2 3; do
      for c in cp cpu cuda; do
        rm -f $D/o.raw; sync
        t0=$(date +%s.%N)
        case $c in
          cp) cp $D/$name.raw $D/o.raw ;;
          *) $B/oocconv $D/$name.raw $D/o.raw --width $w --radius 3 --device $c -q ;;
        esac
        [ $s = 1 ] && sync
        t1=$(date +%s.%N)
        echo "$name,$c,$s,$run,$(python3 -c "print(round($t1 - $t0, 3))")" >> "$csv"
      done
    done
  done
done
rm -f $D/o.raw
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("size sync   cp_s  cpu_s cuda_s  cp/cpu cp/cuda (throughput ratio to cp)")
for size in ("w1", "w8"):
    for s in ("0", "1"):
        m = {c: statistics.median(float(r['wall_s']) for r in rows if (r['size'], r['sync'], r['case']) == (size, s, c)) for c in ("cp", "cpu", "cuda")}
        print(f"{size:4} {s:4} {m['cp']:6.2f} {m['cpu']:6.2f} {m['cuda']:6.2f} {m['cp']/m['cpu']:7.2f} {m['cp']/m['cuda']:7.2f}")
PY
