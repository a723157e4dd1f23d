#!/usr/bin/env python3
"""Zarr output benchmark, side by side in one run, medians of repeats, outputs on /dev/shm:
oocconv (Gaussian r2) writing an OME-Zarr store, level 0 alone and with --pyramid, and a flat raw
file; zarr-python 2.13 writing the same chunks and codec (512^2, blosc lz4 shuffle) from a memmap
of the unfiltered input (less work than ours), level 0 alone and with a pyramid of NumPy 2 x 2
means made level by level. Writes a CSV and prints the ratios.
Usage: tools/bench/zarr_bench.py --bin-dir build/cpu [--size 16384] [--repeats 3] [--csv OUT.csv]"""
import argparse, csv, os, shutil, statistics, subprocess, sys, tempfile, time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--bin-dir", required=True)
ap.add_argument("--size", type=int, default=16384)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--csv")
a = ap.parse_args()
tmp = tempfile.mkdtemp(prefix="ooc_zbench_", dir="/dev/shm")
src = os.path.join(tmp, "in.raw")
n = a.size
subprocess.run([os.path.join(a.bin_dir, "oocgen"), src, "--width", str(n), "--height", str(n),
                "--type", "u16", "--pattern", "gaussian-spots", "-q"], check=True)
conv = os.path.join(a.bin_dir, "oocconv")
base = [conv, src, None, "--width", str(n), "--type", "u16", "--radius", "2", "-q"]


def ooc(out, *extra):
    cmd = list(base)
    cmd[2] = out
    subprocess.run(cmd + list(extra), check=True)


def zarr_python(out, pyramid):
    import zarr
    from numcodecs import Blosc
    x = np.memmap(src, dtype="<u2", mode="r", shape=(n, n))
    g = zarr.open_group(out, mode="w")
    comp = Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)
    level = g.create_dataset("0", shape=x.shape, chunks=(512, 512), dtype=x.dtype,
                             compressor=comp, dimension_separator="/")
    step = 4096  # rows at a time, as a streaming writer would
    for y in range(0, n, step):
        level[y:y + step] = x[y:y + step]
    if pyramid:
        cur, k = level, 0
        while min(cur.shape) >= 256:
            k += 1
            nxt = g.create_dataset(str(k), shape=((cur.shape[0] + 1) // 2, (cur.shape[1] + 1) // 2),
                                   chunks=(512, 512), dtype=x.dtype, compressor=comp,
                                   dimension_separator="/")
            rows = 4096 >> min(k, 6)
            for y in range(0, cur.shape[0], 2 * rows):
                f = cur[y:y + 2 * rows].astype(np.float64)
                if f.shape[0] % 2:
                    f = np.concatenate([f, f[-1:]], 0)
                if f.shape[1] % 2:
                    f = np.concatenate([f, f[:, -1:]], 1)
                m = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) / 4
                nxt[y // 2:y // 2 + m.shape[0]] = np.rint(m).astype(x.dtype)
            cur = nxt


cases = [
    ("ooc level 0", lambda o: ooc(o)),
    ("ooc --pyramid", lambda o: ooc(o, "--pyramid")),
    ("ooc raw (no Zarr)", lambda o: ooc(o[:-5] + ".raw")),
    ("zarr-python level 0 (copy, no filter)", lambda o: zarr_python(o, False)),
    ("zarr-python pyramid (copy, no filter)", lambda o: zarr_python(o, True)),
]
rows = []
for name, fn in cases:
    times, size = [], 0
    for r in range(a.repeats):
        out = os.path.join(tmp, "out.zarr")
        shutil.rmtree(out, ignore_errors=True)
        for f in (out[:-5] + ".raw",):
            if os.path.exists(f):
                os.unlink(f)
        t = time.perf_counter()
        fn(out)
        times.append(time.perf_counter() - t)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp)
                   for f in fs if not f.startswith("in."))
        shutil.rmtree(out, ignore_errors=True)
    med = statistics.median(times)
    rows.append({"case": name, "median_s": round(med, 3), "runs": " ".join(f"{t:.3f}" for t in times),
                 "output_bytes": size})
    print(f"{name:45s} {med:7.3f} s  {size / 2**20:8.1f} MiB", flush=True)
ref = {r["case"]: r["median_s"] for r in rows}
print(f"pyramid / level 0 alone: {ref['ooc --pyramid'] / ref['ooc level 0']:.2f}x")
print(f"zarr-python pyramid / ooc --pyramid: "
      f"{ref['zarr-python pyramid (copy, no filter)'] / ref['ooc --pyramid']:.2f}x")
if a.csv:
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
shutil.rmtree(tmp, ignore_errors=True)
