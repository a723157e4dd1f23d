#!/usr/bin/env python3
"""CPU start experiment: side by side, rotated order, page cache to null:.
Variants: cpu, cuda --cpu-start off (the old behaviour), cuda (cpu-start auto), auto."""
import json, os, subprocess, sys, time, statistics
B = sys.argv[1]; W = sys.argv[2]
out = open(os.path.join(os.environ["OUT"], "exp.txt"), "a")
def log(s):
    print(s); out.write(s + "\n"); out.flush()
variants = [("cpu", ["--device", "cpu"]), ("cuda-off", ["--device", "cuda", "--cpu-start", "off"]),
            ("cuda", ["--device", "cuda"]), ("auto", [])]
cases = [("64x64", f"{W}/s64.raw", 64, 5), ("1g", f"{W}/g1.raw", 16384, 7), ("32g", f"{W}/g32.raw", 131072, 3)]
for name, path, width, rounds in cases:
    if not os.path.exists(path): continue
    for r in (3, 16):
        res = {v: [] for v, _ in variants}; cpub = {v: [] for v, _ in variants}
        for k in range(rounds):
            order = variants[k % 4:] + variants[:k % 4]
            for v, args in order:
                cmd = [f"{B}/oocconv", path, "null:", "--width", str(width), "--radius", str(r),
                       "--stats", "json", "--no-progress"] + args
                t = time.perf_counter(); p = subprocess.run(cmd, capture_output=True, text=True)
                dt = time.perf_counter() - t
                if p.returncode != 0:
                    log(f"FAIL {name} r{r} {v}: {p.stderr.strip()[-300:]}"); continue
                j = json.loads(p.stdout)
                res[v].append(dt); cpub[v].append(j.get("cpu_bands", -1))
        for v, _ in variants:
            xs = res[v]
            if xs:
                log(f"{name} r{r} {v:9s} median {statistics.median(xs):.4f} s  all " +
                    " ".join(f"{x:.3f}" for x in xs) + f"  cpu_bands {cpub[v]}")
