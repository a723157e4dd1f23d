# Case `morphology`: oocrun rank filters over window sizes against scipy, OpenCV and CuPy.
import json, os, statistics, subprocess, sys
from ..common import BYTES, NP_DT, med, python_has, rss, walls
from ..cupy_peer import CUPY_PEERS_PY, cupy_rows

MORPH_PEERS_PY = r"""
import sys, time, numpy as np
path, W, H, dt, op, size, peer, part = sys.argv[1:9]
W, H, size, part = int(W), int(H), int(size), int(part)
x = np.fromfile(path, dtype=dt).reshape(H, W)
if peer == "scipy":
    import scipy.ndimage as ndi
    f = {"minimum": ndi.minimum_filter, "maximum": ndi.maximum_filter, "opening": ndi.grey_opening,
         "median": ndi.median_filter}[op]
    f(x[: H // part], size=size)          # a part: the caller multiplies by `part`
else:
    import cv2
    k = cv2.getStructuringElement(cv2.MORPH_RECT, (size, size))
    {"minimum": lambda: cv2.erode(x, k, borderType=cv2.BORDER_REFLECT),
     "maximum": lambda: cv2.dilate(x, k, borderType=cv2.BORDER_REFLECT),
     "opening": lambda: cv2.morphologyEx(x, cv2.MORPH_OPEN, k, borderType=cv2.BORDER_REFLECT),
     "median": lambda: cv2.medianBlur(x, size)}[op]()
"""


# The median both in memory, one process: ooc's Python module (ooc.pipeline into a preallocated
# output) against cv2.medianBlur (into a preallocated output, and allocating), interleaved after a
# warm-up call each, on the same array; the outputs' interiors compared (medianBlur replicates the
# border, ooc reflects as scipy). Prints one JSON line: seconds of each call per tool.
MEMORY_PY = r"""
import json, sys, time, numpy as np
path, W, H, dt, size, threads, repeats = sys.argv[1:8]
W, H, size, threads, repeats = int(W), int(H), int(size), int(threads), int(repeats)
import cv2, ooc
cv2.setNumThreads(threads)
x = np.fromfile(path, dtype=dt).reshape(H, W)
mine, theirs = np.empty_like(x), np.empty_like(x)
calls = {
    "ooc.pipeline": lambda: ooc.pipeline(x, "median size=%d" % size, output=mine, threads=threads),
    "cv2.medianBlur(dst=)": lambda: cv2.medianBlur(x, size, dst=theirs),
    "cv2.medianBlur": lambda: cv2.medianBlur(x, size),
}
times = {n: [] for n in calls}
for n, f in calls.items():
    f()
for rep in range(repeats):
    names = list(calls)[rep % 3:] + list(calls)[:rep % 3]
    for n in names:
        t = time.perf_counter()
        calls[n]()
        times[n].append(time.perf_counter() - t)
r = size // 2
equal = bool(np.array_equal(mine[r:-r, r:-r], theirs[r:-r, r:-r]))
print(json.dumps({"times": times, "interior_equal": equal}))
"""


