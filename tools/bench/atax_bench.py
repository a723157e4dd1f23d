#!/usr/bin/python3
"""oocatax (y = A^T (A X)) against its peers and floors, side by side in one run, medians of
--repeats: the `cat A > /dev/null` read floor, NumPy on a numpy.memmap of the same file
(A.T @ (A @ X), which reads A twice), and where a GPU is present the pinned H2D ceiling
(ooc_gpu_stages) and cuBLAS through CuPy on a slice of A that fits in device memory (the kernel
peer). With --cold (root): the same after dropping the page cache. With --cgroup-gib G (root): one
run under a memory cgroup of G GiB (v1 or v2), A larger than G, with the cgroup's peak memory.

Every y is compared with NumPy's float64 result (relative error printed). Results: a CSV and a
Markdown table in --out (default tools/bench/results/<machine>/atax/).

  tools/bench/atax_bench.py --bin-dir build/release --rows 16384 --cols 16384 --ks 1,8,64
  tools/bench/atax_bench.py --bin-dir stage/bin --rows 262144 --cols 16384 --gpu --cold
"""
import argparse, csv, json, os, platform, statistics, subprocess, sys, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "release"))
p.add_argument("--rows", type=int, default=16384)
p.add_argument("--cols", type=int, default=16384)
p.add_argument("--ks", default="1,8,64")
p.add_argument("--repeats", type=int, default=3)
p.add_argument("--workdir", default="/tmp/ooc-atax-bench")
p.add_argument("--machine", default=platform.node().split(".")[0])
p.add_argument("--out", default=None)
p.add_argument("--gpu", action="store_true", help="also --device cuda, H2D ceiling, CuPy peer")
p.add_argument("--cpu", action="store_true", help="also --device cpu (default without --gpu)")
p.add_argument("--numpy", default="1", help="k values the NumPy memmap peer runs (slow)")
p.add_argument("--cpu-ks", default=None, help="k values of --device cpu (default: --ks)")
p.add_argument("--cold", action="store_true", help="also cold page cache runs (root)")
p.add_argument("--cgroup-gib", type=float, default=0, help="memory cgroup case (root)")
p.add_argument("--keep", action="store_true", help="keep the matrix file")
args = p.parse_args()

import numpy as np

BIN = os.path.abspath(args.bin_dir)
os.makedirs(args.workdir, exist_ok=True)
A = os.path.join(args.workdir, "A.raw")
M, N = args.rows, args.cols
A_BYTES = M * N * 4
out_dir = args.out or os.path.join(ROOT, "tools", "bench", "results", args.machine, "atax")
os.makedirs(out_dir, exist_ok=True)
rows = []
cpu = args.cpu or not args.gpu


def log(*a):
    print(*a, flush=True)


def timed(cmd, env=None, shell=False):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, shell=shell)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {cmd}\n{r.stderr}")
    return dt, r.stdout


def drop_caches():
    subprocess.run("sync; echo 3 > /proc/sys/vm/drop_caches", shell=True, check=True)


def record(case, k, precision, secs, note="", floor=None):
    med = statistics.median(secs)
    gbps = A_BYTES / med / 1e9
    row = {"machine": args.machine, "case": case, "k": k, "precision": precision,
           "rows": M, "cols": N, "a_gib": round(A_BYTES / 2**30, 2), "seconds": round(med, 4),
           "runs": len(secs), "gb_per_s": round(gbps, 3),
           "vs_floor": round(floor / med, 3) if floor else "", "note": note}
    rows.append(row)
    log(f"{case:34s} k={k!s:3s} {precision:4s} {med:8.3f} s {gbps:7.2f} GB/s "
        f"{'floor ratio %.2f' % (floor / med) if floor else ''} {note}")
    return med


def oocatax(k, device, precision, extra=(), x=None):
    cmd = [f"{BIN}/oocatax", A, "--rows", str(M), "--cols", str(N), "--type", "f32", "--x",
           x or os.path.join(args.workdir, f"x{k}.npy"), "--out",
           os.path.join(args.workdir, f"y_{device}_{k}_{precision}.npy"), "--device", device,
           "--precision", precision, "--stats", "json", "--no-progress"] + list(extra)
    return cmd


def rel_err(y, ref):
    return float(np.max(np.abs(y.reshape(ref.shape) - ref)) / max(np.max(np.abs(ref)), 1e-300))


# The matrix: oocgen's low-rank + noise, f32.
if not os.path.exists(A) or os.path.getsize(A) != A_BYTES:
    log(f"generating A: {M} x {N} f32 ({A_BYTES / 2**30:.2f} GiB)")
    subprocess.run([f"{BIN}/oocgen", A, "--width", str(N), "--height", str(M), "--pattern",
                    "low-rank", "--no-progress", "-q"], check=True)
