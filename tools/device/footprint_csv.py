#!/usr/bin/env python3
"""Footprint (and radix-select) timings of tools/device/bench_nodes.sh (section footprint) as one CSV.

  footprint_csv.py DIR > footprints.csv

DIR holds the section's --stats json files, footprint_<stage>_<type>_<window>_<device>_<rep>.json
(window: a footprint's name, or sizeN for size=N).
One row per stage, type, footprint and device: in-process seconds (the stats' total) over the
repeats, the backend that ran (auto's pick), and CPU / this device for the median times.
"""
import collections
import glob
import json
import os
import re
import statistics
import sys


def main():
    runs = collections.defaultdict(list)
    backend = {}
    for path in glob.glob(os.path.join(sys.argv[1], "footprint_*.json")):
        m = re.match(r"footprint_(.+)_(u8|u16|i16|u32|i32|f32|f64)_([a-z0-9]+)_(cuda|cpu|auto)_(\d+)\.json$",
                     os.path.basename(path))
        if not m:
            continue
        try:
            d = json.load(open(path))
        except (OSError, ValueError):
            continue
        key = m.groups()[:4]
        runs[key].append(d["seconds"]["total"])
        backend[key] = d.get("backend", "?")
    print("group,tool,params,runs,median_s,min_s,max_s,note")
    for key in sorted(runs):
        stage, t, fp, dev = key
        ts = runs[key]
        cpu = runs.get((stage, t, fp, "cpu"))
        ratio = ""
        if cpu and dev != "cpu":
            ratio = "; cpu / this %.1fx" % (statistics.median(cpu) / statistics.median(ts))
        window = "size=" + fp[4:] if fp.startswith("size") else "footprint=" + fp
        print('footprints,oocrun --device %s,"%s %s, %s 16384x16384 synth:noise to null:",%d,%.3f,%.3f,%.3f,'
              '"%s; in-process seconds%s"' % (dev, stage, window, t, len(ts), statistics.median(ts), min(ts),
                                                max(ts), backend[key], ratio))


if __name__ == "__main__":
    main()
