#!/usr/bin/env python3
"""Direct I/O against the page cache on this VM (issue 34 item 3); writes direct_io.csv.

Cold reads to null: (oocconv --io direct, --io mmap, dd iflag=direct bs=16M); cold file-to-file
copies with the final sync (oocconv --io direct / mmap, cp, dd iflag=direct oflag=direct); the
runs interleaved, REPS rounds, medians. Then page-cache survival: a 1 GiB file cached, a job over
a file twice its --mem-limit, how much of the 1 GiB file is still cached (fincore), for --io
direct and --io mmap, on the whole machine and inside a memory cgroup (v1) of LIMIT bytes where
the 1 GiB file was cached too (a Slurm job's view). Needs root (drop_caches, cgroups).

Usage: direct_io_bench.py BIN_DIR BIG OTHER OUT_DIR CSV [REPS [TIMES_LOG]]
  BIG: 8192 x H f32 raw file (4-8 GiB); OTHER: a 1 GiB file; OUT_DIR: where copies go.
  TIMES_LOG: take the timings from the "round R NAME: T s" lines of an earlier run's output.
"""
import os
import statistics
import subprocess
import sys
import time

BIN, BIG, OTHER, OUT_DIR, CSV = sys.argv[1:6]
REPS = int(sys.argv[6]) if len(sys.argv) > 6 else 3
SIZE = os.path.getsize(BIG)
OUT = os.path.join(OUT_DIR, "copy.raw")
CONV = [os.path.join(BIN, "oocconv"), BIG]
OPTS = ["--width", "8192", "--type", "f32", "--radius", "0", "-q"]


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, **kw)


def drop():
    sh("sync; echo 3 > /proc/sys/vm/drop_caches")


def timed(cmd):
    drop()
    t = time.monotonic()
    sh(cmd)
    return time.monotonic() - t


def cached_fraction(path):
    out = sh("fincore --bytes --noheadings --output RES " + path).stdout.split()
    return int(out[0]) / os.path.getsize(path)


conv = " ".join(CONV)
opts = " ".join(OPTS)
read_cases = {
    "read oocconv --io direct": f"{conv} null: {opts} --io direct",
    "read oocconv --io mmap": f"{conv} null: {opts} --io mmap",
    "read dd iflag=direct bs=16M": f"dd if={BIG} of=/dev/null iflag=direct bs=16M status=none",
}
copy_cases = {
    "copy oocconv --io direct + sync": f"{conv} {OUT} {opts} --io direct && sync",
    "copy oocconv --io mmap + sync": f"{conv} {OUT} {opts} --io mmap && sync",
    "copy cp + sync": f"cp {BIG} {OUT} && sync",
    "copy dd iflag=direct oflag=direct bs=16M + sync":
        f"dd if={BIG} of={OUT} iflag=direct oflag=direct bs=16M status=none && sync",
}
times = {k: [] for k in list(read_cases) + list(copy_cases)}
if len(sys.argv) > 7:
    for line in open(sys.argv[7]):
        if line.startswith("round "):
            name, t = line.split(" ", 2)[2].rsplit(": ", 1)
            times[name].append(float(t.split()[0]))
for r in range(REPS if len(sys.argv) <= 7 else 0):
    for name, cmd in list(read_cases.items()) + list(copy_cases.items()):
        if os.path.exists(OUT):
            os.unlink(OUT)
        times[name].append(timed(cmd))
        print(f"round {r} {name}: {times[name][-1]:.2f} s", flush=True)
if os.path.exists(OUT):
    os.unlink(OUT)

rows = []
for name, ts in times.items():
    med = statistics.median(ts)
    rows.append((name, SIZE, med, SIZE / med / 1e9, " ".join(f"{t:.2f}" for t in ts)))


def survival(io, cgroup_limit=None):
    """The fraction of OTHER still cached after a job over BIG with --mem-limit SIZE/2."""
    drop()
    mem = f"{SIZE // 2 >> 20}M"
    job = f"{conv} null: {opts} --io {io} --mem-limit {mem}"
    if cgroup_limit is None:
        sh(f"cat {OTHER} > /dev/null")
        before = cached_fraction(OTHER)
        sh(job)
    else:
        # A child of this process's memory cgroup (v1), so the machine's own accounting holds.
        own = [l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup") if ":memory:" in l][0]
        g = f"/sys/fs/cgroup/memory{own}/ooc-direct-bench"
        os.makedirs(g, exist_ok=True)
        with open(g + "/memory.limit_in_bytes", "w") as f:
            f.write(str(cgroup_limit))
        inside = f"echo $$ > {g}/cgroup.procs && "
        sh(inside + f"cat {OTHER} > /dev/null")
        before = cached_fraction(OTHER)
        sh(inside + job)
        sh(f"echo $$ > /sys/fs/cgroup/memory{own}/cgroup.procs; true")
        os.rmdir(g)
    return before, cached_fraction(OTHER)


for where, limit in (("machine (23 GiB RAM)", None), ("memory cgroup 5 GiB", 5 << 30)):
    for io in ("direct", "mmap"):
        fr = []
        for _ in range(REPS):
            fr.append(survival(io, limit)[1])
            print(f"survival {where} {io}: {fr[-1]:.3f}", flush=True)
        rows.append((f"1 GiB file still cached after --io {io} over {SIZE >> 30} GiB "
                     f"(--mem-limit {SIZE // 2 >> 20}M), {where}", SIZE, "",
                     statistics.median(fr), " ".join(f"{x:.3f}" for x in fr)))

with open(CSV, "w") as f:
    f.write("case,bytes,median_s,gb_per_s_or_cached_fraction,runs\n")
    for name, size, med, rate, runs in rows:
        med_s = f"{med:.2f}" if med != "" else ""
        f.write(f"\"{name}\",{size},{med_s},{rate:.3f},\"{runs}\"\n")
print(open(CSV).read())
