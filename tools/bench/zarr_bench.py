#!/usr/bin/env python3
"""Zarr output benchmark, side by side in one run, medians of repeats, outputs on /dev/shm:
oocconv (Gaussian r2) writing an OME-Zarr store, level 0 alone and with --pyramid, and a flat raw
file; zarr-python 2.13 writing the same chunks and codec (512^2, blosc lz4 shuffle) from a memmap
of the unfiltered input (less work than ours), level 0 alone and with a pyramid of NumPy 2 x 2
means made level by level. Writes a CSV and prints the ratios.
With --parts N: the same store written by N processes (--part i/N, --threads T/N each, at once)
then --finish, against one process on T threads (--threads, default all cores), level 0 and
--pyramid, each checked byte-identical to the one-process store. zarr-python rows are left out
where it is not installed.
Usage: tools/bench/zarr_bench.py --bin-dir build/cpu [--size 16384] [--repeats 3] [--csv OUT.csv]
                                 [--threads T] [--parts N] [--compress CODEC]"""
import argparse, csv, os, shutil, statistics, subprocess, sys, tempfile, time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--bin-dir", required=True)
ap.add_argument("--size", type=int, default=16384)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--csv")
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--parts", type=int, default=0)
ap.add_argument("--compress", default="blosc")
ap.add_argument("--format", choices=["zarr", "tif"], default="zarr",
                help="tif: the ooc rows write a 512-tiled TIFF (SubIFD levels with --pyramid)")
a = ap.parse_args()
tmp = tempfile.mkdtemp(prefix="ooc_zbench_", dir="/dev/shm")
src = os.path.join(tmp, "in.raw")
n = a.size
subprocess.run([os.path.join(a.bin_dir, "oocgen"), src, "--width", str(n), "--height", str(n),
                "--type", "u16", "--pattern", "gaussian-spots", "-q"], check=True)
conv = os.path.join(a.bin_dir, "oocconv")
base = [conv, src, None, "--width", str(n), "--type", "u16", "--radius", "2", "-q"]
codec = ([] if a.compress == "blosc" else ["--compress", a.compress]) + (
    ["--tile", "512"] if a.format == "tif" else [])
EXT = "." + a.format


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)


def ooc(out, *extra):
    cmd = list(base)
    cmd[2] = out
    raw = out.endswith(".raw")  # the flat file: no codec, no tiles
    subprocess.run(cmd + ["--threads", str(a.threads)] + ([] if raw else codec) + list(extra), check=True)


def ooc_parts(out, *extra):
    """N processes at once, each a part on its share of the threads, then --finish."""
    t = max(a.threads // a.parts, 1)
    procs = []
    for i in range(a.parts):
        cmd = list(base)
        cmd[2] = out
        procs.append(subprocess.Popen(cmd + ["--threads", str(t), "--part", f"{i}/{a.parts}"] + codec +
                                      list(extra)))
    if any(p.wait() for p in procs):
        raise SystemExit("a part failed")
    subprocess.run([conv, "--finish", out, "-q"], check=True)


def same_store(x, y):
    """Byte-identical stores (every file, same names) or files."""
    if os.path.isfile(x):
        return open(x, "rb").read() == open(y, "rb").read()
    files = lambda r: sorted(os.path.relpath(os.path.join(d, f), r) for d, _, fs in os.walk(r) for f in fs)
    if files(x) != files(y):
        return False
    return all(open(os.path.join(x, f), "rb").read() == open(os.path.join(y, f), "rb").read() for f in files(x))


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
    ("ooc raw (no Zarr)", lambda o: ooc(o[:-len(EXT)] + ".raw")),
]
if a.parts:
    cases += [(f"ooc level 0, {a.parts} parts", lambda o: ooc_parts(o)),
              (f"ooc --pyramid, {a.parts} parts", lambda o: ooc_parts(o, "--pyramid"))]
try:
    if a.format != "zarr":
        raise ImportError
    import zarr  # noqa: F401
    cases += [("zarr-python level 0 (copy, no filter)", lambda o: zarr_python(o, False)),
              ("zarr-python pyramid (copy, no filter)", lambda o: zarr_python(o, True))]
except ImportError:
    print("zarr-python not installed (or a TIFF run): its rows are left out", flush=True)
# The parts' stores against one process's, once, before the timed runs.
if a.parts:
    for extra in ([], ["--pyramid"]):
        # One name in two folders: the store's name is in its .zattrs.
        one, many = os.path.join(tmp, "one", "s" + EXT), os.path.join(tmp, "many", "s" + EXT)
        os.makedirs(os.path.dirname(one), exist_ok=True), os.makedirs(os.path.dirname(many), exist_ok=True)
        ooc(one, *extra)
        ooc_parts(many, *extra)
        print(f"{a.parts} parts {' '.join(extra) or 'level 0'}: "
              f"{'identical to one process' if same_store(one, many) else 'MISMATCH with one process'}",
              flush=True)
        remove(one), remove(many)
rows = []
for name, fn in cases:
    times, size = [], 0
    for r in range(a.repeats):
        out = os.path.join(tmp, "out" + EXT)
        remove(out)
        for f in (out[:-len(EXT)] + ".raw",):
            if os.path.exists(f):
                os.unlink(f)
        t = time.perf_counter()
        fn(out)
        times.append(time.perf_counter() - t)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp)
                   for f in fs if not f.startswith("in."))
        remove(out)
    med = statistics.median(times)
    rows.append({"case": name, "median_s": round(med, 3), "runs": " ".join(f"{t:.3f}" for t in times),
                 "output_bytes": size})
    print(f"{name:45s} {med:7.3f} s  {size / 2**20:8.1f} MiB", flush=True)
ref = {r["case"]: r["median_s"] for r in rows}
print(f"pyramid / level 0 alone: {ref['ooc --pyramid'] / ref['ooc level 0']:.2f}x")
if a.parts:
    print(f"one process / {a.parts} parts: level 0 {ref['ooc level 0'] / ref[f'ooc level 0, {a.parts} parts']:.2f}x, "
          f"pyramid {ref['ooc --pyramid'] / ref[f'ooc --pyramid, {a.parts} parts']:.2f}x")
if "zarr-python pyramid (copy, no filter)" in ref:
    print(f"zarr-python pyramid / ooc --pyramid: "
          f"{ref['zarr-python pyramid (copy, no filter)'] / ref['ooc --pyramid']:.2f}x")
if a.csv:
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
shutil.rmtree(tmp, ignore_errors=True)
