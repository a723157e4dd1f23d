# Case `nodata` (issue 48): masked runs (--nodata) beside the same unmasked run, normalized
# convolution against astropy's convolve / convolve_fft with nan_treatment='interpolate', and a COG
# with overviews of a u16 scene with nodata borders against gdal_translate -of COG (average).
import os, shutil, statistics, subprocess, sys
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

# A u16 scene as a satellite's: a tilted footprint of smooth values with noise (1..65535) inside,
# nodata 0 outside (the borders), cloud holes of 0 inside; written in row blocks.
SCENE_PY = r"""
import sys, numpy as np
path, W, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(48)
cy, cx = rng.integers(0, H, 200), rng.integers(0, W, 200)
r2 = rng.uniform(20, 120, 200) ** 2
holes = 0
with open(path, "wb") as f:
    for y0 in range(0, H, 512):
        yy, xx = np.mgrid[y0:min(H, y0 + 512), 0:W].astype(np.float64)
        u, v = (xx - W / 2) * 0.96 + (yy - H / 2) * 0.28, (yy - H / 2) * 0.96 - (xx - W / 2) * 0.28
        inside = (np.abs(u) < 0.40 * W) & (np.abs(v) < 0.42 * H)
        val = 20000 + 15000 * np.sin(xx / 300) * np.cos(yy / 470) + rng.normal(0, 800, xx.shape)
        x = np.clip(np.round(val), 1, 65535).astype(np.uint16)
        x[~inside] = 0
        for a, b, r in zip(cy, cx, r2):  # within each disc's box
            ys = slice(max(a - 120 - y0, 0), max(min(a + 121 - y0, x.shape[0]), 0))
            xs = slice(max(b - 120, 0), min(b + 121, W))
            if ys.stop > ys.start:
                x[ys, xs][(yy[ys, xs] - a) ** 2 + (xx[ys, xs] - b) ** 2 < r] = 0
        holes += int(np.sum(x == 0))
        x.tofile(f)
print(holes / (W * H))
"""

# The levels of two COGs: each against the masked 2 x 2 mean of its own level above (GDAL's
# rounded half up, ooc's half to even), and against each other (holes, and values off ties).
COMPARE_PY = r"""
import sys, numpy as np, tifffile
ours, gdal = sys.argv[1:3]
def mean(a):
    s = np.zeros((a.shape[0] // 2, a.shape[1] // 2)); n = np.zeros(s.shape)
    for b in (a[0::2, 0::2], a[1::2, 0::2], a[0::2, 1::2], a[1::2, 1::2]):
        v = b.astype(np.float64); ok = v != 0; s += np.where(ok, v, 0); n += ok
    with np.errstate(all="ignore"):
        return s / n, n
with tifffile.TiffFile(ours) as a, tifffile.TiffFile(gdal) as b:
    A = [p.asarray() for p in a.pages]; B = [p.asarray() for p in b.pages]
out = [f"{len(A)} / {len(B)} levels", "level 0 equal" if np.array_equal(A[0], B[0]) else "LEVEL 0 DIFFERS"]
for k in range(1, min(len(A), len(B))):
    ma, na = mean(A[k - 1]); mb, nb = mean(B[k - 1])
    own_a = np.array_equal(A[k], np.where(na > 0, np.round(ma), 0).astype(np.uint16))
    own_b = np.array_equal(B[k], np.where(nb > 0, np.floor(mb + 0.5), 0).astype(np.uint16))
    holes = np.array_equal(A[k] == 0, B[k] == 0)
    tie = (na > 0) & (ma - np.floor(ma) == 0.5)
    off = np.mean(A[k][~tie] == B[k][~tie]) if k == 1 else np.mean(A[k] == B[k])
    out.append(f"L{k}: ooc {'=' if own_a else '!='} half-even mean, GDAL {'=' if own_b else '!='} "
               f"half-up mean, holes {'equal' if holes else 'DIFFER'}, "
               + (f"{off:.4%} equal off ties ({tie.mean():.2%} ties)" if k == 1 else f"{off:.2%} equal"))
print("; ".join(out))
"""


