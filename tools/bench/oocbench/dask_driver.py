"""Driver of the bench case `dask` (cases/dask_cluster.py), run with the Python that has ooc and
dask: one LocalCluster of processes kept up for every timed run, each tool reading the same Zarr
input and writing its own Zarr store (oocrun's layout, --compress as the input's) on the same disk,
in an order that rotates from repeat to repeat. ooc.dask's filters of da.from_zarr run as the CLI's
parts (ooc's Zarr reader and writer in each task); the same Gaussian of da.from_array(the zarr
array) takes the general path (dask's Zarr I/O), as does scipy's; a dask copy of the store (no
filter) is the floor that reading and writing Zarr through dask sets. Prints one JSON object: tool -> seconds of each
run, and the checks."""
import argparse, json, os, shutil, subprocess, sys, time

import numpy as np
import dask
import dask.array as da
import scipy.ndimage as ndi
import zarr
from distributed import Client, LocalCluster

import ooc.dask as od

def setup():
    global a, level, shape, dtype, radius, chunks
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True)          # an OME-Zarr store (level 0 read)
    ap.add_argument("--work", required=True)
    ap.add_argument("--oocrun", required=True)
    ap.add_argument("--chain", required=True)
    ap.add_argument("--sigma", type=float, default=2.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)   # oocrun's
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compress", default="blosc")     # the outputs' codec, as the input's
    # glibc's mmap threshold in the workers (bytes; 0: glibc's and dask's defaults). dask starts
    # its workers with MALLOC_TRIM_THRESHOLD_=65536, and zarr-python allocates a buffer or two
    # per chunk (1 MiB here), each then mapped and unmapped afresh: Zarr through dask ran 15-20x
    # slower than through the same code in the client (a dask copy of 512 MiB, 21.7 s against
    # 1.3 s with the buffers kept in the heap). It is the cluster's setup, the same for every tool.
    ap.add_argument("--mmap-threshold", type=int, default=32 << 20)
    a = ap.parse_args()

    level = os.path.join(a.input, "0")
    shape, dtype = zarr.open(level, mode="r").shape, zarr.open(level, mode="r").dtype
    radius = int(4.0 * a.sigma + 0.5)  # scipy's truncate 4
    chunks = od.suggest_chunks(shape, dtype, a.chain)
    chunks = (max(512, chunks[0] // 512 * 512),) + tuple(shape[1:])  # cut on the store's chunks


def out(name):
    return os.path.join(a.work, "dask_out_" + name + ".zarr")


def source():
    """The store as da.from_zarr reads it: ooc.dask's filters of it written by ooc.dask.to_zarr
    run as the CLI's parts (the store path), each task reading and writing Zarr in ooc."""
    return da.from_zarr(level, chunks=chunks)


def dask_source():
    """The same samples through da.from_array: ooc.dask's general path, dask reading and
    writing the chunks (zarr-python) and ooc filtering the blocks in memory."""
    return da.from_array(zarr.open(level, mode="r"), chunks=chunks)


def write(y, name):
    od.to_zarr(y, out(name), compress=a.compress)


def ooc_gaussian():
    write(od.gaussian_filter(source(), a.sigma), "ooc_gaussian")


def ooc_gaussian_general():
    write(od.gaussian_filter(dask_source(), a.sigma), "ooc_gaussian_general")


def ooc_gaussian_f32():  # float32 sums, as oocrun's on f32 (precision auto)
    write(od.gaussian_filter(source(), a.sigma, precision="f32"), "ooc_gaussian_f32")


def ooc_chain():
    write(od.pipeline(source(), a.chain), "ooc_chain")


def copy():
    write(source(), "copy")


def scipy_gaussian():  # dask-image's method: map_overlap around scipy.ndimage per block
    y = dask_source().map_overlap(ndi.gaussian_filter, depth=radius, boundary="reflect",
                             sigma=a.sigma, mode="reflect", dtype=dtype)
    write(y, "scipy_gaussian")


def cli(words, name):
    subprocess.run([a.oocrun, a.input, out(name), words, "--threads", str(a.threads), "-q",
                    "--compress", a.compress], check=True)


def same(p, q, rows=2048):
    """Whether two stores hold the same samples (strip by strip: they are larger than memory)."""
    x, y = zarr.open(os.path.join(p, "0"), "r"), zarr.open(os.path.join(q, "0"), "r")
    return all(np.array_equal(x[r:r + rows], y[r:r + rows]) for r in range(0, shape[0], rows))


def largest_difference(x, y):
    return float(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)).max())


