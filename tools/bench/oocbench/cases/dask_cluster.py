# Case `dask`: ooc inside Dask (issue 49). A LocalCluster of processes (2 workers, one thread each)
# filtering a Zarr f32 image (default 32768 x 32768, 4 GiB) into Zarr stores: ooc.dask's Gaussian
# (float64 sums, scipy's, and float32 sums, oocrun's on f32) and a 3-stage pipeline against
# dask-image's method (map_overlap around scipy.ndimage per block) and against the oocrun command
# on the same store (its threads = --threads). ooc.dask's filters of da.from_zarr go to
# ooc.dask.to_zarr as the CLI's parts (the store path); the Gaussian once more through
# da.from_array (the general path: dask's Zarr I/O), and a dask copy of the store, the floor that
# Zarr through dask sets. Once on oocrun's default store (blosc lz4, shuffle) and once on an
# uncompressed one (the store's codec is the setup's, not the filter's). The timed runs of a
# store sit in one Python process (dask_driver.py), the cluster up for all of them.
import json, os, shutil, statistics, subprocess
from ..common import ROOT, Skip, python_has

CHAIN = "gaussian sigma=2 ! median size=3x3 ! unsharp sigma=1 amount=0.7"


def case_dask(b):
    py = "/usr/bin/python3"
    if not python_has("dask") or not python_has("distributed") or not python_has("zarr"):
        raise Skip("python3-dask, python3-distributed and python3-zarr are needed (bootstrap.sh)")
    run = b.exe("oocrun")
    W, H = b.images([(32768, 32768)])[0]
    chain = b.a.chain or CHAIN
    nbytes = W * H * 4
    rows = []
    base = "dask map_overlap(scipy.ndimage.gaussian_filter)"
    for compress, label in (("blosc", "blosc lz4"), ("none", "uncompressed")):
        raw = b.gen(f"dask_f32_{W}x{H}.raw", W, H, "f32", "noise")
        store = os.path.join(b.work, f"dask_in_{W}x{H}_{compress}.zarr")
        if not os.path.isdir(store):
            # oocrun's layout (512^2 chunks), the input of every tool.
            b.sh([run, raw, store, "scale mul=1", "--width", str(W), "-q", "--compress", compress])
        b.rm(raw)
        env = dict(b.env, PYTHONPATH=os.path.join(b.build, "python"))
        r = subprocess.run([py, os.path.join(ROOT, "tools", "bench", "oocbench", "dask_driver.py"),
                            "--input", store, "--work", b.work, "--oocrun", run, "--chain", chain,
                            "--threads", str(b.a.threads), "--repeats", str(b.a.repeats),
                            "--compress", compress],
                           env=env, check=True, stdout=subprocess.PIPE, text=True)
        shutil.rmtree(store, ignore_errors=True)
        res = json.loads(r.stdout.strip().splitlines()[-1])
        times, checks = res["times"], res["checks"]
        med = lambda n: statistics.median(times[n])  # as the rows' median_s
        for n in times:
            vs = {"ooc.dask.gaussian_filter": base, "ooc.dask.gaussian_filter f32 sums": base,
                  "ooc.dask.gaussian_filter (dask's Zarr I/O)": base,
                  "ooc.dask.pipeline (3 stages)": base,
                  "oocrun gaussian": "ooc.dask.gaussian_filter",
                  "oocrun pipeline (3 stages)": "ooc.dask.pipeline (3 stages)",
                  "dask Zarr copy (no filter)": "ooc.dask.gaussian_filter"}.get(n, "")
            what = chain if "pipeline" in n else "" if "copy" in n else "sigma=2 radius 8"
            params = f"{W}x{H} f32 Zarr ({label}) to Zarr" + (", " + what if what else "")
            mm = res.get("mmap_threshold", 0)
            path = ("" if n.startswith(("oocrun", "dask")) or "dask's" in n
                    else "store path (CLI's parts), ")
            note = (f"{path}LocalCluster {res['workers']} workers x 1 thread, blocks {res['chunks']}"
                    + (f", workers' MALLOC_MMAP_THRESHOLD_={mm}" if mm else "")
                    if not n.startswith("oocrun") else f"--threads {b.a.threads}")
            rows.append(b.row("dask", n, params, nbytes, times[n], vs and vs + f" ({label})",
                              med(vs) if vs else None, None, checks.get(n, ""), note))
    b.write("dask", rows, "Zarr f32 in /dev/shm to Zarr of the same codec; ratio = the baseline's "
            "time / this tool's (> 1: faster than it); median of " + str(b.a.repeats)
            + "; machine shared with other jobs")
