# Case `volumes`: a volume filtered in 3-D by oocrun (from a .npy in the page cache to null:)
# against scipy.ndimage in 3-D on the same array in memory, and against oocrun's 2-D filter of the
# same bytes (--planes): the 3-D Gaussian and the medians 3x3x3 and 5x5x5. scipy runs on a slab of
# the volume (its time scaled to the whole), as its median takes minutes on the whole.
import json, os, sys
from ..common import med, python_has, rss, walls

SCIPY_PY = r"""
import sys, time, numpy as np
path, op, size, part = sys.argv[1:5]
size, part = float(size), int(part)
x = np.load(path, mmap_mode="r")
x = np.ascontiguousarray(x[: max(1, x.shape[0] // part)])   # a slab: the caller scales by `part`
import scipy.ndimage as ndi
t = time.perf_counter()
if op == "gaussian":
    ndi.gaussian_filter(x, size, truncate=3.0)
else:
    ndi.median_filter(x, int(size))
print(time.perf_counter() - t)
"""

# CuPy's 3-D filter of the volume (GPU machines): the whole process (CUDA start, the file from the
# page cache, the copies and the kernel, the result back); prints the warm in-process seconds and
# those of the kernel alone on the volume in device memory.
CUPY_PY = r"""
import sys, time, numpy as np, cupy as cp
import cupyx.scipy.ndimage as cnd
path, op, size = sys.argv[1:4]
x = np.load(path)
f = (lambda g: cnd.gaussian_filter(g, float(size), truncate=3.0)) if op == "gaussian" else \
    (lambda g: cnd.median_filter(g, int(size)))
for rep in range(2):                      # the first repeat compiles the kernels
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    y = cp.asnumpy(f(cp.asarray(x)))
    cp.cuda.runtime.deviceSynchronize()
    inner = time.perf_counter() - t0
g = cp.asarray(x)
cp.cuda.runtime.deviceSynchronize()
t0 = time.perf_counter()
f(g)
cp.cuda.runtime.deviceSynchronize()
print("inner_s", inner, "kernel_s", time.perf_counter() - t0)
"""

MAKE_PY = r"""
import sys, numpy as np
path, d, h, w, dt = sys.argv[1:6]
rng = np.random.default_rng(1)
a = np.lib.format.open_memmap(path, mode="w+", dtype=dt, shape=(int(d), int(h), int(w)))
for z in range(int(d)):
    a[z] = (rng.random((int(h), int(w))) * (1000 if dt == "uint16" else 100) + 1).astype(dt)
a.flush()
"""


def volume(b, d, h, w, dt):
    path = os.path.join(b.work, f"volume_{dt}_{d}x{h}x{w}.npy")
    if not os.path.exists(path):
        maker = os.path.join(b.work, "make_volume.py")
        open(maker, "w").write(MAKE_PY)
        b.sh([sys.executable, maker, path, str(d), str(h), str(w), dt])
    return path


