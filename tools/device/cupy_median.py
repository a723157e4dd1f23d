# cupy_median.py N K: CuPy's median_filter of size K on an N x N u16 array already in device
# memory (best of 2 after a warm-up), the peer of bench_fft_median.sh's GPU medians.
import sys, time
import numpy as np
import cupy as cp
from cupyx.scipy import ndimage as cndi
n, k = int(sys.argv[1]), int(sys.argv[2])
x = cp.asarray(np.random.default_rng(1).integers(1, 65535, (n, n), dtype=np.uint16))
cndi.median_filter(x[:256, :256], size=k); cp.cuda.Device().synchronize()
ts = []
for _ in range(2):
    t = time.perf_counter(); y = cndi.median_filter(x, size=k); cp.cuda.Device().synchronize()
    ts.append(time.perf_counter() - t)
print("cupy median_filter u16 %dx%d size %d: %.3f s (%.3f Gpixel/s)" % (n, n, k, min(ts), n * n / min(ts) / 1e9))