def checks(tools):
    """After the timed runs, one output or two at a time (each as large as the input): the fused
    pipeline against oocrun's, and the Gaussians on their first rows against ooc.dask's."""
    c = {}
    tools["ooc.dask.gaussian_filter"]()
    tools["ooc.dask.gaussian_filter (dask's Zarr I/O)"]()
    ok = same(out("ooc_gaussian"), out("ooc_gaussian_general"))
    c["ooc.dask.gaussian_filter"] = "identical to the general path's" if ok else \
        "MISMATCH with the general path's"
    for n in ("ooc_gaussian", "ooc_gaussian_general"):
        shutil.rmtree(out(n), ignore_errors=True)
    tools["ooc.dask.pipeline (3 stages)"]()
    tools["oocrun pipeline (3 stages)"]()
    ok = same(out("ooc_chain"), out("cli_chain"))
    c["ooc.dask.pipeline (3 stages)"] = "identical to oocrun's" if ok else "MISMATCH with oocrun's"
    for n in ("ooc_chain", "cli_chain"):
        shutil.rmtree(out(n), ignore_errors=True)
    rows = 2048
    mine = od.gaussian_filter(source(), a.sigma)[:rows].compute()
    peer = source().map_overlap(ndi.gaussian_filter, depth=radius, boundary="reflect",
                                sigma=a.sigma, mode="reflect", dtype=dtype)[:rows].compute()
    c["dask map_overlap(scipy.ndimage.gaussian_filter)"] = \
        "max |diff| vs ooc.dask %.3g (first %d rows)" % (largest_difference(peer, mine), rows)
    tools["oocrun gaussian"]()
    cli_rows = zarr.open(os.path.join(out("cli_gaussian"), "0"), "r")[:rows]
    c["oocrun gaussian"] = "max |diff| vs ooc.dask %.3g (first %d rows)" % (
        largest_difference(cli_rows, mine), rows)
    shutil.rmtree(out("cli_gaussian"), ignore_errors=True)
    return c


def main():
    setup()
    tools = {
        "ooc.dask.gaussian_filter": ooc_gaussian,
        "ooc.dask.gaussian_filter (dask's Zarr I/O)": ooc_gaussian_general,
        "ooc.dask.gaussian_filter f32 sums": ooc_gaussian_f32,
        "ooc.dask.pipeline (3 stages)": ooc_chain,
        "dask map_overlap(scipy.ndimage.gaussian_filter)": scipy_gaussian,
        "oocrun gaussian": lambda: cli("gaussian sigma=%g radius=%d" % (a.sigma, radius),
                                       "cli_gaussian"),
        "oocrun pipeline (3 stages)": lambda: cli(a.chain, "cli_chain"),
        "dask Zarr copy (no filter)": copy,
    }
    outputs = {"ooc.dask.gaussian_filter": "ooc_gaussian",
               "ooc.dask.gaussian_filter (dask's Zarr I/O)": "ooc_gaussian_general",
               "ooc.dask.gaussian_filter f32 sums": "ooc_gaussian_f32",
               "ooc.dask.pipeline (3 stages)": "ooc_chain",
               "dask map_overlap(scipy.ndimage.gaussian_filter)": "scipy_gaussian",
               "oocrun gaussian": "cli_gaussian", "oocrun pipeline (3 stages)": "cli_chain",
               "dask Zarr copy (no filter)": "copy"}
    if a.mmap_threshold:
        env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}),
                   MALLOC_MMAP_THRESHOLD_=str(a.mmap_threshold))
        dask.config.set({"distributed.nanny.pre-spawn-environ": env})
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        names = list(tools)
        times = {n: [] for n in names}
        for rep in range(a.repeats):
            k = rep % len(names)
            for n in names[k:] + names[:k]:
                shutil.rmtree(out(outputs[n]), ignore_errors=True)
                subprocess.run(["sync"])
                t0 = time.perf_counter()
                tools[n]()
                times[n].append(time.perf_counter() - t0)
                print(n, "%.2f s" % times[n][-1], file=sys.stderr, flush=True)
                shutil.rmtree(out(outputs[n]), ignore_errors=True)  # room for the next one
        found = checks(tools)
    for n in outputs.values():
        shutil.rmtree(out(n), ignore_errors=True)
    print(json.dumps({"times": times, "checks": found, "chunks": chunks, "shape": list(shape),
                      "workers": a.workers, "mmap_threshold": a.mmap_threshold}))


# The workers are processes started afresh: they import this file, which must not run again.
if __name__ == "__main__":
    main()
