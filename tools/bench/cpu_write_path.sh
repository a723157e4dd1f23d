#!/usr/bin/env bash
# This machine: oocconv file to file against cp of the same file (and, given OLD=path, an older
# oocconv), with and without sync, radius 1 and 3, 16384^2 f32 in the page cache; 5 runs
# interleaved, medians. BIN: the build's directory (default build/release).
set -u
cd "$(dirname "$0")/../.."
B=${BIN:-build/release}
OUT=${OUT:-tools/bench/results/cpu-2core-write}; D=${WORK:-/tmp/ooc-write}; mkdir -p "$OUT" "$D"
csv=$OUT/write_path.csv
echo "case,radius,sync,run,wall_s" > "$csv"
$B/oocgen $D/in.raw --width 16384 --height 16384 > /dev/null
cat $D/in.raw > /dev/null
cases="cp new"; [ -n "${OLD:-}" ] && cases="$cases old"
# The order of the cases rotates from run to run: whichever runs after another's big write pays
# for its writeback otherwise.
for r in 1 3; do for s in 0 1; do for run in 1 2 3 4 5; do
set -- $cases; for ((k = 0; k < run % $#; k++)); do set -- "${@:2}" "$1"; done
for c in "$@"; do
  rm -f $D/o.raw; sync
  t0=$(date +%s.%N)
  case $c in
    cp) cp $D/in.raw $D/o.raw ;;
    new) $B/oocconv $D/in.raw $D/o.raw --width 16384 --radius $r -q ;;
    old) $OLD $D/in.raw $D/o.raw --width 16384 --radius $r -q ;;
  esac
  [ $s = 1 ] && sync
  t1=$(date +%s.%N)
  echo "$c,$r,$s,$run,$(python3 -c "print(round($t1 - $t0, 3))")" >> "$csv"
done; done; done; done
rm -f $D/o.raw $D/in.raw
/usr/bin/python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cases = sorted({r['case'] for r in rows})
print("radius sync " + " ".join(f"{c:>6}_s" for c in cases) + "  cp/new (throughput ratio)")
for r in ("1", "3"):
    for s in ("0", "1"):
        m = {c: statistics.median(float(x['wall_s']) for x in rows if (x['case'], x['radius'], x['sync']) == (c, r, s)) for c in cases}
        print(f"{r:6} {s:4} " + " ".join(f"{m[c]:8.2f}" for c in cases) + f"  {m['cp']/m['new']:6.2f}")
PY
