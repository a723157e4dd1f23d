# Case `labels` (issue 47): connected components of a u8 mask (thresholded smoothed noise: blobs,
# about 10^6 components at the default 32768 x 32768, 1 GiB) in memory: ooc.label against
# scipy.ndimage.label and skimage.measure.label (on a slab of the rows past 16384, its time scaled:
# its int64 labels of 1 GiB do not fit), 8-connected, each the call alone in a process of
# its own on the array already loaded; ooclabel file to file beside them (whole process). Then the
# regions table with intensity (the noise itself): ooclabel --regions --intensity and
# ooc.regionprops_table against skimage.measure.regionprops_table on scipy's labels (on a slab of
# the rows, its time scaled, as it takes minutes on the whole). The in-memory calls run twice:
# as they are, and "memory warm", each process first touching and freeing 5 GiB (untimed): on a
# VM whose free pages go back to the hypervisor (free page reporting), a fresh page costs a host
# fault to touch (about 2.5 s a GiB here, single-threaded) when it was freed more than a second
# before, and both peers' 4 GiB outputs pay it or not by chance of timing. On a GPU machine the
# GPU's rows come first (labels_gpu.py); --no-scipy then leaves out the in-memory peers.
import json, os, shlex, statistics, sys
from ..common import cgroup, cgroup_peak, python_has, rss, walls
from .labels_gpu import gpu_rows

DRIVER = r"""
import json, sys, time, numpy as np
tool, mask_path, inten_path, threads, part = sys.argv[1:6]
threads, part = int(threads), int(part)
m = np.load(mask_path)
if sys.argv[6:] == ["warm"]:  # pages the hypervisor backs again, freed just before the call
    w = np.ones(5 << 30, np.uint8); del w
out = {}
if tool == "ooc.label":
    import ooc
    t = time.perf_counter(); lab, n = ooc.label(m, connectivity=8, threads=threads)
    out["s"] = time.perf_counter() - t
    import scipy.ndimage as ndi                       # the check, untimed
    want, k = ndi.label(m, np.ones((3, 3), bool))
    out["check"] = "equal to scipy" if k == n and np.array_equal(lab, want) else "DIFFERS"
elif tool == "scipy":
    import scipy.ndimage as ndi
    t = time.perf_counter(); lab, n = ndi.label(m, np.ones((3, 3), bool))
    out["s"] = time.perf_counter() - t
elif tool == "skimage":
    from skimage.measure import label
    m = np.ascontiguousarray(m[: m.shape[0] // part])  # a slab: the caller scales by `part`
    t = time.perf_counter(); lab, n = label(m, connectivity=2, return_num=True)
    out["s"] = (time.perf_counter() - t) * part
elif tool == "ooc.regionprops_table":
    import ooc
    del m
    t = time.perf_counter()
    r = ooc.regionprops_table(mask_path, inten_path, connectivity=8, threads=threads)
    out["s"] = time.perf_counter() - t
    n = len(r["label"])
elif tool == "skimage.regionprops_table":
    import scipy.ndimage as ndi
    from skimage.measure import regionprops_table
    rows = m.shape[0] // part                         # a slab: the caller scales by `part`
    lab, n = ndi.label(m[:rows], np.ones((3, 3), bool))
    inten = np.load(inten_path, mmap_mode="r")[:rows].copy()
    t = time.perf_counter()
    regionprops_table(lab, inten, properties=("label", "area", "bbox", "centroid",
                                              "intensity_mean", "intensity_min", "intensity_max"))
    out["s"] = (time.perf_counter() - t) * part
out["n"] = int(n)
print(json.dumps(out))
"""


def inputs(b, side):
    """The mask and its intensity image: oocgen's noise (seed 47), smoothed and thresholded."""
    noise = os.path.join(b.work, f"labels_noise_{side}.npy")
    mask = os.path.join(b.work, f"labels_mask_{side}.npy")
    if not os.path.exists(noise):
        b.sh([b.exe("oocgen"), noise, "--width", str(side), "--height", str(side), "--type", "u8",
              "--pattern", "noise", "--seed", "47", "--no-progress", "-q"])
    if not os.path.exists(mask):
        b.sh([b.exe("oocrun"), noise, mask, "gaussian sigma=4 ! threshold value=136", "-q"])
    return noise, mask


