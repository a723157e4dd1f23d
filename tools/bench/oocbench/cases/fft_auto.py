# Case `fft-auto`: does --method auto pick the faster of the direct sum and the FFT? A sweep over
# kernel size and image width on the CPU, for 2-D kernels (oocconv --kernel, random K x K, rank > 1)
# and separable Gaussians (--radius R, 1-D FFTs along rows then columns), each point's three runs
# alternated; auto's time against the better fixed method's (issue 32: never above 1.2x).
import os, re, statistics, sys

from ..common import BYTES
from .ops import OPS_PY

# Images of about 64 MiB of f32 at every width: the same samples, so times compare across widths.
DEFAULT_IMAGES = [(512, 32768), (2048, 8192), (8192, 2048), (32768, 512)]
DEFAULT_KERNELS = "3,5,7,9,11,13,15,21,31,63,127"
DEFAULT_RADII = "8,16,24,32,40,48,56,64,96,128"
# u8 (rounded and clamped outputs, the same transforms) at a few points near the crossovers, on
# 8192 x 8192 (64 MiB of u8).
U8_IMAGE = (8192, 8192)
U8_KERNELS, U8_RADII = (9, 13, 21), (32, 48, 64)
METHODS = ("direct", "fft", "auto")
# A fixed method slower than this many times the other after its first run is not repeated: its
# median cannot become the better one, and a 127 x 127 direct sum takes seconds.
DECIDED = 3.0
LIMIT = 1.2  # the bound on auto / best


def picked(out):
    """The method oocconv's --stats text says the CPU ran ('..., accumulate f32, direct; ...' or 'FFT ...')."""
    m = re.search(r"^operation .*?accumulate \w+, (direct|fft)", out, re.M | re.I)
    return m.group(1).lower() if m else "?"


def point(b, conv, src, W, t, opts, offset):
    """Times direct, fft and auto on one input (rotating order); returns medians, runs, auto's pick."""
    base = [conv, src, "null:", "--width", str(W), "--type", t, "--device", "cpu", "--threads", str(b.a.threads),
            "--stats", "text"] + opts
    times = {m: [] for m in METHODS}
    pick = "?"
    for rep in range(b.a.repeats):
        k = (rep + offset) % len(METHODS)
        for m in METHODS[k:] + METHODS[:k]:
            other = {"direct": "fft", "fft": "direct"}.get(m)
            if rep > 0 and other and times[m] and times[other] and times[m][0] > DECIDED * times[other][0]:
                continue
            r = b.timed(base + ["--method", m])
            times[m].append(r.wall)
            if m == "auto":
                pick = picked(r.out)
    return {m: statistics.median(v) for m, v in times.items()}, times, pick


def case_fft_auto(b):
    conv, rows, summary = b.exe("oocconv"), [], []
    jobs = b.strs("jobs", "2d,sep")
    ks, radii = b.ints("kernels", DEFAULT_KERNELS), b.ints("radii", DEFAULT_RADII)
    types = b.strs("types", "f32,u8")
    open(os.path.join(b.work, "ops_kernels.py"), "w").write(OPS_PY)
    b.sh([sys.executable, os.path.join(b.work, "ops_kernels.py"), b.work,
          ",".join(map(str, sorted(set(ks) | set(U8_KERNELS))))])
    runs = [("f32", W, H, ks, radii) for W, H in b.images(DEFAULT_IMAGES)] if "f32" in types else []
    if "u8" in types:
        runs.append(("u8", *U8_IMAGE, [k for k in U8_KERNELS if k in ks] or list(U8_KERNELS),
                     [r for r in U8_RADII if r in radii] or list(U8_RADII)))
    n = 0
    for t, W, H, kk, rr in runs:
        src = b.gen(f"fftauto_{t}_{W}x{H}.raw", W, H, t, "noise")
        nbytes = W * H * BYTES[t]
        points = ([("2d", f"K{k}", ["--kernel", os.path.join(b.work, f"k{k}.npy")]) for k in kk] if "2d" in jobs
                  else []) + ([("sep", f"r{r}", ["--radius", str(r)]) for r in rr] if "sep" in jobs else [])
        for job, size, opts in points:
            med, times, pick = point(b, conv, src, W, t, opts, n)
            n += 1
            best_m = min(("direct", "fft"), key=lambda m: med[m])
            best = med[best_m]
            ratio = med["auto"] / best
            # The fixed method auto took, timed as such: what the pick costs without auto's own noise.
            pick_ratio = med[pick] / best if pick in med else float("nan")
            params = f"{t} {job} {size} {W}x{H} to null:"
            for m in METHODS:
                note = f"{len(times[m])} run(s)" + (f"; picked {pick}; auto/best {ratio:.2f}; pick/best "
                                                    f"{pick_ratio:.2f}" +
                                                    (" OVER 1.2" if ratio > LIMIT else "") if m == "auto" else "")
                rows.append(b.row("fft_auto", f"oocconv cpu {m}", params, nbytes, times[m],
                                  f"oocconv cpu {best_m}", best, None, "", note))
            summary.append((t, job, W, H, size, med["direct"], med["fft"], med["auto"], pick, best_m, ratio,
                            pick_ratio))
            print(f"fft-auto: {params}: direct {med['direct']:.3f} fft {med['fft']:.3f} auto {med['auto']:.3f} "
                  f"({pick}) auto/best {ratio:.2f}", file=sys.stderr, flush=True)
        b.rm(src)
    b.write("fft_auto", rows, f"--method direct, fft and auto on the CPU ({b.a.threads} threads), input in "
            f"{b.work}, to null:, whole processes; median of {b.a.repeats} alternated (a fixed method more than "
            f"{DECIDED:g}x the other after one run is not repeated); ratio = the better fixed method's time / this "
            f"row's; auto must stay within {LIMIT}x of the better")
    lines = ["", "# fft-auto summary: seconds (medians), auto's pick, auto / best (* over 1.2), and the fixed "
             "method auto picked / best (pick/best: the choice without auto's own runs' noise)",
             "type job width x height size  direct    fft   auto  pick    best  auto/best  pick/best"]
    for t, job, W, H, size, d, f, a, pick, best_m, ratio, pr in summary:
        lines.append(f"{t:4} {job:3} {W:>5} x {H:<5}  {size:>4}  {d:7.3f} {f:6.3f} {a:6.3f}  {pick:6}  {best_m:6}  "
                     f"{ratio:5.2f}{' *' if ratio > LIMIT else '  '}     {pr:5.2f}{' *' if pr > LIMIT else ''}")
    worst = max((s[-2] for s in summary), default=0)
    worst_pick = max((s[-1] for s in summary), default=0)
    lines.append(f"# worst auto/best {worst:.2f}; over {LIMIT}: {sum(s[-2] > LIMIT for s in summary)} of "
                 f"{len(summary)}; worst pick/best {worst_pick:.2f}, over {LIMIT}: "
                 f"{sum(s[-1] > LIMIT for s in summary)}")
    print("\n".join(lines))
    with open(os.path.join(b.work, "fft_auto.txt"), "a") as f:
        f.write("\n".join(lines) + "\n")
