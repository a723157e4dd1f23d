# The bench's shared machinery: the Bench object every case gets (binaries, environment,
# timed runs in rotating order, CSV rows and tables), the result schema and the helpers
# several cases use (output comparison, --stats parsing, memory cgroups).
import csv, json, math, os, platform, re, shlex, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
RESULTS = os.path.join(ROOT, "tools", "bench", "results")
SCHEMA = ["date", "git", "machine", "case", "tool", "params", "bytes", "repeats", "median_s", "min_s",
          "max_s", "gb_per_s", "baseline", "ratio_to_baseline", "peak_rss_mib", "check", "note"]
BYTES = {"u8": 1, "u16": 2, "i16": 2, "u32": 4, "i32": 4, "f32": 4, "f64": 8}
VIPS_FMT = {"u8": "uchar", "u16": "ushort", "i16": "short", "u32": "uint", "i32": "int", "f32": "float",
            "f64": "double"}
NP_DT = {"u8": "uint8", "u16": "uint16", "f32": "float32", "f64": "float64"}


class Stopped(Exception):
    """SIGTERM or SIGINT (a time limit, Ctrl-C): the rows measured so far are written."""


class Skip(Exception):
    """A case that cannot run here; the message says why."""


class Timing:
    def __init__(self, wall, rss=0, out="", err="", cpu=None):
        # cpu: the child's user + system seconds (rusage, finer than /usr/bin/time's 10 ms)
        self.wall, self.rss, self.out, self.err, self.cpu = wall, rss, out, err, cpu


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(os.path.join(ROOT, a.build_dir))
        self.work = os.path.abspath(a.workdir)
        os.makedirs(self.work, exist_ok=True)
        lib = [p for p in (os.path.join(self.build, "..", "lib"), "/usr/local/cuda/lib64") if os.path.isdir(p)]
        self.env = dict(os.environ, VIPS_CONCURRENCY=str(a.threads), OMP_NUM_THREADS=str(a.threads),
                        OOC_BIN_DIR=self.build)
        if lib:
            self.env["LD_LIBRARY_PATH"] = ":".join([os.path.abspath(p) for p in lib]
                                                   + [self.env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
        self.git = self.capture(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]) or "?"
        if self.capture(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]):
            self.git += "+dirty"
        self.date = time.strftime("%Y-%m-%d %H:%M")
        self.made = {}  # case -> rows made and not yet written
        self.command = "tools/bench/run " + shlex.join(sys.argv[1:])
        self.gpus, self.gpu_why = self.probe_gpu()
        self.gpu = self.gpus > 0
        self.machine = a.machine or (("gpu-" if self.gpu else "cpu-") + platform.node().split(".")[0])
        self.outdir = os.path.join(RESULTS, self.machine)

    # processes
    def capture(self, cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, env=getattr(self, "env", None)).stdout.strip()
        except OSError:
            return ""

    def exe(self, name, why=""):
        for p in (os.path.join(self.build, name), os.path.join(self.build, "tools", "bench", name)):
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
        raise Skip(f"no {name} in {self.build}{': ' + why if why else ''} (see --build-dir, --no-build)")

    def sh(self, cmd, **kw):
        return subprocess.run(cmd, check=True, env=self.env, **kw)

    def timed(self, cmd, sync=False, shell=False, env=None, check=True, capture=True):
        """Wall seconds (through a trailing `sync` when sync), peak RSS of the child, its stderr and
        (capture) its stdout; without capture stdout goes to /dev/null (cat's floor)."""
        with tempfile.TemporaryFile(mode="w+", errors="replace") as out, \
                tempfile.TemporaryFile(mode="w+", errors="replace") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=out if capture else subprocess.DEVNULL, stderr=err,
                                    env=env or self.env, shell=shell)
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            except BaseException:  # stopped: the tool being timed goes too
                proc.kill()
                proc.wait()
                raise
            if sync:
                subprocess.run(["sync"])
            wall = time.perf_counter() - t0
            rc = os.waitstatus_to_exitcode(status)
            out.seek(0), err.seek(0)
            o, e = out.read(), err.read()
        if rc != 0 and check:
            raise RuntimeError(f"{cmd if shell else shlex.join(cmd)} failed ({rc}): {e[-600:]}")
        return Timing(wall, usage.ru_maxrss * 1024, o, e, usage.ru_utime + usage.ru_stime)

    def drop_caches(self):
        try:
            subprocess.run(["sync"])
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError as e:
            raise Skip(f"dropping the page cache needs root ({e.strerror}); run without --cold/--big")

    def warm(self, *paths):
        subprocess.run(["cat", *paths], stdout=subprocess.DEVNULL)

    def gen(self, name, w, h, t="f32", pattern="noise", extra=(), size=None):
        """An input made by oocgen in the workdir (kept between cases while its size is right)."""
        path = os.path.join(self.work, name)
        if size is None and not name.endswith((".tif", ".npy")):
            size = w * h * BYTES[t]
        if not os.path.exists(path) or (size is not None and os.path.getsize(path) != size) or extra:
            self.sh([self.exe("oocgen"), path, "--width", str(w), "--height", str(h), "--type", t,
                     "--pattern", pattern, "--no-progress", "-q", *extra])
        return path

    def rm(self, *paths):
        for p in paths:
            if p and os.path.exists(p):
                os.remove(p)

    def rm_prefixed(self, prefix, but=None):
        """Deletes the work folder's files named prefix..., except those named but...."""
        for f in os.listdir(self.work):
            if f.startswith(prefix) and not (but and f.startswith(but)):
                os.remove(os.path.join(self.work, f))

    def probe_gpu(self):
        try:
            conv = self.exe("oocconv")
        except Skip as e:
            return 0, str(e)
        r = subprocess.run([conv, "synth:noise", "null:", "--width", "8", "--height", "8", "--radius", "1",
                            "--device", "cuda", "-q"], capture_output=True, text=True, env=self.env)
        if r.returncode != 0:
            return 0, "no CUDA device: " + (r.stderr.strip().splitlines() or ["oocconv --device cuda failed"])[-1]
        n = len([l for l in self.capture(["nvidia-smi", "-L"]).splitlines() if l.startswith("GPU ")])
        return max(n, 1), ""

    def need_gpu(self, case):
        if not self.gpu:
            raise Skip(f"{case} needs a CUDA device and a CUDA build: {self.gpu_why}")

    # options with a per-case default
    def images(self, default):
        if self.a.images:
            return [tuple(int(v) for v in s.lower().split("x")) for s in self.a.images.split(",")]
        if self.a.size:
            return [(self.a.size, self.a.size)]
        return default

    def strs(self, name, default):
        v = getattr(self.a, name)
        return (v or default).split(",")

    def ints(self, name, default):
        return [int(x) for x in self.strs(name, default)]

    def devices(self, show_cuda=False):
        """(backend, why it cannot run or None); without a GPU, cuda is listed only when asked for
        (--devices) or when show_cuda (its row then says why)."""
        want = self.strs("devices", "cpu,cuda" if self.gpu or show_cuda else "cpu")
        return [(d, None if d != "cuda" or self.gpu else self.gpu_why) for d in want]

    # measurement
    def measure(self, tools, repeats=None, before=None, after=None, offset=0):
        """Runs every tool `repeats` times, the order rotating by one from repeat to repeat.
        tools: name -> dict(cmd, sync=False, shell=False, out=path removed before each run, env).
        before(name)/after(name, rep) hooks. Returns name -> [Timing]."""
        repeats = repeats or self.a.repeats
        names = [n for n, t in tools.items() if t.get("cmd")]
        res = {n: [] for n in names}
        for rep in range(repeats):
            k = (rep + offset) % max(len(names), 1)
            for n in names[k:] + names[:k]:
                t = tools[n]
                self.rm(t.get("out"))
                if t.get("out"):
                    subprocess.run(["sync"])  # the previous tool's writeback is not charged to this one
                if self.a.cold or t.get("cold"):
                    self.drop_caches()
                if before:
                    before(n)
                res[n].append(self.timed(t["cmd"], sync=t.get("sync", False), shell=t.get("shell", False),
                                         env=t.get("env"), capture=t.get("capture", "--stats" in t["cmd"])))
                if after:
                    after(n, rep)
        return res

    # rows
    def row(self, case, tool, params, nbytes=0, times=None, baseline="", base=None, rss=None, check="",
            note="", repeats=None, median=None, gbps=None):
        """One CSV row. times: seconds of each run (median/min/max from them), or median alone."""
        r = dict.fromkeys(SCHEMA, "")
        # Kept until write(): a run stopped in the middle of a case still writes these.
        self.made.setdefault(case, []).append(r)
        r.update(date=self.date, git=self.git, machine=self.machine, case=case, tool=tool, params=params,
                 bytes=nbytes or "", check=check, note=note, baseline=baseline)
        if times:
            median = statistics.median(times)
            r.update(min_s=f"{min(times):.6g}", max_s=f"{max(times):.6g}", repeats=repeats or len(times))
        elif repeats:
            r["repeats"] = repeats
        if median:
            r["median_s"] = f"{median:.6g}"
            if nbytes and gbps is None:
                gbps = nbytes / median / 1e9
            if base and baseline:
                r["ratio_to_baseline"] = f"{base / median:.3f}"
        if gbps:
            r["gb_per_s"] = f"{gbps:.4g}"
        if rss:
            r["peak_rss_mib"] = f"{rss / 2**20:.0f}"
        return r

    def write(self, case, rows, title):
        self.made.pop(case, None)
        os.makedirs(self.outdir, exist_ok=True)
        path = os.path.join(self.outdir, case + ".csv")
        new = not os.path.exists(path)
        if not new:
            with open(path, newline="") as f:
                head = next(csv.reader(f), [])
            if head != SCHEMA:
                raise SystemExit(f"run: {path} has another header than {','.join(SCHEMA)}; move it away")
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=SCHEMA, lineterminator="\n")
            if new:
                w.writeheader()
            w.writerows(rows)
        lines = table(rows, f"{case} on {self.machine} ({platform.node()}), {self.date}, git {self.git}: {title}",
                      self.command)
        # The table is made from the rows: printed, and kept in the work dir for the run's log, not
        # beside the CSV (results/ holds the CSVs and a README per machine).
        txt = os.path.join(self.work, case + ".txt")
        sep = "\n" if os.path.exists(txt) else ""
        with open(txt, "a") as f:
            f.write(sep + "\n".join(lines) + "\n")
        print("\n".join(lines))
        print(f"appended {len(rows)} rows to {os.path.relpath(path, ROOT)} and the table to {txt}")


