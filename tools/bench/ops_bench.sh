#!/usr/bin/env bash
# Benchmarks of the 2-D convolution and of equalization against their peers on the same files,
# side by side, median of 3, every run timed through a sync (as the cp floor):
#   2-D:  oocconv --kernel (random K x K, rank > 1) vs vips conv (--precision float) and OpenCV
#         filter2D (whole process: read, filter, write), K = 3 7 15 31, f32 and u8;
#   eq:   ooceq vs vips hist_equal and cv2.equalizeHist (whole process), with cat and cp.
# Usage: tools/bench/ops_bench.sh [BUILD_DIR] [SIDE]   (default build/release, 8192)
set -euo pipefail
B=${1:-build/release}; N=${2:-8192}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3
median3() {  # median of three timings of "$@", in seconds
  local ts=()
  for _ in 1 2 3; do
    local t0; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; sync; ts+=("$(echo "$(date +%s.%N) - $t0" | bc)")
  done
  printf '%s\n' "${ts[@]}" | sort -g | sed -n 2p
}
"$B/oocgen" "$T/f.raw" --width "$N" --height "$N" --type f32 -q
"$B/oocgen" "$T/u.raw" --width "$N" --height "$N" --type u8 --pattern gaussian-spots -q
$PY - "$T" "$N" <<'PY'
import sys, numpy as np
t, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(1)
for k in (3, 7, 15, 31):
    m = rng.uniform(-1, 1, (k, k)); m /= np.abs(m).sum()
    np.savetxt(f"{t}/k{k}.txt", m)
    with open(f"{t}/k{k}.mat", "w") as f:  # libvips matrix: width height scale offset, rows
        f.write(f"{k} {k} 1 0\n" + "\n".join(" ".join(repr(v) for v in r) for r in m) + "\n")
    np.save(f"{t}/k{k}.npy", m)
with open(f"{t}/cv_filter.py", "w") as f:
    f.write("import sys, numpy as np, cv2\n"
            "src, dst, n, dt, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]\n"
            "a = np.fromfile(src, dt).reshape(n, n)\n"
            "out = cv2.filter2D(a, -1, np.load(k)[::-1, ::-1].astype(np.float32), borderType=cv2.BORDER_REFLECT)\n"
            "out.tofile(dst)\n")
with open(f"{t}/cv_eq.py", "w") as f:
    f.write("import sys, numpy as np, cv2\n"
            "n = int(sys.argv[3]); a = np.fromfile(sys.argv[1], np.uint8).reshape(n, n)\n"
            "cv2.equalizeHist(a).tofile(sys.argv[2])\n")
PY
echo "side $N; seconds, median of 3, each through a sync"
echo "case,oocconv,vips,opencv,cp"
for dt in f32 u8; do
  in=$T/f.raw; vin=$T/f.v; npdt=float32; vfmt=float
  [ $dt = u8 ] && in=$T/u.raw npdt=uint8 vfmt=uchar
  vips rawload "$in" "$T/in_$dt.v" "$N" "$N" 1 --format "$vfmt" >/dev/null
  cpt=$(median3 cp "$in" "$T/cp.raw")
  for k in 3 7 15 31; do
    o=$(median3 "$B/oocconv" "$in" "$T/o.raw" --width "$N" --type $dt --kernel "$T/k$k.txt" -q)
    v=$(median3 vips conv "$T/in_$dt.v" "$T/v.v" "$T/k$k.mat" --precision float)
    c=$(median3 $PY "$T/cv_filter.py" "$in" "$T/c.raw" "$N" $npdt "$T/k$k.npy")
    echo "$dt K$k,$o,$v,$c,$cpt"
  done
done
vips rawload "$T/u.raw" "$T/u.v" "$N" "$N" 1 --format uchar >/dev/null
e=$(median3 "$B/ooceq" "$T/u.raw" "$T/e.raw" --width "$N" -q)
v=$(median3 vips hist_equal "$T/u.v" "$T/ve.v")
c=$(median3 $PY "$T/cv_eq.py" "$T/u.raw" "$T/ce.raw" "$N")
cat_t=$(median3 cat "$T/u.raw")
cpt=$(median3 cp "$T/u.raw" "$T/cp.raw")
echo "equalize u8,$e,$v,$c,$cpt"
echo "cat u8,$cat_t"
"$B/ooceq" "$T/u.raw" "$T/e.raw" --width "$N" -q && $PY - "$T" "$N" <<'PY'
import sys, numpy as np, cv2
t, n = sys.argv[1], int(sys.argv[2])
a = np.fromfile(f"{t}/u.raw", np.uint8).reshape(n, n)
print("ooceq equals cv2.equalizeHist:", bool((np.fromfile(f"{t}/e.raw", np.uint8).reshape(n, n) == cv2.equalizeHist(a)).all()))
PY
