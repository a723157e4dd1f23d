# The `labels` case's GPU rows (issue 47's GPU aims), side by side in one run:
#  1. the 1 GiB blob mask labelled as a whole process from its .npy in the page cache: ooclabel
#     --device cuda / cpu / auto to a .npy (its labels back in host memory, then the page cache),
#     against CuPy's cupyx.scipy.ndimage.label as a whole process (python3 start, cupy import,
#     np.load, copy in, label, copy back); the aim: 2x CuPy. Beside them, where the Python module
#     was built with the binaries, ooc.label's whole process the same way (labels in host memory,
#     no file). ooclabel's outputs checked against scipy.ndimage.label once, untimed.
#  2. a 16 GiB blob mask (16x the first's under --size) (oocgen gaussian-spots, 65536 wide) from the page cache to null:, on the
#     GPU against the CPU backend's threads; u32 labels (given: the count fits) and auto (u64 at
#     this size); the aim: the GPU at 0.8x the CPU's throughput or better.
import json, os, statistics, sys
from ..common import python_has, rss, walls

CUPY_LABEL_PY = r"""
import sys, time
t0 = time.perf_counter()
import numpy as np, cupy as cp
import cupyx.scipy.ndimage as cnd
m = np.load(sys.argv[1])
t1 = time.perf_counter()
g = cp.asarray(m)
lab, n = cnd.label(g, cp.ones((3, 3), bool))
out = lab.get()
cp.cuda.runtime.deviceSynchronize()
t2 = time.perf_counter()
print(f"import_load_s {t1 - t0:.4f} label_s {t2 - t1:.4f} n {int(n)} dtype {out.dtype}")
"""

# ooc.label as CuPy's peer is timed: a whole process from python3's start to the labels in host
# memory (an int32 array), on the device given.
OOC_LABEL_PY = r"""
import sys, time
t0 = time.perf_counter()
import numpy as np, ooc
m = np.load(sys.argv[1])
t1 = time.perf_counter()
lab, n = ooc.label(m, connectivity=8, device=sys.argv[2], threads=int(sys.argv[3]))
t2 = time.perf_counter()
print(f"import_load_s {t1 - t0:.4f} label_s {t2 - t1:.4f} n {int(n)} dtype {lab.dtype}")
"""

CHECK_PY = r"""
import sys, numpy as np, scipy.ndimage as ndi
m = np.load(sys.argv[1])
want, n = ndi.label(m, np.ones((3, 3), bool))
bad = []
for p in sys.argv[2:]:
    got = np.load(p, mmap_mode="r")
    if got.dtype != np.uint32 or not np.array_equal(got, want):
        bad.append(p)
print("equal to scipy" if not bad else "DIFFERS: " + " ".join(bad), n)
"""


def stats_of(res, name):
    js = [json.loads(t.out) for t in res[name] if t.out.lstrip().startswith("{")]
    return js[-1] if js else {}


def note_of(st):
    """What --stats json says of a run: backend, label type, passes and the GPU's parts."""
    if not st:
        return ""
    passes = "+".join(f"{p.get('seconds', 0):.3f}" for p in st.get("passes", []))
    note = (f"{st.get('components')} components, {st.get('output', {}).get('type', '?')} labels, "
            f"{st.get('backend', '?')}, passes {passes} s")
    sec = st.get("seconds") or {}
    if isinstance(sec, dict) and sec:
        note += (f"; setup {sec.get('setup', 0):.3f} s, write stage {sec.get('write_stage', 0):.3f} s"
                 f", bands of {st.get('plan', {}).get('band_rows')} rows")
    g = st.get("gpu_seconds")
    if g:  # summed over the bands (their streams overlap)
        note += (f"; GPU kernels {g.get('kernels', 0):.3f} s, in {g.get('h2d', 0):.3f} s, back "
                 f"{g.get('d2h', 0):.3f} s, pack {g.get('pack', 0):.3f} s, "
                 f"{st.get('cpu_bands', 0)} bands on the CPU (while CUDA started, and its share)")
    return note


