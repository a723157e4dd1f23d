"""ooc's array functions on CuPy arrays (device memory, no host round trip) against
cupyx.scipy.ndimage on the same arrays, the way dask-image filters CuPy blocks: a Gaussian and a
3-stage pipeline on an image, a Gaussian and a 3 x 3 x 3 median on a volume. Each case runs once
to warm up, then `--repeats` times, timed with the device synchronized; prints one line per tool
and case (median seconds, GB/s of input, the largest difference from cupyx's result) and a
PASS/FAIL line per case for the agreement. Needs CuPy and a GPU; run with the Python that has
both (PYTHONPATH naming a build of ooc for it)."""
import argparse
import statistics
import time

import numpy as np
import cupy as cp
import cupyx.scipy.ndimage as cnd

import ooc


def timed(fn, repeats):
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


# The pipeline's Gaussians reach ceil(3 sigma) (the stages' default radius): truncate=3 gives
# cupyx the same taps for the sigmas here.
def unsharp(x, sigma, amount):  # the pipeline's unsharp stage: x + amount (x - G x)
    return x + amount * (x - cnd.gaussian_filter(x, sigma, mode="reflect", truncate=3.0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)   # image side (f32)
    ap.add_argument("--depth", type=int, default=128)   # volume planes of 512 x 512
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--planes-scan", action="store_true", help="volumes of 16, 64, 256 planes")
    a = ap.parse_args()
    rng = np.random.default_rng(49)
    img = cp.asarray((rng.random((a.size, a.size), dtype=np.float32) * 200 - 50))
    vol = cp.asarray((rng.random((a.depth, 512, 512), dtype=np.float32) * 200 - 50))
    chain = "gaussian sigma=2 ! median size=3x3 ! unsharp sigma=1 amount=0.7"
    cases = [
        ("gaussian sigma=2 f64 sums", img,
         lambda: ooc.gaussian_filter(img, 2.0),
         lambda: cnd.gaussian_filter(img, 2.0, mode="reflect"), 1e-4),
        ("gaussian sigma=2 f32 sums", img,
         lambda: ooc.gaussian_filter(img, 2.0, precision="f32"),
         lambda: cnd.gaussian_filter(img, 2.0, mode="reflect"), 1e-4),
        ("pipeline " + chain, img,
         lambda: ooc.pipeline(img, chain),
         lambda: unsharp(cnd.median_filter(cnd.gaussian_filter(img, 2.0, mode="reflect",
                                                               truncate=3.0),
                                           size=3, mode="reflect"), 1.0, 0.7), 1e-4),
        ("volume gaussian sigma=1.5", vol,
         lambda: ooc.gaussian_filter(vol, 1.5, precision="f32"),
         lambda: cnd.gaussian_filter(vol, 1.5, mode="reflect"), 1e-4),
        ("volume median 3x3x3", vol,
         lambda: ooc.median_filter(vol, size=3),
         lambda: cnd.median_filter(vol, size=3, mode="reflect"), 0.0),
    ]
    if a.planes_scan:
        # A volume is one band a plane on the GPU: time against planes, for the cost of a plane.
        for depth in (16, 64, 256):
            v = cp.asarray(rng.random((depth, 512, 512), dtype=np.float32))
            t_g, _ = timed(lambda: ooc.gaussian_filter(v, 1.5, precision="f32"), a.repeats)
            t_m, _ = timed(lambda: ooc.median_filter(v, size=3), a.repeats)
            t_c, _ = timed(lambda: cnd.gaussian_filter(v, 1.5, mode="reflect"), a.repeats)
            print("planes %4d of 512x512: ooc gaussian %.2f ms (%.1f us a plane), median 3x3x3 "
                  "%.2f ms, cupyx gaussian %.2f ms" % (depth, 1e3 * t_g, 1e6 * t_g / depth,
                                                      1e3 * t_m, 1e3 * t_c), flush=True)
        return
    for name, x, mine, theirs, tol in cases:
        gb = x.nbytes / 1e9
        t_ooc, y = timed(mine, a.repeats)
        t_cpx, z = timed(theirs, a.repeats)
        diff = float(cp.abs(y.astype(cp.float64) - z.astype(cp.float64)).max())
        scale = float(cp.abs(z).max())
        print("%-60s %s ooc %.4f s (%.1f GB/s)  cupyx %.4f s (%.1f GB/s)  ooc/cupyx speed %.2fx  "
              "max|diff| %.3g" % (name, "x".join(map(str, x.shape)), t_ooc, gb / t_ooc, t_cpx,
                                  gb / t_cpx, t_cpx / t_ooc, diff), flush=True)
        print("%s agreement with cupyx: %s" % ("PASS" if diff <= tol * scale else "FAIL", name))


if __name__ == "__main__":
    main()
