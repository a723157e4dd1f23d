# Case `stages` (GPU): each GPU pipeline stage alone, kernels against NPP and CuPy.
import csv, json, os, re, sys
from ..common import BYTES, Skip, python_has

CUPY_BAND = """import json, sys, statistics, numpy as np, cupy as cp, cupyx.scipy.ndimage as nd
W, ROWS, R, N = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
x = np.arange(-R, R + 1, dtype=np.float64); w = np.exp(-0.5 * (x / (R / 3.0)) ** 2); w /= w.sum()
wd = cp.asarray(w.astype(np.float32))
band = cp.asarray(np.fromfile(sys.argv[5], dtype=np.float32).reshape(ROWS + 2 * R, W))
run = lambda: nd.convolve1d(nd.convolve1d(band, wd, axis=1, mode="reflect"), wd, axis=0, mode="reflect")
for _ in range(3): run()
times = []
for _ in range(N):
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record(); run(); b.record(); b.synchronize(); times.append(cp.cuda.get_elapsed_time(a, b))
ours = np.fromfile(sys.argv[6], dtype=np.float32).reshape(ROWS + 2 * R, W)
diff = float(np.abs(cp.asnumpy(run()) - ours).max())
print(json.dumps(dict(ms=statistics.median(times), min=min(times), max=max(times), diff=diff, version=cp.__version__)))
"""


def case_stages(b):
    b.need_gpu("stages")
    a, rows = b.a, []
    stages = b.exe("ooc_gpu_stages", "built by tools/bench/CMakeLists.txt with the CUDA backend")
    conv, W, n = b.exe("oocconv"), a.band_width, a.kernel_repeats
    f = b.gen("stages_file.raw", 65536, 8192, "f32")  # 2 GiB for the read and write stages
    names = {"kernels": "stage kernels", "npp": "stage npp"}
    for t in b.strs("types", "f32,u8"):
        R = a.band_rows or (256 if t == "f32" else 1024)
        for i, r in enumerate(b.ints("radii", "1,3,16,64")):
            tmp = os.path.join(b.work, "stages.csv")
            b.rm(tmp)
            b.timed([stages, "--width", str(W), "--rows", str(R), "--radius", str(r), "--type", t, "--repeats", str(n),
                     "--threads", str(min(a.threads, 8)), "--csv", tmp] + (["--file", f] if i == 0 else []))
            st = {s["stage"]: s for s in csv.DictReader(open(tmp))}
            npp_s = float(st["npp"]["ms"]) / 1e3 if st.get("npp", {}).get("ms") else None
            for name, s in st.items():
                if i > 0 and name not in ("kernels", "kernels-moved", "npp"):
                    continue  # the copies and the file stages do not depend on the radius
                ok = s["gb_per_s"] not in ("", "n/a")
                d = re.search(r"max \|npp - ours\| off the edges = ([0-9.e+-]+)", s["note"])
                chk = (("ok " if float(d.group(1)) <= 1e-5 else "MISMATCH ") + d.group(1) +
                       " off the edges (NPP: replicate border)") if d else ""
                kern = name == "kernels" and npp_s
                if s.get("mem_bound_fraction"):
                    s["note"] += (f"; time at the memory bound / this = {s['mem_bound_fraction']}, at the FMA "
                                  f"bound / this = {s['fma_bound_fraction']}")
                rows.append(b.row("stages", names.get(name, "stage " + name), f"{t} r{r} band {W}x{R}",
                                  int(s["bytes"]) if ok and s["bytes"] else 0, baseline="stage npp" if kern else "",
                                  base=npp_s if kern else None, check=chk, note=s["note"],
                                  repeats=s["median_of"] if ok else "", median=float(s["ms"]) / 1e3 if ok else None,
                                  gbps=float(s["gb_per_s"]) if ok else None))
    # CuPy convolve1d on the same f32 band, its result compared with oocconv's on that band.
    for r in b.ints("radii", "1,3,16,64"):
        R, p = a.band_rows or 256, None
        p = f"f32 r{r} band {W}x{R}"
        if not python_has("cupy"):
            rows.append(b.row("stages", "CuPy convolve1d", p, note="CuPy not installed"))
            continue
        band = b.gen("band.raw", W, R + 2 * r, "f32")
        ours = os.path.join(b.work, "band_ooc.raw")
        b.sh([conv, band, ours, "--width", str(W), "--radius", str(r), "--device", "cuda", "-q"])
        script = os.path.join(b.work, "cupy_band.py")
        open(script, "w").write(CUPY_BAND)
        j = json.loads(b.timed([sys.executable, script, str(W), str(R), str(r), str(n), band, ours]).out)
        b.rm(band, ours)
        rows.append(b.row("stages", "CuPy convolve1d", p, (W * (R + 2 * r) + W * R) * 4, repeats=n,
                          median=j["ms"] / 1e3, check=("ok " if j["diff"] <= 1e-5 else "MISMATCH ") + f"{j['diff']:.3g}",
                          note=f"cupyx.scipy.ndimage.convolve1d x then y, reflect, CUDA events; cupy {j['version']}"))
    # 2-D convolution, histogram and LUT kernels against NPP's.
    try:
        peers = b.exe("ooc_gpu_ops_peers", "built only where NPP is found (tools/bench/CMakeLists.txt)")
        out = b.timed([peers, "--width", "16384", "--rows", "1024", "--repeats", str(n)]).out
        for s in csv.DictReader(l for l in out.splitlines() if "," in l):
            p = f"{s['type']} K{s['K']} band 16384x1024" if s["case"] == "conv2d" else f"{s['type']} band 16384x1024"
            nb = 16384 * 1024 * BYTES[s["type"]]
            npp = float(s["npp_ms"]) / 1e3
            rows.append(b.row("stages", f"ooc {s['case']}", p, nb, baseline=f"NPP {s['note']}", base=npp, repeats=n,
                              median=float(s["ours_ms"]) / 1e3, check=f"max diff {s['max_diff']}"))
            rows.append(b.row("stages", f"NPP {s['note']}", p, nb, repeats=n, median=npp))
    except Skip as e:
        rows.append(b.row("stages", "ooc_gpu_ops_peers", "16384x1024 band", note=str(e)))
    b.rm(f)
    b.write("stages", rows, f"each GPU stage alone on one band (ooc_gpu_stages), kernels against NPP and CuPy "
            f"in device memory, medians of {n}; ratio = NPP's time / ours")