def memory_rows(b, src, W, H, t, k, nbytes):
    """The in-memory median rows of one (type, size); none where OpenCV or the module is missing."""
    py = os.path.join(b.build, "python")
    if not python_has("cv2") or not os.path.isdir(os.path.join(py, "ooc")):
        return []
    script = os.path.join(b.work, "median_memory.py")
    open(script, "w").write(MEMORY_PY)
    env = dict(b.env, PYTHONPATH=py)
    p = subprocess.run([sys.executable, script, src, str(W), str(H), NP_DT[t], str(k), str(b.a.threads),
                        str(max(b.a.repeats, 5))], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return [b.row("morphology", "ooc.pipeline (in memory)", f"median size={k} {t} {W}x{H} in memory",
                      nbytes, note="failed: " + (p.stderr.strip().splitlines() or ["?"])[-1])]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    base = statistics.median(res["times"]["cv2.medianBlur(dst=)"])
    check = "interior equal to cv2" if res["interior_equal"] else "interior DIFFERS from cv2"
    return [b.row("morphology", n + " (in memory)", f"median size={k} {t} {W}x{H} in memory", nbytes, ts,
                  "cv2.medianBlur(dst=) (in memory)", base, None, check,
                  "the call alone, one process, calls interleaved")
            for n, ts in res["times"].items()]


def case_morphology(b):
    run, rows = b.exe("oocrun"), []
    sizes = b.ints("kernels", "3,15,51,101")
    cv, sp = python_has("cv2"), python_has("scipy")
    peer = os.path.join(b.work, "morph_peers.py")
    open(peer, "w").write(MORPH_PEERS_PY)
    cupy_peer = os.path.join(b.work, "cupy_peers.py")
    open(cupy_peer, "w").write(CUPY_PEERS_PY)
    cupy = b.gpu and python_has("cupy")
    for W, H in b.images([(8192, 8192)]):
        for t in b.strs("types", "u8,u16"):
            src = b.gen(f"morph_{t}_{W}x{H}.raw", W, H, t, "noise")
            b.warm(src)
            nbytes = W * H * BYTES[t]
            for op in b.strs("morph_ops", "minimum,maximum,opening,median"):
                base = None
                # scipy's median is O(K^2 log K) a sample: a 32nd of the image, scaled.
                part = 32 if op == "median" else 4
                for k in sizes:
                    tools = {}
                    for d, why in b.devices():
                        if d == "cuda" and not why:
                            # Windows the CUDA kernels do not take are refused on --device cuda.
                            probe = subprocess.run([run, "synth:noise", "null:", f"{op} size={k}", "--width", "64",
                                                    "--height", "64", "--type", t, "--device", d, "-q"],
                                                   capture_output=True, text=True, env=b.env)
                            if probe.returncode != 0:
                                why = (probe.stderr.strip().splitlines() or ["--device cuda failed"])[-1]
                        tools[f"oocrun {d}"] = (dict(cmd=[run, src, "null:", f"{op} size={k}", "--width", str(W),
                                                          "--type", t, "--device", d, "--threads",
                                                          str(b.a.threads), "-q"]) if not why else dict(note=why))
                    scipy_name = f"scipy.ndimage (1/{part} of the image, x{part})"
                    if sp and op == "median" and k > 15:
                        tools[scipy_name] = dict(note="not run: minutes even on a part of the image")
                    elif sp:
                        tools[scipy_name] = dict(
                            cmd=[sys.executable, peer, src, str(W), str(H), NP_DT[t], op, str(k), "scipy",
                                 str(part)])
                    if cv and (op != "median" or t == "u8" or k <= 5):
                        tools["opencv"] = dict(cmd=[sys.executable, peer, src, str(W), str(H), NP_DT[t], op,
                                                    str(k), "cv2", "1"],
                                               note="whole process; " + ("BORDER_REPLICATE (medianBlur)"
                                                                         if op == "median" else "BORDER_REFLECT"))
                    if cupy and (op != "median" or k <= 15):
                        tools["cupyx.scipy.ndimage"] = dict(
                            cmd=[sys.executable, cupy_peer, src, str(W), str(H), NP_DT[t], op, str(k)],
                            capture=True, note="whole process (CUDA start, file read)")
                    if op == "median" and (t == "u8" or k <= 5):
                        rows += memory_rows(b, src, W, H, t, k, nbytes)
                    res = b.measure(tools)
                    cupy_rows(b, res, tools, "cupyx.scipy.ndimage")
                    if "oocrun cpu" in res and k == sizes[0]:
                        base = med(res["oocrun cpu"])
                    for n, spec in tools.items():
                        times = walls(res.get(n, []))
                        if n.startswith("scipy") and times:
                            times = [part * x for x in times]
                        rows.append(b.row("morphology", n, f"{op} size={k} {t} {W}x{H} to null:", nbytes, times,
                                          f"oocrun cpu size={sizes[0]}" if base else "", base, rss(res.get(n)), "",
                                          spec.get("note", "")))
            b.rm(src)
    b.write("morphology", rows, f"minimum/maximum/opening/median over window sizes, page cache to null: (peers in memory, "
            f"process start included), median of {b.a.repeats}; ratio = oocrun cpu's time at the smallest size / "
            f"this row's; the '(in memory)' rows: calls in one process, ratio = cv2.medianBlur(dst=)'s / this row's")
