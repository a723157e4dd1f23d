# Case `peers`: the separable Gaussian file to file against libvips and OpenCV, the
# out-of-core run under a cgroup (--big) and the plots (--plot).
import math, os, re, shlex, subprocess, sys
from ..common import (BYTES, ROOT, VIPS_FMT, cgroup, cgroup_peak, check_bands, compare, gauss_taps, have, med,
                      python_has, rss, walls)

CV_SEP = """import sys, time, numpy as np, cv2
src, dst, w, h, t, r, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6]), int(sys.argv[7])
cv2.setNumThreads(threads)
img = np.fromfile(src, dtype=np.uint8 if t == "u8" else np.float32).reshape(h, w)
x = np.arange(-r, r + 1, dtype=np.float64); k = np.exp(-0.5 * (x / (r / 3.0)) ** 2); k /= k.sum()
t0 = time.perf_counter()
out = cv2.sepFilter2D(img, -1, k.astype(np.float32), k.astype(np.float32), borderType=cv2.BORDER_REFLECT)
sys.stderr.write(f"filter_s {time.perf_counter() - t0}\\n")
out.tofile(dst)
"""


def case_peers(b):
    a = b.a
    conv = b.exe("oocconv")
    types, radii = b.strs("types", "u8,f32"), b.ints("radii", "1,3,16,64")
    vips, cv = have("vips"), python_has("cv2")
    cv_script = os.path.join(b.work, "cv_sep.py")
    open(cv_script, "w").write(CV_SEP)
    rows = []
    for W, H in b.images([(16384, 16384)]):
        inputs = {t: b.gen(f"peers_{t}_{W}x{H}.raw", W, H, t) for t in types}
        if vips:
            for t, p in inputs.items():
                if not os.path.exists(p[:-4] + ".v"):
                    b.sh(["vips", "rawload", p, p[:-4] + ".v", str(W), str(H), "1", "--format", VIPS_FMT[t]])
        b.warm(*inputs.values())
        out = lambda tool: os.path.join(b.work, "out_" + re.sub(r"[^a-z0-9]+", "_", tool) + ".raw")

        def tools(t, r):
            src, c = inputs[t], {}
            common = ["--width", str(W), "--type", t, "--radius", str(r), "--threads", str(a.threads), "-q"]
            c["oocconv cpu"] = dict(cmd=[conv, src, out("oocconv cpu"), "--device", "cpu", *common], sync=True)
            c["oocconv cuda"] = (dict(cmd=[conv, src, out("oocconv cuda"), "--device", "cuda", *common], sync=True)
                                 if b.gpu else dict(note=b.gpu_why))
            if vips:
                mask = os.path.join(b.work, f"mask_{r}.mat")
                open(mask, "w").write(f"{2 * r + 1} 1 1 0\n" + " ".join(f"{v:.17g}" for v in gauss_taps(r)) + "\n")
                c["vips convsep"] = dict(cmd=["vips", "convsep", src[:-4] + ".v", out("vips convsep"), mask,
                                              "--precision", "float"], sync=True,
                                         note="border: copy (= nearest); float output")
                c["vips gaussblur"] = dict(cmd=["vips", "gaussblur", src[:-4] + ".v", out("vips gaussblur"),
                                                f"{r / 3.0:.9g}", "--min-ampl", f"{math.exp(-4.5):.6f}",
                                                "--precision", "float"], sync=True,
                                           note="its own Gaussian mask (min-ampl e^-4.5): same sigma, radius within 1")
            else:
                c["vips convsep"] = c["vips gaussblur"] = dict(note="libvips-tools not installed")
            c["opencv sepFilter2D"] = (dict(cmd=[sys.executable, cv_script, src, out("opencv sepFilter2D"), str(W),
                                                 str(H), t, str(r), str(a.threads)], sync=True,
                                            note="in memory; BORDER_REFLECT") if cv
                                       else dict(note="python3-opencv not installed"))
            if r == radii[0]:  # the floors do not depend on the radius
                c["cp + sync"] = dict(cmd=["cp", src, out("cp + sync")], sync=True, note="floor")
                c["cat > /dev/null"] = dict(cmd=["cat", src], note="floor")
            for n, v in c.items():
                v["out"] = out(n) if v.get("cmd") and n != "cat > /dev/null" else None
            return c

        def check(t, r, tool):
            if tool in ("cp + sync", "cat > /dev/null", "oocconv cpu"):
                return ""
            if tool.startswith("vips"):  # libvips extends edges by copying them (nearest); float output
                ref = out("ref nearest")
                if not os.path.exists(ref):
                    b.sh([conv, inputs[t], ref, "--width", str(W), "--radius", str(r), "-q", "--device", "cpu",
                          "--type", t, "--border", "nearest", "--out-type", "f32"])
                res = compare(b, ref, out(tool), W, "f32")
                return f"not same mask: max diff {res.split()[-1]}" if tool == "vips gaussblur" else res
            return compare(b, out("oocconv cpu"), out(tool), W, t, tolerance=1 if t == "u8" else None)

        floors = {}
        for ci, (t, r) in enumerate((t, r) for t in types for r in radii):
            tl = tools(t, r)
            filter_only, res = [], {}
            for rep in range(a.repeats):  # one repeat at a time: the last one's outputs are checked
                one = b.measure(tl, 1, offset=rep + ci)
                for n, ts in one.items():
                    res.setdefault(n, []).extend(ts)
                    m = re.search(r"filter_s ([0-9.]+)", ts[0].err)
                    if m:
                        filter_only.append(float(m.group(1)))
                if rep < a.repeats - 1:
                    b.rm(*(tl[n].get("out") for n in one))
            checks = {n: check(t, r, n) for n in res}
            b.rm_prefixed("out_")
            if r == radii[0]:
                floors[t] = med(res["cp + sync"])
            nbytes = W * H * BYTES[t]
            for n, spec in tl.items():
                p = f"{t} r{r} {W}x{H}" if n not in ("cp + sync", "cat > /dev/null") else f"{t} {W}x{H}"
                if n not in res:
                    rows.append(b.row("peers", n, p, nbytes, note=spec.get("note", "")))
                    continue
                rows.append(b.row("peers", n, p, nbytes, walls(res[n]), "cp + sync" if n != "cp + sync" else "",
                                  floors[t] if n != "cp + sync" else None, rss(res[n]), checks.get(n, ""),
                                  spec.get("note", "")))
            if filter_only:
                rows.append(b.row("peers", "opencv filter only", f"{t} r{r} {W}x{H}", nbytes, filter_only,
                                  "cp + sync", floors[t], note="sepFilter2D alone, in memory"))
            print(f"peers: {t} r{r} {W}x{H} done", file=sys.stderr)
    if a.big:
        rows += peers_big(b, conv, vips)
    b.write("peers", rows, "separable Gaussian, file to file; inputs in the page cache, every writer "
            f"timed through a sync, median of {a.repeats}, {a.threads} threads")
    # The plots are figures of docs/performance.md: results/ keeps only CSVs and a README.
    plot(rows, os.path.join(ROOT, "docs", "img", b.machine), b.machine, b.work)