def gpu_rows(b, mask, side):
    lab = b.exe("ooclabel")
    T = str(b.a.threads)
    nbytes = side * side
    outs = {d: os.path.join(b.work, f"labels_gpu_{d}.npy") for d in ("cuda", "cpu", "auto")}
    tools = {}
    for d in ("cuda", "cpu", "auto"):
        tools[f"ooclabel --device {d}, .npy to .npy"] = dict(
            cmd=[lab, mask, outs[d], "--connectivity", "8", "--device", d, "--threads", T,
                 "--stats", "json", "-q"], out=outs[d], capture=True)
    for d in ("cuda", "cpu"):
        tools[f"ooclabel --device {d}, to null:"] = dict(
            cmd=[lab, mask, "null:", "--connectivity", "8", "--device", d, "--threads", T,
                 "--stats", "json", "-q"], capture=True)
    # The Python module, where it was built beside the binaries (build/python, stage/python).
    pydir = next((d for d in (os.path.join(b.build, "python"), os.path.join(b.build, "..", "python"))
                  if os.path.isfile(os.path.join(d, "ooc", "__init__.py"))), None)
    if pydir:
        script = os.path.join(b.work, "labels_ooc.py")
        open(script, "w").write(OOC_LABEL_PY)
        env = dict(b.env, PYTHONPATH=os.path.abspath(pydir))
        for d in ("cuda", "cpu"):
            tools[f"ooc.label device={d} (whole process)"] = dict(
                cmd=[sys.executable, script, mask, d, T], env=env, capture=True)
    cupy = python_has("cupy") and not b.a.no_cupy
    peer = "cupyx.scipy.ndimage.label (whole process)"
    if cupy:
        script = os.path.join(b.work, "labels_cupy.py")
        open(script, "w").write(CUPY_LABEL_PY)
        tools[peer] = dict(cmd=[sys.executable, script, mask], capture=True)
    res = b.measure(tools)
    check = ""
    if python_has("scipy"):
        check_py = os.path.join(b.work, "labels_check.py")
        open(check_py, "w").write(CHECK_PY)
        check = b.capture([sys.executable, check_py, mask, outs["cuda"], outs["cpu"]])
    b.rm(*outs.values())
    verdict = "equal to scipy" if check.startswith("equal") else (check[:80] or "not checked")
    checked = ("ooclabel --device cuda, .npy to .npy", "ooclabel --device cpu, .npy to .npy")
    base_name = peer if cupy else "ooclabel --device cpu, .npy to .npy"
    base = statistics.median(walls(res[base_name]))
    params = f"u8 {side}x{side} blob mask (.npy, page cache), 8-connected, {T} threads"
    rows = []
    for n in tools:
        note = "whole process; " + note_of(stats_of(res, n))
        inner = [t.out.split() for t in res[n] if t.out.startswith("import_load_s")]
        if inner:
            v = inner[-1]
            note = (f"whole process: python3, import and np.load {float(v[1]):.3f} s, then the "
                    f"labels in host memory {float(v[3]):.3f} s (last run); {v[5]} components, "
                    f"{v[7]}")
        rows.append(b.row("labels-gpu", n, params, nbytes, walls(res[n]), base_name, base,
                          rss(res[n]), verdict if n in checked else "", note))

    b.write("labels-gpu", rows, f"labels on the GPU: a {side}x{side} mask as a whole process "
            f"against CuPy")

    # 16 GiB from the page cache to null:, the GPU against the CPU's threads.
    width = 65536
    height = 262144 if not b.a.size else max(1, 16 * nbytes // width)  # --size: 16x the mask
    big = b.gen(f"labels_spots_{width}x{height}.raw", width, height, "u8", "gaussian-spots")
    b.warm(big)
    common = [lab, big, "null:", "--width", str(width), "--type", "u8", "--connectivity", "8",
              "--threads", T, "--stats", "json", "-q"]
    tools = {f"ooclabel --device {d}, {lt}": dict(cmd=common + ["--device", d, "--label-type", lt],
                                                  capture=True)
             for d, lt in (("cpu", "u32"), ("cuda", "u32"), ("auto", "u32"), ("cpu", "auto"),
                           ("cuda", "auto"))}
    res = b.measure(tools)
    base_name = "ooclabel --device cpu, u32"
    base = statistics.median(walls(res[base_name]))
    params = (f"u8 {width}x{height} gaussian-spots mask ({width * height / 2**30:g} GiB, page "
              f"cache) to null:, {T} threads")
    counts = {stats_of(res, n).get("components") for n in tools}
    rows = []
    for n in tools:
        rows.append(b.row("labels-gpu", n, params, width * height, walls(res[n]), base_name, base,
                          rss(res[n]), "same count" if len(counts) == 1 else "COUNTS DIFFER",
                          "whole process; " + note_of(stats_of(res, n))))
    b.rm(big)
    b.write("labels-gpu", rows, f"labels on the GPU: {width * height / 2**30:g} GiB from the page "
            f"cache against the CPU's {T} threads")
