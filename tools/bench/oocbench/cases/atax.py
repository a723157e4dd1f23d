# Case `atax`: oocatax (A^T (A X)) against the cat floor, NumPy, the H2D ceiling and cuBLAS.
import csv, json, os, shlex, statistics, subprocess, sys
from ..common import Skip, cgroup, cgroup_peak, med, rss, walls


def case_atax(b):
    import numpy as np
    a, rows = b.a, []
    atax, M, N = b.exe("oocatax"), a.rows, a.cols
    nbytes = M * N * 4
    A = b.gen("atax_A.raw", N, M, "f32", "low-rank")
    ks = b.ints("ks", "1,8,64")
    numpy_ks = [int(k) for k in a.numpy.split(",") if k]
    cpu_ks = [int(k) for k in a.cpu_ks.split(",")] if a.cpu_ks else ks
    devices = [d for d, why in b.devices() if not why]
    rng = np.random.default_rng(1)
    for k in ks:
        np.save(os.path.join(b.work, f"x{k}.npy"), rng.standard_normal(N) if k == 1 else rng.standard_normal((N, k)))
    p = lambda k, prec, extra="": f"A {M}x{N} f32 k={k} {prec}{extra}"

    def cmd(k, device, precision, extra=()):
        return [atax, A, "--rows", str(M), "--cols", str(N), "--type", "f32", "--x", os.path.join(b.work, f"x{k}.npy"),
                "--out", os.path.join(b.work, f"y_{device}_{k}_{precision}.npy"), "--device", device,
                "--precision", precision, "--stats", "json", "--no-progress"] + list(extra)

    def numpy_code(k, xdt):
        return (f"import numpy as np, time\nA = np.memmap({A!r}, dtype=np.float32, mode='r', shape=({M}, {N}))\n"
                f"x = np.load({os.path.join(b.work, f'x{k}.npy')!r}).astype(np.{xdt})\n"
                f"t = time.perf_counter(); y = A.T @ (A @ x); dt = time.perf_counter() - t\n"
                f"np.save({os.path.join(b.work, f'y_numpy_{k}_{xdt}.npy')!r}, y); print(dt)")

    b.warm(A)
    b.warm(A)
    cat = b.measure({"cat A > /dev/null": dict(cmd=["cat", A])})["cat A > /dev/null"]
    floor = med(cat)
    rows.append(b.row("atax", "cat A > /dev/null", f"A {M}x{N} f32 warm", nbytes, walls(cat), note="floor"))
    if "cuda" in devices:
        tmp = os.path.join(b.work, "stages.csv")
        try:
            b.timed([b.exe("ooc_gpu_stages"), "--width", str(N), "--rows", "4096", "--repeats", "10", "--csv", tmp])
            for s in csv.DictReader(open(tmp)):
                if s["stage"] == "h2d":
                    rows.append(b.row("atax", "pinned H2D ceiling (ooc_gpu_stages)", f"A {M}x{N} f32", nbytes,
                                      repeats=10, median=nbytes / float(s["gb_per_s"]) / 1e9,
                                      note="4096-row bands; seconds = A's bytes at that rate"))
        except Skip as e:
            rows.append(b.row("atax", "pinned H2D ceiling (ooc_gpu_stages)", f"A {M}x{N} f32", note=str(e)))
    for k in ks:
        ref = None
        if k in numpy_ks:
            # NumPy in a fresh process, timing the product only; x float32 (A's dtype: no copy of A) and
            # float64 (what most scripts pass; NumPy copies A to float64, so small A only).
            for xdt in ("float32", "float64") if nbytes <= 2 << 30 else ("float32",):
                secs = [float(b.timed([sys.executable, "-c", numpy_code(k, xdt)]).out) for _ in range(a.repeats)]
                rows.append(b.row("atax", f"numpy memmap A.T@(A@x), x {xdt}", p(k, "f32" if xdt == "float32" else "f64"),
                                  nbytes, secs, "cat A > /dev/null", floor, note="product only, in process"))
            ref = np.load(os.path.join(b.work, f"y_numpy_{k}_float32.npy")).astype(np.float64)
        for device in [d for d in devices if d != "cpu" or k in cpu_ks]:
            for precision in ("f64", "f32"):
                res = b.measure({"x": dict(cmd=cmd(k, device, precision))})["x"]
                st = json.loads(res[-1].out)
                y = np.load(os.path.join(b.work, f"y_{device}_{k}_{precision}.npy"))
                note = (f"in-process {st['seconds']['total']:.3f} s (setup {st['seconds']['setup']:.3f}); shares "
                        + ",".join(f"{x}={v:.2f}" for x, v in st["time_shares"].items()))
                if device == "cuda" and st.get("gpu_seconds", {}).get("kernels"):
                    note += f"; kernels {nbytes / st['gpu_seconds']['kernels'] / 1e9:.1f} GB/s of A per stream"
                chk = ""
                if ref is not None:
                    e = float(np.max(np.abs(y.reshape(ref.shape) - ref)) / max(np.max(np.abs(ref)), 1e-300))
                    chk = ("ok" if e < (1e-4 if precision == "f32" else 1e-5) else "MISMATCH") + f" diff from numpy (f32) {e:.1e}"
                rows.append(b.row("atax", f"oocatax --device {device}", p(k, precision), nbytes, walls(res),
                                  "cat A > /dev/null", floor, rss(res), chk, note))
    if "cuda" in devices:
        rows_gpu = min(M, max(1, (4 << 30) // (N * 4)))
        for k in ks:
            code = (f"import numpy as np, cupy as cp, time\n"
                    f"A = np.memmap({A!r}, dtype=np.float32, mode='r', shape=({M}, {N}))[:{rows_gpu}]\n"
                    f"a32 = cp.asarray(A); a64 = a32.astype(cp.float64)\n"
                    f"x = cp.asarray(np.load({os.path.join(b.work, f'x{k}.npy')!r}))\nout = []\n"
                    f"for a, xx in ((a64, x), (a32, x.astype(cp.float32))):\n"
                    f"  a.T @ (a @ xx); cp.cuda.Device().synchronize(); ts = []\n"
                    f"  for i in range(5):\n"
                    f"    t = time.perf_counter(); a.T @ (a @ xx); cp.cuda.Device().synchronize()\n"
                    f"    ts.append(time.perf_counter() - t)\n"
                    f"  out.append(sorted(ts)[2])\nprint(*out)")
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=b.env)
            if r.returncode != 0:
                rows.append(b.row("atax", "cuBLAS via CuPy, A in device memory", p(k, "-"),
                                  note="skipped: " + (r.stderr.strip().splitlines() or ["?"])[-1]))
                break
            for prec, t in zip(("f64", "f32"), (float(v) for v in r.stdout.split())):
                rows.append(b.row("atax", "cuBLAS via CuPy, A in device memory", f"A {rows_gpu}x{N} f32 k={k} {prec}",
                                  rows_gpu * N * 4, repeats=5, median=t,
                                  note="kernel only; f64: A converted to float64 on the device first"))
    if a.cold:
        dev = "cuda" if "cuda" in devices else "cpu"
        cold, secs = [], []
        for _ in range(a.repeats):
            b.drop_caches()
            cold.append(b.timed(["cat", A]).wall)
        for _ in range(a.repeats):
            b.drop_caches()
            secs.append(b.timed(cmd(1, dev, "f64")).wall)
        rows.append(b.row("atax", "cat A > /dev/null", f"A {M}x{N} f32 cold", nbytes, cold, note="floor"))
        rows.append(b.row("atax", f"oocatax --device {dev}", p(1, "f64", " cold"), nbytes, secs,
                          "cat A > /dev/null", statistics.median(cold), note="baseline: the cold cat"))
        if 1 in numpy_ks:
            b.drop_caches()
            secs = [float(b.timed([sys.executable, "-c", numpy_code(1, "float32")]).out)]
            rows.append(b.row("atax", "numpy memmap A.T@(A@x), x float32", p(1, "f32", " cold"), nbytes, secs,
                              "cat A > /dev/null", statistics.median(cold), note="baseline: the cold cat"))
    if a.cgroup_gib:
        limit = int(a.cgroup_gib * 2**30)
        cg = cgroup("ooc-atax", limit)
        b.drop_caches()
        dev = "cuda" if "cuda" in devices else "cpu"
        t = b.timed(["bash", "-c", f"echo $$ > {cg}/cgroup.procs; exec "
                     + shlex.join(cmd(1, dev, "f64", ["--mem-limit", str(limit // 4)]))])
        st = json.loads(t.out)
        rows.append(b.row("atax", f"oocatax --device {dev}", p(1, "f64", f" cold, {a.cgroup_gib:g} GiB cgroup"), nbytes,
                          [t.wall], rss=st["peak_rss_bytes"],
                          note=f"cgroup peak {cgroup_peak(cg) / 2**30:.2f} GiB (A {nbytes / 2**30:.1f} GiB)"))
    if not a.keep:
        b.rm(A)
    b.write("atax", rows, f"y = A^T (A X), wall time of the whole process unless said, median of {a.repeats}; "
            f"ratio = the cat floor's time / this")