def case_labels(b):
    side = b.a.size or 32768
    noise, mask = inputs(b, side)
    nbytes = side * side
    b.warm(noise, mask)
    if b.gpu:
        gpu_rows(b, mask, side)
        if b.a.no_scipy:  # the GPU's rows alone (the in-memory peers take minutes)
            return
    driver = os.path.join(b.work, "labels_driver.py")
    open(driver, "w").write(DRIVER)
    py = [sys.executable, driver]
    env = dict(b.env, PYTHONPATH=os.pathsep.join(
        [os.path.join(b.build, "python"), b.env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    T, part = str(b.a.threads), 8
    sk_part = 4 if side > 16384 else 1
    label_out = os.path.join(b.work, "labels_out.npy")
    have_sk = python_has("skimage")
    tools = {"ooc.label": dict(cmd=py + ["ooc.label", mask, noise, T, "1"], env=env, capture=True),
             "scipy.ndimage.label": dict(cmd=py + ["scipy", mask, noise, T, "1"], capture=True),
             "ooclabel file to file": dict(cmd=[b.exe("ooclabel"), mask, label_out, "--connectivity",
                                                "8", "--threads", T, "-q"], out=label_out)}
    if have_sk:
        # Its int64 labels and scratch of a 1 GiB mask pass this VM's memory (killed): a slab.
        sk = "skimage.measure.label" + (f" (1/{sk_part}, x{sk_part})" if sk_part > 1 else "")
        tools[sk] = dict(
            cmd=py + ["skimage", mask, noise, T, str(sk_part)], capture=True)
    for name, args in (("ooc.label", ["ooc.label", mask, noise, T, "1", "warm"]),
                       ("scipy.ndimage.label", ["scipy", mask, noise, T, "1", "warm"])):
        tools[name + " (memory warm)"] = dict(tools[name], cmd=py + args)
    res = b.measure(tools)
    b.rm(label_out)

    def inner(name):  # the call alone, from the driver's line; else the whole process
        vals = [json.loads(t.out.strip().splitlines()[-1]) for t in res[name]
                if t.out.strip().startswith("{")]
        return vals, ([v["s"] for v in vals] if vals else walls(res[name]))

    found = {n: inner(n) for n in tools}
    def fastest_peer(warm):
        peers = [n for n in found if n.startswith(("scipy", "skimage")) and warm == ("warm" in n)]
        return min(peers, key=lambda n: statistics.median(found[n][1]))
    params = f"u8 {side}x{side} mask, 8-connected, {b.a.threads} threads"
    rows = []
    for n in tools:
        fastest = fastest_peer("warm" in n)
        base = statistics.median(found[fastest][1])
        vals, times = found[n]
        count = vals[-1]["n"] if vals else ""
        check = vals[-1].get("check", "") if vals else ""
        note = (f"{count} components; in memory, the call alone"
                + ("; 5 GiB touched and freed first" if "warm" in n else "")
                + (f" on 1/{sk_part} of the rows, time x{sk_part}" if "1/" in n else "") if vals else
                "whole process, .npy in the page cache to .npy (u32)")
        rows.append(b.row("labels", n, params, nbytes, times, fastest, base, rss(res[n]), check,
                          note))

    # The regions table with intensity.
    table = os.path.join(b.work, "labels_regions.csv")
    tools = {"ooclabel --regions --intensity to null:": dict(
                 cmd=[b.exe("ooclabel"), mask, "null:", "--connectivity", "8", "--regions", table,
                      "--intensity", noise, "--threads", T, "-q"]),
             "ooc.regionprops_table": dict(cmd=py + ["ooc.regionprops_table", mask, noise, T, "1"],
                                           env=env, capture=True)}
    res = b.measure(tools)
    if have_sk:  # minutes: one run
        res.update(b.measure({"skimage.regionprops_table": dict(
            cmd=py + ["skimage.regionprops_table", mask, noise, T, str(part)], capture=True)},
            repeats=1))
    found = {n: inner(n) for n in res}
    peer = "skimage.regionprops_table" if have_sk else "ooc.regionprops_table"
    base = statistics.median(found[peer][1])
    params = f"u8 {side}x{side} mask, u8 intensity, 8-connected, {b.a.threads} threads"
    for n in res:
        vals, times = found[n]
        note = {"ooclabel --regions --intensity to null:":
                "whole process: label, area, bbox, centroid, intensity sum/mean/min/max/std CSV",
                "ooc.regionprops_table": "from the .npy paths: the CSV read into a dict of arrays",
                "skimage.regionprops_table":
                f"on 1/{part} of the rows (scipy's labels, untimed), time x{part}; label, area, "
                "bbox, centroid, intensity_mean/min/max"}[n]
        rows.append(b.row("labels", n, params, nbytes, times, peer, base, rss(res[n]), "", note))
    b.write("labels", rows, f"connected components of a {side}x{side} u8 mask in memory and its "
            f"regions table with intensity, {b.a.threads} threads")


def case_labels_ooc(b):
    """Out of core: oocgen's blob mask (gaussian-spots, u8, 65536 wide, --big-gib GiB; one
    component per 64 x 64 cell) labelled 8-connected to null: under --mem-limit 2G (both passes,
    the table), against a radius-3 separable filter (gaussian sigma=1) of the same file: the
    issue's throughput ratio (0.5x asked) and peak RSS under the budget. --synth reads the same
    pattern from synth:gaussian-spots (each row made as it is read: no file, for sizes past the
    free disk), and each tool runs in a memory cgroup of the budget (root): its peak there."""
    width = 65536
    height = int(b.a.big_gib * 2**30) // width
    synth = getattr(b.a, "synth", False)
    mask = "synth:gaussian-spots" if synth else \
        b.gen(f"labels_spots_{width}x{height}.raw", width, height, "u8", "gaussian-spots")
    nbytes = width * height
    T = str(b.a.threads)
    common = [mask, "null:", "--width", str(width), "--type", "u8", "--mem-limit", "2G",
              "--threads", T, "--stats", "json", "-q"] + (["--height", str(height)] if synth else [])
    tools = {"gaussian sigma=1 (radius 3)": [b.exe("oocrun")] + common[:2] + ["gaussian sigma=1"] +
             common[2:],
             "ooclabel --connectivity 8": [b.exe("ooclabel")] + common + ["--connectivity", "8"]}
    groups = {}
    if synth:  # each tool in a cgroup of the budget (2 GiB): its peak there, no OOM kill
        for i, n in enumerate(tools):
            cg = cgroup(f"ooc-labels-{i}", 2 << 30)
            groups[n] = cg
            tools[n] = ["bash", "-c", f"echo $$ > {cg}/cgroup.procs; exec " + shlex.join(tools[n])]
    res = b.measure({n: dict(cmd=c, capture=True) for n, c in tools.items()})
    base_name = "gaussian sigma=1 (radius 3)"
    base = statistics.median(walls(res[base_name]))
    params = f"u8 {width}x{height} blob mask ({nbytes / 2**30:g} GiB{', synth:' if synth else ''}), " \
             f"--mem-limit 2G, {b.a.threads} threads, to null:"
    rows = []
    for n in tools:
        js = [json.loads(t.out) for t in res[n] if t.out.strip().startswith("{")]
        note = "whole process, " + ("each row generated as read (no file); the machine shared"
                                    if synth else "the file from the page cache or the disk")
        if n in groups:
            note += f"; cgroup of 2 GiB, peak {cgroup_peak(groups[n]) / 2**20:.0f} MiB"
        if js and "components" in js[-1]:
            note = f"{js[-1]['components']} components, {js[-1]['output']['type']} labels, " \
                   f"two passes; " + note
        rows.append(b.row("labels-ooc", n, params, nbytes, walls(res[n]), base_name, base,
                          rss(res[n]), "", note))
    b.write("labels-ooc", rows, f"a {nbytes / 2**30:g} GiB blob mask labelled out of core "
            f"against a radius-3 filter, {b.a.threads} threads")
    if not synth:
        b.rm(mask)