ks = [int(k) for k in args.ks.split(",")]
numpy_ks = [int(k) for k in args.numpy.split(",") if k]
rng = np.random.default_rng(1)
for k in ks:
    np.save(os.path.join(args.workdir, f"x{k}.npy"),
            rng.standard_normal(N) if k == 1 else rng.standard_normal((N, k)))

# Warm: the file in the page cache (read it twice first).
subprocess.run(f"cat {A} > /dev/null; cat {A} > /dev/null", shell=True, check=True)
cat = record("cat A > /dev/null (warm)", "-", "-",
             [timed(f"cat {A} > /dev/null", shell=True)[0] for _ in range(args.repeats)])

if args.gpu:
    _, out = timed([f"{BIN}/ooc_gpu_stages", "--width", str(N), "--rows", "4096", "--repeats",
                    "10", "--csv", os.path.join(args.workdir, "stages.csv")])
    with open(os.path.join(args.workdir, "stages.csv")) as f:
        for r in csv.DictReader(f):
            if r.get("stage") == "h2d":
                h2d = float(r["gb_per_s"])
                rows.append({"machine": args.machine, "case": "pinned H2D ceiling (ooc_gpu_stages)",
                             "k": "-", "precision": "-", "rows": M, "cols": N,
                             "a_gib": round(A_BYTES / 2**30, 2),
                             "seconds": round(A_BYTES / h2d / 1e9, 4), "runs": 10,
                             "gb_per_s": h2d, "vs_floor": "", "note": "4096-row bands"})
                log(f"pinned H2D ceiling: {h2d:.1f} GB/s")

stats_of = {}
for k in ks:
    ref = None
    if k in numpy_ks:
        # NumPy peer in a fresh process, timing only the product; X as float32 (A's dtype, so
        # NumPy does not copy A to float64) and as float64 (what most scripts pass).
        # float64 X makes NumPy copy A to float64 (twice A's size in memory): small A only.
        for xdt in ("float32", "float64") if A_BYTES <= 2 << 30 else ("float32",):
            code = (f"import numpy as np, time, sys\n"
                    f"A = np.memmap('{A}', dtype=np.float32, mode='r', shape=({M}, {N}))\n"
                    f"x = np.load('{args.workdir}/x{k}.npy').astype(np.{xdt})\n"
                    f"t = time.perf_counter(); y = A.T @ (A @ x); dt = time.perf_counter() - t\n"
                    f"np.save('{args.workdir}/y_numpy_{k}_{xdt}.npy', y); print(dt)")
            secs = [float(timed([sys.executable, "-c", code])[1]) for _ in range(args.repeats)]
            record(f"numpy memmap A.T@(A@x), x {xdt}", k, "f32" if xdt == "float32" else "f64",
                   secs, floor=None)
        ref = np.load(f"{args.workdir}/y_numpy_{k}_float32.npy").astype(np.float64)
    cpu_ks = [int(v) for v in args.cpu_ks.split(",")] if args.cpu_ks else ks
    for device in (["cpu"] if cpu and k in cpu_ks else []) + (["cuda"] if args.gpu else []):
        for precision in ("f64", "f32"):
            secs = []
            for _ in range(args.repeats):
                dt, out = timed(oocatax(k, device, precision))
                secs.append(dt)
                stats_of[(device, k, precision)] = json.loads(out)
            st = stats_of[(device, k, precision)]
            y = np.load(os.path.join(args.workdir, f"y_{device}_{k}_{precision}.npy"))
            note = f"in-process {st['seconds']['total']:.3f} s (setup {st['seconds']['setup']:.3f}); "
            note += "shares " + ",".join(f"{a}={b:.2f}" for a, b in st["time_shares"].items())
            if ref is not None:
                note += f"; diff from numpy (f32) {rel_err(y, ref):.1e}"
            if device == "cuda":
                g = st.get("gpu_seconds", {})
                if g.get("kernels"):
                    note += f"; kernels {A_BYTES / g['kernels'] / 1e9:.1f} GB/s of A per stream"
            record(f"oocatax --device {device}", k, precision, secs, note, floor=cat)