def table(rows, title, command):
    cols = [("tool", "tool"), ("params", "params"), ("median_s", "median s"), ("gb_per_s", "GB/s"),
            ("ratio_to_baseline", "vs base"), ("peak_rss_mib", "RSS MiB")]
    wid = {k: max([len(h)] + [len(str(r[k])) for r in rows]) for k, h in cols}
    lines = [f"# {title}", f"# command: {command}",
             "  ".join(h.ljust(wid[k]) for k, h in cols) + "  baseline / check / note"]
    for r in rows:
        tail = "; ".join(x for x in (f"base: {r['baseline']}" if r["baseline"] else "", r["check"], r["note"]) if x)
        lines.append("  ".join(str(r[k] if r[k] != "" else ("n/a" if k == "median_s" else "")).ljust(wid[k])
                               for k, _ in cols) + "  " + tail)
    return lines


def med(ts):
    return statistics.median(t.wall for t in ts) if ts else None


def walls(ts):
    return [t.wall for t in ts]


def rss(ts):
    return statistics.median(t.rss for t in ts) if ts else None


def have(cmd):
    return shutil.which(cmd) is not None


def python_has(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def gauss_taps(r):
    w = [math.exp(-0.5 * (x / (r / 3.0)) ** 2) for x in range(-r, r + 1)]
    s = sum(w)
    return [v / s for v in w]


def compare(b, ref, got, w, t, tolerance=None, extra=()):
    """ooccheck --compare: 'ok <max abs error>' or 'MISMATCH ...'."""
    cmd = [b.exe("ooccheck"), "--compare", ref, got, "--width", str(w), "--type", t, *extra]
    if tolerance is not None:
        cmd += ["--tolerance", str(tolerance)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=b.env)
    m = re.search(r"max abs error ([0-9.e+-]+|inf|nan)", res.stdout)
    err = m.group(1) if m else (res.stdout + res.stderr).strip()[-80:]
    return ("ok " if res.returncode == 0 else "MISMATCH ") + err


def check_bands(inp, out, w, t, r, bands=8, band_rows=64, seed=1):
    """Sampled bands of an oocconv Gaussian (radius r, sigma r/3, reflect) output against a float64
    NumPy reference: 'ok <worst error>' or 'MISMATCH ...' (f32: 1e-5 relative, integers: 1)."""
    import numpy as np
    dt = np.dtype(NP_DT[t])
    src = np.memmap(inp, dtype=dt, mode="r").reshape(-1, w)
    dst = np.memmap(out, dtype=dt, mode="r").reshape(-1, w)
    h = src.shape[0]
    if dst.shape != src.shape:
        return f"MISMATCH shape {dst.shape} != {src.shape}"
    k = np.array(gauss_taps(r)) if r > 0 else np.ones(1)

    def reflect(i, n):
        i = np.mod(i, 2 * n)
        return np.where(i < n, i, 2 * n - 1 - i)
    rng = np.random.default_rng(seed)
    starts = sorted(set([0, h - band_rows] + list(rng.integers(0, h - band_rows, bands - 2))))
    worst = 0.0
    for y0 in starts:
        band = src[reflect(np.arange(y0 - r, y0 + band_rows + r), h)].astype(np.float64)
        padded = band[:, reflect(np.arange(-r, w + r), w)]
        rowpass = sum(k[j] * padded[:, j:j + w] for j in range(2 * r + 1))
        ref = sum(k[j] * rowpass[j:j + band_rows] for j in range(2 * r + 1))
        got = dst[y0:y0 + band_rows].astype(np.float64)
        if np.issubdtype(dt, np.integer):
            err = float(np.abs(got - np.clip(np.rint(ref), np.iinfo(dt).min, np.iinfo(dt).max)).max())
            bad = err > 1
        else:
            err = float((np.abs(got - ref) / (np.abs(ref) + np.abs(band).max())).max())
            bad = err > 1e-5
        worst = max(worst, err)
        if bad:
            return f"MISMATCH band at row {y0}: error {err:.3g}"
    return f"ok {len(starts)} bands of {band_rows} rows vs float64, worst {worst:.3g}"


def stats_json(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def stats_note(js):
    """Medians of the setup time and streaming rate of oocconv's --stats json runs, and the plan."""
    j = js[-1]
    return (f"setup {statistics.median(x['seconds']['setup'] for x in js):.3f} s; streaming "
            f"{statistics.median(x['throughput']['streaming_input_mb_per_s'] for x in js) / 1e3:.2f} GB/s; "
            f"{j['plan']['bands']} bands x {j['plan']['band_rows']} rows, {j['plan']['slots']} slots"
            + (f"; {statistics.median(x['cpu_bands'] for x in js):g} on the CPU while CUDA started"
               if 'cpu_bands' in j else ""))


def cgroup(name, limit):
    """A memory cgroup (v1 or v2) of `limit` bytes; returns its folder (root)."""
    v1, v2 = "/sys/fs/cgroup/memory", "/sys/fs/cgroup"
    try:
        if os.path.isdir(v1):
            cg = os.path.join(v1, name)
            os.makedirs(cg, exist_ok=True)
            open(os.path.join(cg, "memory.limit_in_bytes"), "w").write(str(limit))
            if os.path.exists(os.path.join(cg, "memory.max_usage_in_bytes")):
                open(os.path.join(cg, "memory.max_usage_in_bytes"), "w").write("0")
        else:
            try:
                open(os.path.join(v2, "cgroup.subtree_control"), "w").write("+memory")
            except OSError:
                pass
            cg = os.path.join(v2, name)
            os.makedirs(cg, exist_ok=True)
            open(os.path.join(cg, "memory.max"), "w").write(str(limit))
    except OSError as e:
        raise Skip(f"a memory cgroup needs root and cgroups ({e.strerror})")
    return cg


def cgroup_peak(cg):
    for f in ("memory.peak", "memory.max_usage_in_bytes"):
        p = os.path.join(cg, f)
        if os.path.exists(p):
            return int(open(p).read().split()[0])
    return -1
