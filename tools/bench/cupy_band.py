#!/usr/bin/env python3
"""Kernel-only peer on the GPU machine: CuPy's cupyx.scipy.ndimage.convolve1d along x then y on one
band already in device memory (the same band shape as ooc_gpu_stages), timed with CUDA events.
With IN and OURS (a raw f32 band and oocconv's output for it, reflect border), the band is IN and
CuPy's result is compared with OURS.
Usage: cupy_band.py WIDTH ROWS RADIUS [IN OURS]"""
import sys, statistics
import numpy as np
import cupy as cp
import cupyx.scipy.ndimage as nd

W = int(sys.argv[1]) if len(sys.argv) > 1 else 65536
ROWS = int(sys.argv[2]) if len(sys.argv) > 2 else 256
R = int(sys.argv[3]) if len(sys.argv) > 3 else 16
x = np.arange(-R, R + 1, dtype=np.float64)
w = np.exp(-0.5 * (x / (R / 3.0)) ** 2); w /= w.sum()
wd = cp.asarray(w.astype(np.float32))
if len(sys.argv) > 5:
    band = cp.asarray(np.fromfile(sys.argv[4], dtype=np.float32).reshape(ROWS + 2 * R, W))
else:
    band = cp.random.random((ROWS + 2 * R, W), dtype=cp.float32) + 0.5
def run():
    return nd.convolve1d(nd.convolve1d(band, wd, axis=1, mode="reflect"), wd, axis=0, mode="reflect")
for _ in range(3): run()
times = []
for _ in range(10):
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record(); run(); b.record(); b.synchronize()
    times.append(cp.cuda.get_elapsed_time(a, b))
ms = statistics.median(times)
gb = (band.nbytes + ROWS * W * 4) / 1e9
check = ""
if len(sys.argv) > 5:
    ours = np.fromfile(sys.argv[5], dtype=np.float32).reshape(ROWS + 2 * R, W)
    diff = float(np.abs(cp.asnumpy(run()) - ours).max())
    check = f", max |cupy - oocconv| {diff:.3g}"
print(f"cupy convolve1d x then y, band {W} x {ROWS} + 2 x {R} halo f32: {ms:.3f} ms/band, "
      f"{gb / (ms / 1e3):.1f} GB/s (input + output bytes){check}, cupy {cp.__version__}")
