#!/usr/bin/python3
"""CPU benchmark: oocconv against libvips convsep, OpenCV sepFilter2D and cp, side by side.

Same input file (in the page cache), same Gaussian (radius R, sigma R/3), same border rule where
the peer has it; the tools run interleaved, REPEATS times each, and medians are reported as ratios.
Usage: tools/bench/cpu_bench.py [--build build/release] [--size 16384] [--radius 16]
       [--repeats 5] [--threads 2] [--workdir /tmp/ooc-bench] [--out tools/bench/results/cpu]
"""
import argparse, csv, os, platform, shutil, statistics, subprocess, sys, time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--build", default="build/release")
p.add_argument("--size", type=int, default=16384)
p.add_argument("--radius", type=int, default=16)
p.add_argument("--repeats", type=int, default=5)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--workdir", default="/tmp/ooc-bench")
p.add_argument("--out", default="tools/bench/results/cpu")
a = p.parse_args()

oocconv = os.path.abspath(os.path.join(a.build, "oocconv"))
W = H = a.size
R = a.radius
os.makedirs(a.workdir, exist_ok=True)
os.makedirs(a.out, exist_ok=True)
src = os.path.join(a.workdir, "in.raw")
env = dict(os.environ, VIPS_CONCURRENCY=str(a.threads), OMP_NUM_THREADS=str(a.threads))


filter_only = []


def run(cmd, **kw):
    """Wall seconds and peak RSS (bytes) of a command, measured by GNU time from outside."""
    t = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True,
                       env=env, **kw)
    if t.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{t.stderr}")
    lines = t.stderr.strip().splitlines()
    wall, kb = lines[-1].split()
    for line in lines:  # the OpenCV script reports its in-memory filter time
        if line.startswith("filter_s "):
            filter_only.append(float(line.split()[1]))
    return float(wall), int(kb) * 1024


# Input: a synthetic f32 image written once (the identity filter turns synth: into a file).
if not os.path.exists(src) or os.path.getsize(src) != W * H * 4:
    subprocess.run([oocconv, "synth:noise", src, "--width", str(W), "--height", str(H),
                    "--taps", "1", "-q"], check=True)
vin = os.path.join(a.workdir, "in.v")
if not os.path.exists(vin):
    subprocess.run(["vips", "rawload", src, vin, str(W), str(H), "1", "--format", "float"],
                   check=True)
x = np.arange(-R, R + 1, dtype=np.float64)
taps = np.exp(-0.5 * (x / (R / 3.0)) ** 2)
taps /= taps.sum()
mask = os.path.join(a.workdir, "mask.mat")
with open(mask, "w") as f:
    f.write(f"{2 * R + 1} 1 1 0\n" + " ".join(f"{t:.17g}" for t in taps) + "\n")
cv_script = os.path.join(a.workdir, "cv_sep.py")
with open(cv_script, "w") as f:
    f.write(f"""import sys, time, numpy as np, cv2
cv2.setNumThreads({a.threads})
img = np.fromfile(sys.argv[1], dtype=np.float32).reshape({H}, {W})
x = np.arange(-{R}, {R} + 1, dtype=np.float64); k = np.exp(-0.5 * (x / ({R} / 3.0)) ** 2); k /= k.sum()
t = time.perf_counter()
out = cv2.sepFilter2D(img, cv2.CV_32F, k.astype(np.float32), k.astype(np.float32), borderType=cv2.BORDER_REFLECT)
sys.stderr.write(f"filter_s {{time.perf_counter() - t}}\\n")
out.tofile(sys.argv[2])
""")

out_ooc = os.path.join(a.workdir, "ooc.raw")
out_vips = os.path.join(a.workdir, "vips.v")
out_cv = os.path.join(a.workdir, "cv.raw")
out_cp = os.path.join(a.workdir, "cp.raw")
tools = {
    "oocconv": [oocconv, src, out_ooc, "--width", str(W), "--radius", str(R), "--threads",
                str(a.threads), "-q"],
    "vips convsep": ["vips", "convsep", vin, out_vips, mask, "--precision", "float"],
    "opencv sepFilter2D": ["/usr/bin/python3", cv_script, src, out_cv],
    "cp": ["cp", src, out_cp],
}
subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)  # into the page cache
res = {k: [] for k in tools}
for rep in range(a.repeats):
    for name, cmd in tools.items():
        for f in (out_ooc, out_vips, out_cv, out_cp):
            if os.path.exists(f):
                os.remove(f)
        wall, rss = run(cmd)
        res[name].append((wall, rss))

# Same work: oocconv's output against the peers' (interior rows; borders agree for reflect too).
subprocess.run(tools["oocconv"], check=True, env=env)
subprocess.run(tools["vips convsep"], check=True, env=env)
subprocess.run(tools["opencv sepFilter2D"], check=True, env=env, capture_output=True)
ooc = np.memmap(out_ooc, dtype=np.float32, mode="r").reshape(H, W)
vips = np.memmap(out_vips, dtype=np.float32, mode="r", offset=64, shape=(H, W))
cv = np.memmap(out_cv, dtype=np.float32, mode="r").reshape(H, W)
inner = (slice(R, H - R), slice(R, W - R))
diff_vips = float(np.abs(ooc[inner] - vips[inner]).max())
diff_cv = float(np.abs(ooc - cv).max())

mpix = W * H / 1e6
rows = []
for name, runs in res.items():
    wall = statistics.median(r[0] for r in runs)
    rss = statistics.median(r[1] for r in runs)
    rows.append((name, wall, mpix / wall, W * H * 4 / wall / 1e9, rss))
if filter_only:
    fo = statistics.median(filter_only)
    rows.append(("opencv filter only", fo, mpix / fo, W * H * 4 / fo / 1e9,
                 statistics.median(r[1] for r in res["opencv sepFilter2D"])))
ooc_wall = rows[0][1]
cp_wall = [r for r in rows if r[0] == "cp"][0][1]
stamp = time.strftime("%Y-%m-%d %H:%M")
csv_path = os.path.join(a.out, f"cpu_{W}x{H}_f32_r{R}.csv")
with open(csv_path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["tool", "case", "wall_s_median", "mpixel_s", "gb_s", "peak_rss_mib",
                "ratio_to_cp", "ratio_oocconv_speedup", "repeats", "date", "host"])
    for name, wall, mps, gbs, rss in rows:
        w.writerow([name, f"{W}x{H} f32 r{R} t{a.threads}", f"{wall:.3f}", f"{mps:.1f}",
                    f"{gbs:.3f}", f"{rss / 2**20:.1f}", f"{cp_wall / wall:.2f}",
                    f"{wall / ooc_wall:.2f}", a.repeats, stamp, platform.node()])
print(f"{W}x{H} f32, radius {R}, {a.threads} threads, median of {a.repeats}, input in page cache")
print(f"{'tool':20s} {'wall s':>8s} {'Mpix/s':>8s} {'GB/s':>7s} {'peak RSS':>10s} {'vs cp':>7s} {'oocconv x':>10s}")
for name, wall, mps, gbs, rss in rows:
    print(f"{name:20s} {wall:8.2f} {mps:8.1f} {gbs:7.2f} {rss / 2**20:8.1f}Mi {cp_wall / wall:7.2f} {wall / ooc_wall:10.2f}")
print(f"max |oocconv - vips| (interior) = {diff_vips:.3g}; max |oocconv - opencv| = {diff_cv:.3g}")
print(f"wrote {csv_path}")
for f in (out_ooc, out_vips, out_cv, out_cp):
    if os.path.exists(f):
        os.remove(f)