if args.gpu:
    # cuBLAS through CuPy on a slice of A in device memory: the kernel peer.
    rows_gpu = min(M, max(1, (4 << 30) // (N * 4)))
    for k in ks:
        code = (f"import numpy as np, cupy as cp, time\n"
                f"A = np.memmap('{A}', dtype=np.float32, mode='r', shape=({M}, {N}))[:{rows_gpu}]\n"
                f"a32 = cp.asarray(A); a64 = a32.astype(cp.float64)\n"
                f"x = cp.asarray(np.load('{args.workdir}/x{k}.npy'))\n"
                f"out = []\n"
                f"for a, xx in ((a64, x), (a32, x.astype(cp.float32))):\n"
                f"  a.T @ (a @ xx); cp.cuda.Device().synchronize(); ts = []\n"
                f"  for i in range(5):\n"
                f"    t = time.perf_counter(); a.T @ (a @ xx); cp.cuda.Device().synchronize()\n"
                f"    ts.append(time.perf_counter() - t)\n"
                f"  out.append(sorted(ts)[2])\n"
                f"print(*out)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if r.returncode != 0:
            log(f"cupy peer skipped: {r.stderr.strip().splitlines()[-1] if r.stderr else '?'}")
            break
        t64, t32 = (float(v) for v in r.stdout.split())
        for prec, t in (("f64", t64), ("f32", t32)):
            gbps = rows_gpu * N * 4 / t / 1e9
            rows.append({"machine": args.machine, "case": "cuBLAS via CuPy, A in device memory",
                         "k": k, "precision": prec, "rows": rows_gpu, "cols": N,
                         "a_gib": round(rows_gpu * N * 4 / 2**30, 2), "seconds": round(t, 5),
                         "runs": 5, "gb_per_s": round(gbps, 2), "vs_floor": "",
                         "note": "GB/s of f32 A; f64: A converted to float64 on the device first"})
            log(f"cuBLAS/CuPy k={k} {prec}: {gbps:.1f} GB/s of A (kernel only)")

if args.cold:
    secs = []
    for _ in range(args.repeats):
        drop_caches()
        secs.append(timed(f"cat {A} > /dev/null", shell=True)[0])
    cold = record("cat A > /dev/null (cold)", "-", "-", secs)
    for device in (["cuda"] if args.gpu else ["cpu"]):
        secs = []
        for _ in range(args.repeats):
            drop_caches()
            secs.append(timed(oocatax(1, device, "f64"))[0])
        record(f"oocatax --device {device} (cold)", 1, "f64", secs, floor=cold)
    if 1 in numpy_ks:
        drop_caches()
        code = (f"import numpy as np, time\n"
                f"A = np.memmap('{A}', dtype=np.float32, mode='r', shape=({M}, {N}))\n"
                f"x = np.load('{args.workdir}/x1.npy').astype(np.float32)\n"
                f"t = time.perf_counter(); y = A.T @ (A @ x); print(time.perf_counter() - t)")
        record("numpy memmap A.T@(A@x), x float32 (cold)", 1, "f32",
               [float(timed([sys.executable, "-c", code])[1])], floor=cold)

if args.cgroup_gib:
    limit = int(args.cgroup_gib * 2**30)
    v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    cg = "/sys/fs/cgroup/ooc-atax" if v2 else "/sys/fs/cgroup/memory/ooc-atax"
    os.makedirs(cg, exist_ok=True)
    with open(os.path.join(cg, "memory.max" if v2 else "memory.limit_in_bytes"), "w") as f:
        f.write(str(limit))
    if not v2 and os.path.exists(os.path.join(cg, "memory.max_usage_in_bytes")):
        with open(os.path.join(cg, "memory.max_usage_in_bytes"), "w") as f:
            f.write("0")
    drop_caches()
    device = "cuda" if args.gpu else "cpu"
    cmd = " ".join(oocatax(1, device, "f64", ["--mem-limit", str(limit // 4)]))
    dt, out = timed(["bash", "-c", f"echo $$ > {cg}/cgroup.procs; exec {cmd}"])
    peak_file = os.path.join(cg, "memory.peak" if v2 else "memory.max_usage_in_bytes")
    peak = int(open(peak_file).read().split()[0]) if os.path.exists(peak_file) else -1
    st = json.loads(out)
    record(f"oocatax --device {device} in a {args.cgroup_gib:g} GiB cgroup (cold)", 1, "f64", [dt],
           f"cgroup {'v2' if v2 else 'v1'} peak {peak / 2**30:.2f} GiB (A {A_BYTES / 2**30:.1f} "
           f"GiB), process peak RSS {st['peak_rss_bytes'] / 2**30:.2f} GiB")

with open(os.path.join(out_dir, "atax.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
with open(os.path.join(out_dir, "atax.md"), "w") as f:
    f.write(f"# oocatax on {args.machine}: A {M} x {N} f32 ({A_BYTES / 2**30:.2f} GiB)\n\n")
    f.write("Command: `" + " ".join(sys.argv) + "`\n\n")
    f.write("| case | k | precision | seconds (median) | GB/s of A | floor / this | note |\n")
    f.write("| --- | --- | --- | --- | --- | --- | --- |\n")
    for r in rows:
        f.write(f"| {r['case']} | {r['k']} | {r['precision']} | {r['seconds']} | {r['gb_per_s']} "
                f"| {r['vs_floor']} | {r['note']} |\n")
log(f"wrote {out_dir}/atax.csv and atax.md")
if not args.keep:
    os.remove(A)
