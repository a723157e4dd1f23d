# Case `nodata` (issue 48): masked runs (--nodata) beside the same unmasked run, and normalized
# convolution against astropy's convolve / convolve_fft with nan_treatment='interpolate'.
import os, sys
from ..common import med, python_has, rss, walls

# f32 noise in [1, 100) with holes: blobs and stripes (frac of the samples, about), as the value
# `nd` (a number or nan). Also a 63 x 63 Gaussian kernel file for convolve.
HOLES_PY = r"""
import sys, numpy as np
path, W, H, frac, nd, kfile = sys.argv[1:7]
W, H, frac, nd = int(W), int(H), float(frac), float(nd)
rng = np.random.default_rng(48)
x = rng.uniform(1, 100, (H, W)).astype(np.float32)
for y0 in range(0, H, 64):                  # blobs: discs in a fraction of 64-row bands at a time
    n = int(W * 64 * frac * 0.7 / (np.pi * 36))
    cy, cx = rng.integers(y0, min(H, y0 + 64), n), rng.integers(0, W, n)
    yy, xx = np.mgrid[-6:7, -6:7]
    disc = yy ** 2 + xx ** 2 < 36
    for a, b in zip(cy, cx):
        ys, xs = slice(max(a - 6, 0), min(a + 7, H)), slice(max(b - 6, 0), min(b + 7, W))
        d = disc[ys.start - a + 6: ys.stop - a + 6, xs.start - b + 6: xs.stop - b + 6]
        x[ys, xs][d] = nd
step = int(3 / (frac * 0.3))                 # stripes: 3-pixel columns and rows, 30% of the holes
for s in range(step // 2, W, step):
    x[:, s:s + 3] = nd
for s in range(step // 3, H, 2 * step):
    x[s:s + 3, :] = nd
x.tofile(path)
k = np.exp(-((np.arange(63) - 31) ** 2) / (2 * 10.0 ** 2))
np.save(kfile, np.outer(k, k) / np.outer(k, k).sum())
print(float(np.mean(np.isnan(x) | (x == nd))))
"""

ASTROPY_PY = r"""
import sys, time, numpy as np
path, W, H, what, part = sys.argv[1:6]
W, H, part = int(W), int(H), int(part)
from astropy.convolution import convolve, convolve_fft, Gaussian2DKernel
x = np.fromfile(path, dtype=np.float32).reshape(H, W)[: H // part]
if what.startswith("gaussian"):
    k = Gaussian2DKernel(2, x_size=17, y_size=17).array
else:
    k = np.load(what)
f = convolve_fft if sys.argv[6] == "fft" else convolve
f(x, k, nan_treatment="interpolate", boundary="fill" if sys.argv[6] == "fft" else "extend",
  normalize_kernel=True)
"""


def case_nodata(b):
    run, rows = b.exe("oocrun"), []
    for name, text in (("nodata_holes.py", HOLES_PY), ("nodata_astropy.py", ASTROPY_PY)):
        open(os.path.join(b.work, name), "w").write(text)
    threads = str(b.a.threads)
    jobs = b.strs("jobs", "cost,astropy")  # --jobs: either part alone
    # 1. The cost of the mask: masked against unmasked, the same stage, one run, rotating order.
    for W, H in b.images([(4096, 4096)]) if "cost" in jobs else []:
        src = os.path.join(b.work, f"nodata_{W}x{H}.raw")
        kern = os.path.join(b.work, "nodata_k63.npy")
        frac = b.capture([sys.executable, os.path.join(b.work, "nodata_holes.py"), src, str(W), str(H),
                          "0.066", "-9999", kern])
        b.warm(src)
        for stage in ("gaussian sigma=2", "uniform size=5", "median size=5", "median size=3"):
            common = [run, src, "null:", stage, "--width", str(W), "--type", "f32", "--threads", threads,
                      "--device", "cpu", "-q"]
            tools = {"oocrun unmasked": dict(cmd=common), "oocrun --nodata -9999": dict(cmd=common + ["--nodata", "-9999"])}
            res = b.measure(tools)
            base = med(res["oocrun unmasked"])
            label = stage
            for n in tools:
                rows.append(b.row("nodata", n, f"{label} f32 {W}x{H}, {float(frac or 0):.1%} holes", W * H * 4,
                                  walls(res[n]), "oocrun unmasked", base, rss(res[n]), "",
                                  "ratio = unmasked / this row"))
        b.rm(src)
    # 2. Against astropy (interpolate: holes filled from their neighbours, as fill=true).
    if python_has("astropy") and "astropy" in jobs:
        W = H = 8192
        src = os.path.join(b.work, f"nodata_nan_{W}x{H}.raw")
        kern = os.path.join(b.work, "nodata_k63.npy")
        frac = b.capture([sys.executable, os.path.join(b.work, "nodata_holes.py"), src, str(W), str(H),
                          "0.10", "nan", kern])
        b.warm(src)
        for label, stage, what in (("gaussian sigma=2 (17x17)", "gaussian sigma=2 fill=true", "gaussian"),
                                   ("63x63 kernel", f"convolve kernel={kern} fill=true", kern)):
            common = [run, src, "null:", stage, "--width", str(W), "--type", "f32", "--threads", threads,
                      "--device", "cpu", "--nodata", "nan", "-q"]
            part = 8 if what == "gaussian" else 64
            ap = os.path.join(b.work, "nodata_astropy.py")
            tools = {"oocrun --nodata nan": dict(cmd=common),
                     f"astropy convolve (1/{part}, scaled)": dict(
                         cmd=[sys.executable, ap, src, str(W), str(H), what, str(part), "direct"]),
                     "astropy convolve_fft (1/8, scaled)": dict(
                         cmd=[sys.executable, ap, src, str(W), str(H), what, "8", "fft"])}
            res = b.measure(tools, repeats=min(b.a.repeats, 3))
            base = med(res["oocrun --nodata nan"])
            for n in tools:
                scale = int(n.split("(1/")[1].split(",")[0]) if "(1/" in n else 1
                rows.append(b.row("nodata", n, f"{label} f32 {W}x{H}, {float(frac or 0):.1%} NaN, interpolate",
                                  W * H * 4, [t * scale for t in walls(res[n])], "oocrun --nodata nan", base,
                                  rss(res[n]), "", "whole process; astropy on a part of the rows, time scaled"
                                  if scale > 1 else "whole process"))
        b.rm(src)
    b.write("nodata", rows, f"masked (--nodata) against unmasked runs of the same stage, and normalized "
            f"convolution against astropy (nan_treatment='interpolate'), page cache to null:, median of "
            f"{b.a.repeats}")