def cpu_seconds(timings):
    """The median CPU seconds (user + sys, from the child's rusage) of runs: a figure that other
    processes on a small shared machine disturb less than the wall time."""
    cpu = [t.cpu for t in timings or [] if t.cpu is not None]
    return statistics.median(cpu) if cpu else None


def case_nodata(b):
    run, rows = b.exe("oocrun"), []
    for name, text in (("nodata_holes.py", HOLES_PY), ("nodata_astropy.py", ASTROPY_PY),
                       ("nodata_scene.py", SCENE_PY), ("nodata_compare.py", COMPARE_PY)):
        open(os.path.join(b.work, name), "w").write(text)
    threads = str(b.a.threads)
    jobs = b.strs("jobs", "cost,astropy,cog")  # --jobs: any part alone
    # 1. The cost of the mask: masked against unmasked, the same stage, one run, rotating order.
    for W, H in b.images([(4096, 4096)]) if "cost" in jobs else []:
        src = os.path.join(b.work, f"nodata_{W}x{H}.raw")
        kern = os.path.join(b.work, "nodata_k63.npy")
        frac = b.capture([sys.executable, os.path.join(b.work, "nodata_holes.py"), src, str(W), str(H),
                          "0.066", "-9999", kern])
        if not os.path.exists(src):
            raise RuntimeError(f"{os.path.join(b.work, 'nodata_holes.py')} made no {src} (NumPy missing?)")
        b.warm(src)
        # The four: separable, 2-D FFT (convolve's 63 x 63 Gaussian by FFT), median, and
        # the pyramid (4 levels of 2 x 2 means into a tiled TIFF in the work folder, a copy of
        # the image as its stage).
        pyr = os.path.join(b.work, "nodata_pyramid.tif")
        for device, why in b.devices():
            for label, stage, dst, extra in (
                    ("gaussian sigma=2", "gaussian sigma=2", "null:", []),
                    ("uniform size=5", "uniform size=5", "null:", []),
                    ("median size=5", "median size=5", "null:", []),
                    ("median size=3", "median size=3", "null:", []),
                    # The masked FFT's band buffers of a 16384-wide image need more than the
                    # default limit of a 16-core host's plan; both runs get the same limit.
                    ("convolve 63x63 method=fft", f"convolve kernel={kern} method=fft", "null:",
                     ["--mem-limit", "4G"] if W > 8192 else []),
                    ("pyramid, 4 levels", "convert type=f32", pyr, ["--levels", "4", "--tile", "512"])):
                params = f"{label} f32 {W}x{H}, {float(frac or 0):.1%} holes, --device {device}"
                common = [run, src, dst, stage, "--width", str(W), "--type", "f32", "--threads", threads,
                          "--device", device, "-q", *extra]
                masked = common + ["--nodata", "-9999"]
                # A stage the device refuses under --nodata gets a row that says so; the probe is also
                # the warm-up run.
                skip = why
                if not skip:
                    probe = subprocess.run(masked, capture_output=True, text=True, env=b.env)
                    b.rm(pyr)
                    if probe.returncode != 0:
                        skip = f"refused (exit {probe.returncode}): " + " ".join(probe.stderr.split())[-240:]
                if skip:
                    rows.append(b.row("nodata", "oocrun --nodata -9999", params, W * H * 4, note=skip))
                    continue
                tools = {"oocrun unmasked": dict(cmd=common), "oocrun --nodata -9999": dict(cmd=masked)}
                res = b.measure(tools)
                base, cpu0 = med(res["oocrun unmasked"]), cpu_seconds(res["oocrun unmasked"])
                for n in tools:
                    cpu = cpu_seconds(res[n])
                    rows.append(b.row("nodata", n, params, W * H * 4, walls(res[n]), "oocrun unmasked", base,
                                      rss(res[n]), "", "ratio = unmasked / this row" + (
                                          f"; CPU {cpu:.3f} s ({cpu / cpu0:.2f}x the unmasked)" if cpu and cpu0
                                          else "")))
        b.rm(src)
        b.rm(pyr)
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
    # 3. A COG with overviews of a u16 scene with nodata borders: ooc against GDAL, the same
    # deflate level, predictor and 512 tiles, both on the same threads.
    if "cog" in jobs and shutil.which("gdal_translate"):
        for W, H in b.images([(8192, 8192)]):
            src = os.path.join(b.work, f"nodata_scene_{W}x{H}.raw")
            frac = b.capture([sys.executable, os.path.join(b.work, "nodata_scene.py"), src, str(W), str(H)])
            with open(src[:-4] + ".hdr", "w") as f:  # ENVI header: GDAL reads the raw file as it is
                f.write(f"ENVI\nsamples = {W}\nlines = {H}\nbands = 1\nheader offset = 0\n"
                        f"file type = ENVI Standard\ndata type = 12\ninterleave = bsq\nbyte order = 0\n")
            levels = 0
            while max(W, H) >> levels > 512:  # GDAL's COG: overviews until one tile holds the image
                levels += 1
            gdal = os.path.join(b.work, "nodata_gdal.tif")
            ours = {lv: os.path.join(b.work, f"nodata_ooc{lv}.tif") for lv in (6, 1)}
            # ooc at GDAL's deflate level (6), and at level 1: libdeflate's level 1 makes this scene's
            # file no larger than level 6 does (noisy u16: little for the slower levels to find), so
            # "equal compression" read as "a file no larger than GDAL's" is met at level 1 too.
            tools = {f"oocrun --cog --nodata 0 --level {lv}": dict(cmd=[
                run, src, ours[lv], "convert type=u16", "--width", str(W), "--type", "u16", "--nodata", "0",
                "--cog", "--levels", str(levels), "--tile", "512", "--compress", "deflate", "--level", str(lv),
                "--predictor", "horizontal", "--threads", threads, "--device", "cpu", "-q"],
                out=ours[lv], sync=True) for lv in ours}
            tools["gdal_translate -of COG -r average"] = dict(cmd=[
                "gdal_translate", "-q", "-of", "COG", "-r", "average", "-a_nodata", "0", "-co",
                "RESAMPLING=AVERAGE", "-co", "BLOCKSIZE=512", "-co", "COMPRESS=DEFLATE", "-co", "LEVEL=6",
                "-co", "PREDICTOR=YES", "-co", f"NUM_THREADS={threads}", src, gdal], out=gdal, sync=True)
            b.warm(src)
            res = b.measure(tools, repeats=min(b.a.repeats, 3))
            check = b.capture([sys.executable, os.path.join(b.work, "nodata_compare.py"), ours[6], gdal])
            base = med(res["gdal_translate -of COG -r average"])
            gsize = os.path.getsize(gdal) if os.path.exists(gdal) else 0
            gcpu = cpu_seconds(res["gdal_translate -of COG -r average"])
            for n, t in tools.items():
                size = os.path.getsize(t["out"]) if os.path.exists(t["out"]) else 0
                cpu = cpu_seconds(res[n]) or 0
                lv = n.split("--level ")[1] if "--level" in n else "6"
                rows.append(b.row("nodata", n, f"COG u16 {W}x{H}, {float(frac or 0):.1%} nodata, deflate {lv}, "
                                  f"predictor 2, tile 512, {levels} overviews", W * H * 2, walls(res[n]),
                                  "gdal_translate -of COG -r average", base, rss(res[n]),
                                  check if n.startswith("oocrun") else "",
                                  f"{size / 1e6:.2f} MB" + (f" ({size / gsize:.4f} of GDAL's)" if gsize and
                                                            n.startswith("oocrun") else "")
                                  + f"; CPU {cpu:.2f} s" + (f" (GDAL's / this: {gcpu / cpu:.2f}x)" if gcpu and cpu
                                                             and n.startswith("oocrun") else "")
                                  + "; through sync; ratio = GDAL / this row"))
            b.rm(src, src[:-4] + ".hdr", gdal, *ours.values())
    b.write("nodata", rows, f"masked (--nodata) against unmasked runs of the same stage, normalized "
            f"convolution against astropy (nan_treatment='interpolate'), page cache to null:, and a COG "
            f"against GDAL's (page cache to file, through sync); median of {b.a.repeats}")
