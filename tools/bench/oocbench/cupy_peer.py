# The CuPy peer the morphology and fft cases share (one script, two operations), and the
# note its rows carry.
import statistics

CUPY_PEERS_PY = r"""
# The CuPy peer of a GPU row: the image from the page cache into host memory, then to the GPU, the
# operation, and back to host memory; prints the in-process seconds of the warm repeat (transfers
# included, file read and CUDA start excluded) for the bench's note.
import sys, time, numpy as np, cupy as cp
path, W, H, dt, op, arg = sys.argv[1:7]
W, H = int(W), int(H)
x = np.fromfile(path, dtype=dt).reshape(H, W)
if op == "fft":
    import cupyx.scipy.signal as csig
    k = cp.asarray(np.load(arg).astype(np.float32))
    r = k.shape[0] // 2
    def f(g):
        return csig.fftconvolve(cp.pad(g, r, mode="symmetric"), k, mode="valid")
else:
    import cupyx.scipy.ndimage as cnd
    size = int(arg)
    fn = {"minimum": cnd.minimum_filter, "maximum": cnd.maximum_filter, "opening": cnd.grey_opening,
          "median": cnd.median_filter}[op]
    f = lambda g: fn(g, size=size, mode="reflect")
best = None
for rep in range(2):                      # the first repeat compiles the kernels
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    y = cp.asnumpy(f(cp.asarray(x)))
    cp.cuda.runtime.deviceSynchronize()
    best = time.perf_counter() - t0
assert y.shape == x.shape
print("inner_s", best)
"""


def cupy_rows(b, res, tools, name):
    """The in-process seconds the CuPy peer printed (its warm repeat), as a note."""
    inner = [float(t.out.split()[-1]) for t in res.get(name, []) if t.out.startswith("inner_s")]
    if inner:
        tools[name]["note"] = (tools[name].get("note", "") +
                               f"; in process, warm, transfers included: {statistics.median(inner):.3f} s").lstrip("; ")
