#!/usr/bin/env python3
"""Checks sampled bands of an oocconv output against a float64 reference computed with numpy alone
(for machines without scipy): Gaussian of radius R (sigma R/3), reflect border, x then y.
Usage: check_bands.py IN OUT --width W --type f32|u8 --radius R [--bands 8] [--band-rows 64]
Exit 0 when every sampled sample is within tolerance (f32: 1e-5 relative to the local magnitude;
integers: 1)."""
import argparse, sys
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("inp"); p.add_argument("out")
p.add_argument("--width", type=int, required=True)
p.add_argument("--type", default="f32")
p.add_argument("--radius", type=int, required=True)
p.add_argument("--bands", type=int, default=8)
p.add_argument("--band-rows", type=int, default=64)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
dt = {"f32": np.float32, "u8": np.uint8, "u16": np.uint16, "f64": np.float64}[a.type]
W, R = a.width, a.radius
src = np.memmap(a.inp, dtype=dt, mode="r").reshape(-1, W)
dst = np.memmap(a.out, dtype=dt, mode="r").reshape(-1, W)
H = src.shape[0]
assert dst.shape == src.shape, (dst.shape, src.shape)
x = np.arange(-R, R + 1, dtype=np.float64)
w = np.exp(-0.5 * (x / (R / 3.0)) ** 2) if R > 0 else np.ones(1)
w /= w.sum()

def reflect(i, n):
    i = np.mod(i, 2 * n)
    return np.where(i < n, i, 2 * n - 1 - i)

rng = np.random.default_rng(a.seed)
starts = sorted(set([0, H - a.band_rows] + list(rng.integers(0, H - a.band_rows, a.bands - 2))))
worst = 0.0
for y0 in starts:
    rows = reflect(np.arange(y0 - R, y0 + a.band_rows + R), H)
    band = src[rows].astype(np.float64)                       # (B + 2R, W)
    cols = reflect(np.arange(-R, W + R), W)
    padded = band[:, cols]                                    # (B + 2R, W + 2R)
    rowpass = sum(w[k] * padded[:, k:k + W] for k in range(2 * R + 1))
    ref = sum(w[k] * rowpass[k:k + a.band_rows] for k in range(2 * R + 1))
    got = dst[y0:y0 + a.band_rows].astype(np.float64)
    if np.issubdtype(dt, np.integer):
        err = np.abs(got - np.clip(np.rint(ref), np.iinfo(dt).min, np.iinfo(dt).max)).max()
        bad = err > 1
    else:
        scale = np.abs(ref) + np.abs(band).max()
        err = (np.abs(got - ref) / scale).max()
        bad = err > 1e-5
    worst = max(worst, float(err))
    print(f"band at row {y0:>8}: max error {err:.3g}{'  FAIL' if bad else ''}")
    if bad:
        sys.exit(1)
print(f"{len(starts)} bands of {a.band_rows} rows checked, worst error {worst:.3g}: OK")
