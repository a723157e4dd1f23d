#!/usr/bin/env python3
"""Summarizes the oocconv --stats json files that gpu_bench.sh leaves in a folder (medians)."""
import glob, json, statistics, sys
out = sys.argv[1]
for t in ("f32", "u8"):
    for dev in ("cuda", "cpu"):
        runs = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/pc_{t}_{dev}_*.json"))]
        if not runs:
            continue
        tot = statistics.median(r["throughput"]["input_mb_per_s"] / 1e3 for r in runs)
        st = statistics.median(r["throughput"]["streaming_input_mb_per_s"] / 1e3 for r in runs)
        r = runs[0]
        print(f"page cache -> null {t} {dev:4s}: {tot:6.2f} GB/s in, {st:6.2f} GB/s streaming "
              f"(median of {len(runs)}; setup {r['seconds']['setup']:.2f} s of {r['seconds']['total']:.2f}), "
              f"{r['plan']['bands']} bands x {r['plan']['band_rows']} rows, {r['plan']['slots']} slots, "
              f"peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB, {r['backend']}")
s = json.load(open(f"{out}/synth_f32_cuda.json"))
print(f"synthetic -> null f32 cuda: {s['throughput']['input_mb_per_s'] / 1e3:.2f} GB/s, "
      f"{s['seconds']['total']:.2f} s")
b = json.load(open(f"{out}/big_cgroup.json"))
print(f"big: {b['input']['bytes'] / 2**30:.1f} GiB in {b['seconds']['total']:.1f} s = "
      f"{b['throughput']['input_mb_per_s'] / 1e3:.2f} GB/s, peak RSS {b['peak_rss_bytes'] / 2**20:.0f} MiB, "
      f"plan {b['plan']['band_rows']} rows x {b['plan']['slots']} slots, ring {b['plan']['ring_bytes'] / 2**20:.0f} MiB")
