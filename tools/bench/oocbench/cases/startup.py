# Case `startup`: --device auto against both fixed backends over jobs and image sizes (the table
# of README's "--device auto"), page cache to null:, with the choice and oocinfo's estimate.
import os

from ..common import BYTES, med, rss, stats_json, stats_note, walls

# Each job: the tool, its sample type, and its options (besides input, output and size).
AUTO_JOBS = {
    "sep3": ("oocconv", "f32", ["--radius", "3"]),
    "sep16": ("oocconv", "f32", ["--radius", "16"]),
    "k7": ("oocconv", "f32", ["--kernel", "{k7}"]),  # random kernels: a rank-1 one runs separable
    "k31": ("oocconv", "f32", ["--kernel", "{k31}"]),
    "eq": ("ooceq", "u8", []),
    "atax": ("oocatax", "f32", ["--x", "random", "--precision", "f64"]),
}
DEFAULT_JOBS = "sep3,sep16"


def case_startup(b):
    info, rows = b.exe("oocinfo"), []
    jobs = b.strs("jobs", DEFAULT_JOBS)
    for j in jobs:
        if j not in AUTO_JOBS:
            raise SystemExit(f"startup: unknown job '{j}' (have {', '.join(AUTO_JOBS)})")
    import numpy as np
    kernels = {}
    for k in (7, 31):
        kernels[f"k{k}"] = os.path.join(b.work, f"startup_k{k}.npy")
        np.save(kernels[f"k{k}"], np.random.default_rng(k).uniform(0.1, 1.0, (k, k)) / (k * k * 0.55))
    for W, H in b.images([(64, 64), (16384, 16384)]):
        # One input at a time, of the same bytes for every job (u8: twice as wide and tall), removed
        # before the next type's is made: at 64 GiB two would not fit in memory.
        for t in dict.fromkeys(AUTO_JOBS[j][1] for j in jobs):
            w, h = (W * 2, H * 2) if t == "u8" else (W, H)
            src = b.gen(f"startup_{t}_{w}x{h}.raw", w, h, t)
            for j in [j for j in jobs if AUTO_JOBS[j][1] == t]:
                rows += auto_rows(b, info, j, src, w, h, [x.format(**kernels) for x in AUTO_JOBS[j][2]])
            b.rm(src)
            b.rm_prefixed("startup_y_")
    b.rm(*kernels.values())
    b.write("startup", rows, f"--device auto against both backends, page cache to null:, wall seconds, "
            f"median of {b.a.repeats}; ratio = the best fixed backend's time / this; jobs {','.join(jobs)}")


def auto_rows(b, info, j, src, w, h, extra):
    """The rows of one job on one input: --device cpu, cuda and auto (or those of --devices)."""
    tool, t, _ = AUTO_JOBS[j]
    b.warm(src)
    exe = b.exe(tool)
    if tool == "oocatax":
        base = [exe, src, "--rows", str(h), "--cols", str(w), "--type", t, *extra, "--out",
                os.path.join(b.work, f"startup_y_{j}.npy"), "--no-progress"]
    else:
        base = [exe, src, "null:", "--width", str(w), "--type", t, *extra]
    est = []
    if tool == "oocconv":
        est = [l.strip() for l in b.capture([info, src, "--width", str(w), "--type", t, *extra])
               .splitlines() if "backend:" in l]
    tools = {}
    for d, why in b.devices(show_cuda=True) + ([("auto", None)] if b.a.devices is None else []):
        cmd = base + ["--device", d, "--stats", "json"]
        tools[f"{tool} {d}"] = dict(cmd=cmd) if not why else dict(note=why)
    res = b.measure(tools)
    fixed = {n: med(ts) for n, ts in res.items() if n in (f"{tool} cpu", f"{tool} cuda")}
    best = min(fixed, key=fixed.get) if fixed else ""
    rows = []
    for n, spec in tools.items():
        note = spec.get("note", "")
        if n in res:
            js = [x for x in (stats_json(r.out) for r in res[n]) if x]
            if js:
                s = js[-1]
                note = f"{s['backend']}; {s.get('backend_choice', '')}; {stats_note(js)}"
            if n.endswith(" auto") and est:
                note += "; oocinfo: " + " ".join(est)
        rows.append(b.row("startup", n, f"{j} {t} {w}x{h} null:", w * h * BYTES[t], walls(res.get(n, [])),
                          f"best backend ({best})" if best and n != best else "", fixed.get(best),
                          rss(res.get(n)), note=note))
    return rows
