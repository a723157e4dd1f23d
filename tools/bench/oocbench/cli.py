# The command line of tools/bench/run: its options, the case selection and the loop over the
# cases (the help text is run's docstring, so that it stays at the top of the command).
import argparse, csv, os, signal, subprocess, sys, tempfile
from .cases import CASES, REGISTRY
from .cases.multi_gpu import MULTI_JOBS
from .cases.startup import AUTO_JOBS
from .cases.peers import plot
from .common import BYTES, Bench, ROOT, Skip, Stopped


def type_list(v):
    """--types: sample type names, checked when the options are read."""
    bad = [t for t in v.split(",") if t not in BYTES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown type {bad[0]!r}; use names from {', '.join(BYTES)}")
    return v


def main(doc):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", metavar="CASE", help=" ".join(CASES) + " or all (default: peers)")
    g = p.add_argument_group("every case")
    g.add_argument("--machine", help="results folder name under tools/bench/results (default: cpu-/gpu-HOST)")
    g.add_argument("--build-dir", default="build/release",
                   help="binaries (relative to the repository root or absolute); stage/bin on the GPU machine")
    g.add_argument("--no-build", action="store_true", help="use the binaries already in --build-dir")
    g.add_argument("--repeats", type=int, default=3, help="runs of each tool (median, min, max)")
    g.add_argument("--threads", type=int, default=os.cpu_count())
    g.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "ooc-bench"),
                   help="scratch folder for inputs and outputs")
    g.add_argument("--size", type=int, help="square images of this side (same as --images NxN)")
    g.add_argument("--images", help="image sizes WxH[,WxH...] (write, startup, tiff, ops, peers, multi-gpu)")
    g.add_argument("--types", type=type_list, help="sample types, e.g. u8,f32 (default per case)")
    g.add_argument("--radii", help="filter radii, e.g. 1,3,16,64 (default per case)")
    g.add_argument("--devices", help="backends cpu,cuda[,auto] (default: cpu, and cuda where a GPU is usable)")
    g.add_argument("--cold", action="store_true", help="drop the page cache before every timed run (root)")
    g = p.add_argument_group("peers")
    g.add_argument("--big", action="store_true", help="add the out-of-core case under a cgroup (root)")
    g.add_argument("--big-gib", type=float, default=32, help="size of the out-of-core image")
    g.add_argument("--synth", action="store_true", help="labels-ooc: read synth:gaussian-spots, "
                   "made row by row (no file), each tool in a memory cgroup of its budget (root)")
    g.add_argument("--plot", metavar="DIR", help="only draw the plots of DIR/peers.csv (its latest run)")
    g = p.add_argument_group("write")
    g.add_argument("--old", metavar="PATH", help="an older oocconv to run side by side")
    g = p.add_argument_group("stages")
    g.add_argument("--band-width", type=int, default=65536)
    g.add_argument("--band-rows", type=int, help="band rows (default 256 for f32, 1024 for u8)")
    g.add_argument("--kernel-repeats", type=int, default=10, help="timings in device memory (median)")
    g = p.add_argument_group("ops")
    g.add_argument("--kernels", help="ops: 2-D kernel sizes K (default 3,7,15,31); morphology: window sizes "
                   "(default 3,15,51,101)")
    g.add_argument("--morph-ops", help="morphology: the operations (default minimum,maximum,opening,median)")
    g = p.add_argument_group("atax")
    g.add_argument("--rows", type=int, default=16384)
    g.add_argument("--cols", type=int, default=16384)
    g.add_argument("--ks", help="columns of X (default 1,8,64)")
    g.add_argument("--numpy", default="1", help="k values the NumPy memmap peer runs (slow)")
    g.add_argument("--cpu-ks", help="k values of --device cpu (default: --ks)")
    g.add_argument("--cgroup-gib", type=float, default=0, help="one cold run under a memory cgroup (root)")
    g.add_argument("--keep", action="store_true", help="keep the matrix file")
    g = p.add_argument_group("multi-gpu")
    g.add_argument("--configs", help="';'-separated oocconv option sets (default: --devices 0;--devices 0,...,N-1)")
    g.add_argument("--synth-gib", type=float, default=32, help="MPI synth:noise -> null: size (0: skip; -1: no MPI rows)")
    g.add_argument("--jobs", help="multi-gpu: the jobs (default: " + ",".join(MULTI_JOBS) + "); fft-auto: 2d,sep (default both); startup: of "
                   + ",".join(AUTO_JOBS) + " (default: sep3,sep16); volumes: of 'gaussian sigma=2,median size=3,median size=5'")
    g = p.add_argument_group("budget")
    g.add_argument("--budget-big", default="16G", help="budget: the large --mem-limit the default is held to")
    g.add_argument("--budget-small", default="", help="budget: a small --mem-limit run beside them, e.g. 96M")
    g = p.add_argument_group("volumes")
    g.add_argument("--volume", help="volumes: the volume DxHxW (default 256x2048x1024)")
    g.add_argument("--no-scipy", action="store_true",
                   help="volumes: leave scipy out (minutes a run; its times depend on one thread only); "
                   "labels on a GPU machine: the GPU's rows alone")
    g.add_argument("--no-cupy", action="store_true",
                   help="volumes, labels: leave CuPy out (its whole process takes tens of seconds at 16 GiB)")
    g = p.add_argument_group("pipeline")
    g.add_argument("--null", action="store_true", help="outputs to null: (no stage-by-stage or peers)")
    g.add_argument("--chain", help="the oocrun pipeline (default: gaussian sigma=2 ! unsharp sigma=1 "
                   "amount=0.7 ! convert type=u8; libvips runs only that one)")
    a = p.parse_args()

    if a.plot:
        rows = list(csv.DictReader(open(os.path.join(a.plot, "peers.csv"))))
        last = max((r["date"], r["git"]) for r in rows)
        os.makedirs(a.workdir, exist_ok=True)
        plot([r for r in rows if (r["date"], r["git"]) == last], a.plot, os.path.basename(os.path.normpath(a.plot)),
             a.workdir)
        return 0
    cases = a.cases or ["peers"]
    for c in cases:
        if c not in CASES + ["all"]:
            p.error(f"unknown case {c!r}: choose from {', '.join(CASES)} or all")
    explicit = "all" not in cases
    cases = CASES if not explicit else list(dict.fromkeys(cases))
    if not a.no_build:
        # The peers (libvips-tools, python3-opencv, gnuplot) where apt-get can reach them; without
        # them the run goes on and their rows say they are not installed.
        if subprocess.run([os.path.join(ROOT, "tools", "bootstrap.sh")], env=dict(os.environ, OOC_BENCH_PEERS="1")).returncode:
            print("run: could not install every peer; continuing with what is here", file=sys.stderr)
        subprocess.run(["cmake", "--preset", "release", "-DOOC_BUILD_TESTS=OFF"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", "--preset", "release"], cwd=ROOT, check=True)
    b = Bench(a)
    print(f"run: machine {b.machine}, binaries {os.path.relpath(b.build, ROOT)}, "
          f"{'%d GPU(s)' % b.gpus if b.gpu else b.gpu_why}, workdir {b.work}", file=sys.stderr)
    failed = []

    def stop(signum, _frame):
        raise Stopped(signal.Signals(signum).name)

    # A case cut by a time limit (timeout sends SIGTERM) keeps the rows it had measured.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for c in cases:
        try:
            REGISTRY[c](b)
        except Stopped as e:
            for case, rows in list(b.made.items()):
                if rows:
                    b.write(case, rows, f"cut short by {e}: only the rows measured before it")
            print(f"run: stopped by {e} in {c}", file=sys.stderr)
            return 128 + (signal.SIGTERM if str(e) == "SIGTERM" else signal.SIGINT)
        except Skip as e:
            print(f"run: {c}: {'skipped' if not explicit else 'cannot run'}: {e}", file=sys.stderr)
            if explicit:
                failed.append(c)
    if failed:
        print(f"run: not run: {', '.join(failed)}", file=sys.stderr)
        return 3
    return 0