def peers_big(b, conv, vips):
    """An image several times a cgroup memory limit, cold, filtered file to file inside it."""
    a, rows = b.a, []
    bw = 65536
    bh = int(a.big_gib * 2**30 / (bw * 4))
    big = b.gen("big_f32.raw", bw, bh, "f32")
    limit = max(1 << 30, int(a.big_gib * 2**30 / 8))
    cg = cgroup("oocbench", limit)
    o = os.path.join(b.work, "out_big.raw")
    tools = {"oocconv cpu": [conv, big, o, "--width", str(bw), "--radius", "16", "--device", "cpu", "-q"]}
    if b.gpu:
        tools["oocconv cuda"] = [conv, big, o, "--width", str(bw), "--radius", "16", "--device", "cuda", "-q"]
    if vips:
        mask = os.path.join(b.work, "mask_16.mat")
        open(mask, "w").write("33 1 1 0\n" + " ".join(f"{v:.17g}" for v in gauss_taps(16)) + "\n")
        if not os.path.exists(big[:-4] + ".v"):
            b.sh(["vips", "rawload", big, big[:-4] + ".v", str(bw), str(bh), "1", "--format", "float"])
        tools["vips convsep"] = ["vips", "convsep", big[:-4] + ".v", o[:-4] + ".v", mask, "--precision", "float"]
    for tool, cmd in tools.items():
        b.drop_caches()
        t = b.timed(["sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {shlex.join(cmd)}"], sync=True)
        chk = check_bands(big, o, bw, "f32", 16, bands=10) if tool.startswith("oocconv") else ""
        b.rm(o, o[:-4] + ".v")
        rows.append(b.row("peers", tool, f"f32 r16 {bw}x{bh} cold cgroup", bw * bh * 4, [t.wall], rss=t.rss,
                          check=chk, note=f"cold input, cgroup memory limit {limit / 2**30:.1f} GiB, "
                                          f"cgroup peak {cgroup_peak(cg) / 2**30:.2f} GiB"))
    b.rm(big, big[:-4] + ".v")
    return rows


