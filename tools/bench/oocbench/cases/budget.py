# Case `budget`: oocrun on the CPU backend under the default --mem-limit against a large one
# (--budget-big, default 16G), stage by stage (`oocrun --list`), for the 3-stage and the 6-stage
# chains and (--budget-small) under a small limit too: whether the planner keeps every core busy
# under the default budget (tiles across the row). And --threads 1 against every thread for the
# compute-bound jobs, on a part of the image (time scaled). The plan of each run in the note.
import json
from ..common import med, rss, walls

THREE = "gaussian sigma=2 ! unsharp sigma=1 amount=0.7 ! convert type=u8"
SIX = ("gaussian sigma=2 ! unsharp sigma=1 amount=0.7 ! subtract-background sigma=20 ! abs ! "
       "clamp min=0 max=100 ! scale mul=2")
STAGES = ["gaussian sigma=2", "gaussian sigma=20", "uniform size=9", "correlate1d taps=1,2,3,2,1",
          "separable row=1,2,1 col=1,2,1", "convolve kernel=box:7", "gradient-magnitude",
          "dog sigma1=1 sigma2=2", "unsharp sigma=1 amount=0.7", "subtract-background sigma=20",
          "scale mul=2", "abs", "clamp min=0 max=100", "threshold value=50", "convert type=u16",
          "minimum size=7", "maximum size=7", "opening size=7", "closing size=7",
          "white-tophat size=7", "black-tophat size=7", "median size=3", "median size=15",
          "percentile size=5 q=30", "rank size=5 index=3", "equalize"]
JOBS = {"3 stages": THREE, "6 stages": SIX, **{s: s for s in STAGES}}
COMPUTE_BOUND = ["median size=15", "6 stages"]


def plan_note(t):
    try:
        p = json.loads(t.out)["plan"]
    except (ValueError, KeyError):
        return ""
    tiles = f"tiles of {p['tile_cols']}" if p.get("tile_cols") else "whole rows"
    return (f"{p['bands']} bands of {p['band_rows']} rows, {p['slots']} slots, {p['threads']} threads, "
            f"{tiles}, estimate {p.get('estimate_seconds', 0):.3g} s")


def case_budget(b):
    a, run, rows = b.a, b.exe("oocrun"), []
    big, small = a.budget_big, a.budget_small
    images = [(65536, 4096, "f32"), (8192, 32768, "u8")]
    if a.images:
        images = [(w, h, t) for (w, h) in b.images([]) for t in b.strs("types", "f32")]
    only = [j.strip() for j in a.jobs.split(",")] if a.jobs else list(JOBS)
    for W, H, t in images:
        src = b.gen(f"budget_{t}_{W}x{H}.raw", W, H, t, "noise")
        nbytes = W * H * {"u8": 1, "u16": 2, "f32": 4}[t]
        for name in only:
            chain = JOBS[name]
            if ("equalize" in chain and t == "f32") or ("convert type=u16" in chain and t == "u16"):
                continue
            cmd = [run, src, "null:", chain, "--width", str(W), "--type", t, "--device", "cpu",
                   "--stats", "json", "-q"]
            tools = {"default --mem-limit": dict(cmd=cmd), f"--mem-limit {big}": dict(cmd=cmd + ["--mem-limit", big])}
            if small:  # refused where the job's floor is above it (the FFT's whole rows): said so
                probe = b.timed(cmd + ["--mem-limit", small], check=False)
                if "error" in probe.err:
                    rows.append(b.row("budget", f"oocrun cpu --mem-limit {small}",
                                      f"{name} {t} {W}x{H} page cache -> null:", nbytes,
                                      note="refused: " + probe.err.strip().splitlines()[-1][:300]))
                else:
                    tools[f"--mem-limit {small}"] = dict(cmd=cmd + ["--mem-limit", small])
            b.warm(src)
            res = b.measure(tools)
            base = f"--mem-limit {big}"
            for tool, ts in res.items():
                rows.append(b.row("budget", f"oocrun cpu {tool}", f"{name} {t} {W}x{H} page cache -> null:", nbytes,
                                  walls(ts), base if tool != base else "", med(res[base]), rss(ts), "",
                                  plan_note(ts[-1])))
        # Threads: 1 against all, on the first 128 MiB of rows.
        part = min(H, max(64, (128 << 20) // (nbytes // H)))
        for name in [j for j in COMPUTE_BOUND if j in only]:
            chain = JOBS[name]
            cmd = [run, src, "null:", chain, "--width", str(W), "--type", t, "--device", "cpu", "--rows",
                   f"0:{part}", "--stats", "json", "-q"]
            tools = {"--threads 1": dict(cmd=cmd + ["--threads", "1"]),
                     f"--threads {a.threads}": dict(cmd=cmd + ["--threads", str(a.threads)])}
            res = b.measure(tools)
            base = "--threads 1"
            for tool, ts in res.items():
                rows.append(b.row("budget", f"oocrun cpu {tool}", f"{name} {t} {W}x{part} page cache -> null:",
                                  part * (nbytes // H), walls(ts), base if tool != base else "",
                                  med(res[base]), rss(ts), "", plan_note(ts[-1])))
        b.rm(src)
    b.write("budget", rows, f"oocrun --device cpu under the default --mem-limit against --mem-limit {big} (and "
            f"--threads 1 against {a.threads}), median of {a.repeats}; ratio = baseline's time / this")