def case_volumes(b):
    run, rows = b.exe("oocrun"), []
    scipy_peer = os.path.join(b.work, "volume_scipy.py")
    open(scipy_peer, "w").write(SCIPY_PY)
    sp = python_has("scipy") and not b.a.no_scipy
    cupy = b.gpu and python_has("cupy") and not b.a.no_cupy
    cupy_peer = os.path.join(b.work, "volume_cupy.py")
    open(cupy_peer, "w").write(CUPY_PY)
    shape = [int(v) for v in (b.a.volume or "256x2048x1024").lower().split("x")]
    d, h, w = shape
    jobs = [("f32", "float32", "gaussian sigma=2", "gaussian", "2", 1),
            ("u16", "uint16", "median size=3", "median", "3", 8),
            ("u16", "uint16", "median size=5", "median", "5", 32)]
    if b.a.jobs:  # e.g. --jobs "median size=3": those stages only
        jobs = [j for j in jobs if j[2] in b.a.jobs.split(",")]
    for t, dt, stage, op, size, part in jobs:
        src = volume(b, d, h, w, dt)
        nbytes = os.path.getsize(src)
        b.warm(src)
        common = ["null:", stage, "--threads", str(b.a.threads), "-q"]
        tools = {"oocrun 3-D": dict(cmd=[run, src, *common, "--stats", "json"], capture=True),
                 "oocrun 2-D (--planes)": dict(cmd=[run, src, *common, "--planes"])}
        if b.gpu:  # what --device auto weighs: the CPU's cores alone
            tools["oocrun 3-D cpu"] = dict(cmd=[run, src, *common, "--device", "cpu"])
        if b.gpu:  # the 3-D filter on the GPU (its kernels' seconds from --stats)
            tools["oocrun 3-D cuda"] = dict(cmd=[run, src, *common, "--device", "cuda",
                                                 "--stats", "json"], capture=True)
        if b.gpu:  # the 2-D filter of the same bytes on the GPU
            tools["oocrun 2-D (--planes) cuda"] = dict(cmd=[run, src, *common, "--planes",
                                                            "--device", "cuda"])
        if op == "gaussian":  # the yardstick: a 2-D radius-3 filter of the same file
            r3 = ["null:", "gaussian sigma=1", "--threads", str(b.a.threads), "-q", "--planes"]
            tools["oocrun 2-D radius 3 (--planes)"] = dict(cmd=[run, src, *r3])
            if b.gpu:
                tools["oocrun 2-D radius 3 (--planes) cuda"] = dict(
                    cmd=[run, src, *r3, "--device", "cuda"])
                # Half the default limit: the same plan, less memory (one plane pinned a slot)
                tools["oocrun 3-D --mem-limit 512M"] = dict(
                    cmd=[run, src, *common, "--mem-limit", "512M"])
        if cupy:
            tools["cupyx.scipy.ndimage"] = dict(cmd=[sys.executable, cupy_peer, src, op, size],
                                                capture=True)
        res = b.measure(tools)
        base = med(res["oocrun 3-D"])
        params = f"{stage} {t} {d}x{h}x{w} (z,y,x) from .npy to null:"
        for n in tools:
            note = ("the same bytes filtered plane by plane in 2-D" if "planes" in n
                    else "whole process")
            if "radius 3" in n:
                note = "a 2-D radius-3 Gaussian (sigma 1) of the same bytes, plane by plane"
            stats = [json.loads(t.out) for t in res[n] if t.out.lstrip().startswith("{")]
            if stats and n == "oocrun 3-D":
                note += f"; --device auto took {stats[-1].get('backend', '?')}"
            if stats and "gpu_seconds" in stats[-1]:
                g = stats[-1]["gpu_seconds"]
                note += (f"; GPU kernels {g.get('kernels', 0):.4f} s, copies in "
                         f"{g.get('h2d', 0):.3f} s, {stats[-1].get('cpu_bands', 0)} bands on the "
                         "CPU while CUDA started")
            outs = [t.out.split() for t in res[n] if t.out.startswith("inner_s")]
            if outs:
                note += (f"; in process, warm, copies included: {float(outs[-1][1]):.3f} s; "
                         f"kernel on the volume in device memory: {float(outs[-1][3]):.4f} s")
            rows.append(b.row("volumes", n, params, nbytes, walls(res[n]), "oocrun 3-D", base,
                              rss(res[n]), "", note))
        if sp and nbytes <= 4 << 30:  # one thread in memory: larger volumes take many minutes
            times = []
            for _ in range(max(1, min(b.a.repeats, 3))):
                out = b.sh([sys.executable, scipy_peer, src, op, size, str(part)],
                           capture_output=True, text=True).stdout
                times.append(float(out.strip().splitlines()[-1]) * part)
            rows.append(b.row("volumes", f"scipy.ndimage (1/{part} of the volume, x{part})", params,
                              nbytes, times, "oocrun 3-D", base, None, "",
                              "in memory, one thread, the call alone (truncate 3 as ooc's default)"))
    b.write("volumes", rows, f"a {d}x{h}x{w} volume in 3-D, page cache to null:, {b.a.threads} "
            "threads, against its 2-D filter (--planes) and scipy.ndimage in memory")