def plot(rows, outdir, machine, workdir):
    """Throughput against radius per tool (one PNG per type) and peak RSS per tool (gnuplot)."""
    if not have("gnuplot") or not rows:
        return
    os.makedirs(outdir, exist_ok=True)
    parsed = []
    for r in rows:
        m = re.fullmatch(r"(\w+) r(\d+) (\d+)x(\d+)", r["params"])
        if m and r["median_s"]:
            parsed.append((r, m.group(1), int(m.group(2)), int(m.group(3)) * int(m.group(4))))
    if not parsed:
        return
    size = parsed[0][0]["params"].split()[-1]
    types = list(dict.fromkeys(p[1] for p in parsed))
    for t in types:
        dat, names = os.path.join(workdir, f"plot_{t}.dat"), []
        with open(dat, "w") as f:
            for tool in dict.fromkeys(p[0]["tool"] for p in parsed):
                pts = [(rad, px / float(r["median_s"]) / 1e6) for r, tt, rad, px in parsed
                       if tt == t and r["tool"] == tool and r["params"].endswith(size)]
                if pts:
                    names.append(tool)
                    f.write(f"# {tool}\n" + "".join(f"{x} {y:.1f}\n" for x, y in pts) + "\n\n")
        curves = ", ".join(f"'{dat}' index {i} with linespoints title '{n}'" for i, n in enumerate(names))
        subprocess.run(["gnuplot", "-e",
                        f"set terminal pngcairo size 900,560 noenhanced; set output '{outdir}/peers_throughput_{t}.png';"
                        f"set title 'Gaussian blur {size} {t} ({machine})'; set logscale xy;"
                        f"set xlabel 'radius'; set ylabel 'Mpixel/s (median)'; set key outside;"
                        f"plot {curves}"], check=False)
    radii = sorted({p[2] for p in parsed})
    r16 = 16 if 16 in radii else radii[-1]
    dat = os.path.join(workdir, "rss.dat")
    with open(dat, "w") as f:
        for r, tt, rad, _ in parsed:
            if tt == types[-1] and rad == r16 and r["peak_rss_mib"]:
                f.write(f"\"{r['tool']}\" {r['peak_rss_mib']}\n")
    subprocess.run(["gnuplot", "-e",
                    f"set terminal pngcairo size 900,480 noenhanced; set output '{outdir}/peers_peak_rss.png';"
                    f"set title 'Peak RSS, {types[-1]} radius {r16} ({machine})'; set logscale y; set style fill solid;"
                    f"set ylabel 'MiB'; set xtics rotate by -30; set boxwidth 0.6;"
                    f"plot '{dat}' using 0:2:xtic(1) with boxes notitle"], check=False)
