#!/usr/bin/env python3
"""Hostile limits: ulimits (file size, descriptors), --mem-limit against huge tiles and strips,
absurd numbers and bad .npy headers, a real memory cgroup and the CPU affinity mask (as root),
Slurm's memory allocation (hostile_support.py says what every hostile check expects).
Usage: test_hostile_limits.py --bin-dir DIR [unittest options]"""

import json
import os
import re
import resource
import shutil
import sys
import time
import unittest

import numpy as np

import hostile_support
from hostile_support import (HostileBase, Proc, Shared, gaussian_taps, limit, main, ndimage,
    npy_bytes, random_image, run, safety_as, scipy_separable, tifffile, tool, write_raw)

# The module's shared inputs: made in a folder before its tests, removed after them.
setUpModule = hostile_support.setUpModule
tearDownModule = hostile_support.tearDownModule


# =============================================================================================
# 8, 11. Resource limits
# =============================================================================================

class ResourceLimits(HostileBase):
    def test_file_size_limit_is_io_error(self):
        # 16 MiB outputs under `ulimit -f` of 1 MiB; Popen restores SIGXFSZ to its default, as a
        # shell has it, so the tool must ignore it itself.
        a, _ = self.raw_f32("a.raw", 2048, 2048)
        conv = [tool("oocconv"), a, None, "--width", "2048", "--radius", "1"]
        gen = [tool("oocgen"), None, "--width", "2048", "--height", "2048"]
        for name, cmd, out in [("oocconv raw", conv, "o.raw"), ("oocconv tif", conv, "o.tif"),
                               ("oocgen raw", gen, "g.raw"), ("oocgen tif", gen, "g.tif")]:
            with self.subTest(case=name):
                r = run([self.p(out) if c is None else c for c in cmd],
                        preexec_fn=limit(resource.RLIMIT_FSIZE, 1 << 20))
                self.assertExit(r, 4)
                self.assertMentions(r, "limit", "too large")
                self.assertAbsent(self.p(out), r)
                self.assertNoPartial(r=r)

    def test_five_file_descriptors_is_io_error(self):
        img = random_image(50, 100)
        inputs = {"raw": write_raw(self.p("in.raw"), img)}
        np.save(self.p("in.npy"), img)
        inputs["npy"] = self.p("in.npy")
        if tifffile is not None:
            tifffile.imwrite(self.p("in.tif"), img)
            inputs["tif"] = self.p("in.tif")
        for ext, inp in inputs.items():
            with self.subTest(input=ext):
                out = self.p("o_%s.raw" % ext)
                r = self.oocconv(inp, out, "--width", "100", "--radius", "1",
                                 preexec_fn=limit(resource.RLIMIT_NOFILE, 5), close_fds=True)
                self.assertExit(r, 4)
                self.assertAbsent(out, r)
                self.assertNoPartial(r=r)
        if tifffile is None:
            self.skipTest("tif case not run: this python has no tifffile")


# =============================================================================================
# 12-14. --mem-limit and sizes that cannot fit
# =============================================================================================

class MemoryLimits(HostileBase):
    def _mid(self):
        return self.raw_f32("mid.raw", 2000, 1000)[0]

    def test_tile_65536_refused_quickly(self):
        r = self.oocconv(self._mid(), "o.tif", "--width", "1000", "--radius", "1", "--tile",
                         "65536", cwd=self.d, timeout=30, preexec_fn=safety_as)
        self.assertExit(r, 2)
        self.assertLess(r.secs, 5, str(r))
        self.assertMentions(r, "--tile")
        self.assertNoPartial(r=r)

    def test_tile_8192_under_16M_mem_limit_refused_or_small(self):
        r = self.oocconv(self._mid(), "o.tif", "--width", "1000", "--radius", "1", "--tile",
                         "8192", "--mem-limit", "16M", cwd=self.d, timeout=60,
                         measure_rss=True, preexec_fn=safety_as)
        self.assertExit(r, 2, 0)
        if r.rc == 0:
            self.assertLess(r.rss_kb, 40 * 1024, "succeeded but over 40 MiB:\n%s" % r)
        self.assertNoPartial(r=r)

    def test_oocgen_tile_1G_refused_quickly(self):
        r = self.oocgen("o.tif", "--width", "1000", "--height", "1000", "--tile", "1073741824",
                        cwd=self.d, timeout=30, preexec_fn=safety_as)
        self.assertExit(r, 2)
        self.assertLess(r.secs, 5, str(r))
        self.assertAbsent(self.p("o.tif"), r)
        self.assertNoPartial(r=r)

    def test_one_256M_deflate_strip_over_mem_limit_refused(self):
        big = Shared.big_deflate_tiff(self)
        # The CPU backend: a CUDA context alone takes about 100 MiB of host memory.
        r = self.oocconv(big, "o.raw", "--radius", "1", "--mem-limit", "16M", "--device", "cpu",
                         cwd=self.d, timeout=60, measure_rss=True, preexec_fn=safety_as)
        self.assertExit(r, 2)
        self.assertRegex(r.err, r"\d\s*(KiB|MiB|GiB|kB|MB|GB)", "no size named\n%s" % r)
        self.assertLess(r.secs, 5, str(r))
        self.assertLess(r.rss_kb, 100 * 1024, str(r))
        self.assertAbsent(self.p("o.raw"), r)
        self.assertNoPartial(r=r)

    def test_one_256M_deflate_strip_with_2G_mem_limit_succeeds(self):
        big = Shared.big_deflate_tiff(self)
        out = self.p("o.raw")
        r = self.oocconv(big, out, "--radius", "1", "--mem-limit", "2G", timeout=120)
        self.assertExit(r, 0)
        self.assertEqual(os.path.getsize(out), 8192 * 8192 * 4)
        if ndimage is not None:  # the top 100 rows against scipy (radius 1 needs 101 rows)
            y = np.arange(8192) // 64
            top = (y[:102, None] + y[None, :] + 1).astype(np.float64)
            ref = scipy_separable(top, gaussian_taps(1))[:100]
            got = np.fromfile(out, "<f4", count=100 * 8192).reshape(100, 8192)
            self.assertLessEqual(np.abs(got - ref).max(), 1e-5 * np.abs(ref).max())

    def test_huge_radius_refused_quickly_and_small(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        for radius in ["100000000", "1e9"]:
            with self.subTest(radius=radius):
                r = self.oocconv(a, "o.raw", "--width", "100", "--radius", radius, cwd=self.d,
                                 timeout=30, measure_rss=True, preexec_fn=safety_as)
                self.assertExit(r, 2)
                self.assertLess(r.secs, 2, str(r))
                self.assertLess(r.rss_kb, 100 * 1024, str(r))
                self.assertAbsent(self.p("o.raw"), r)


# =============================================================================================
# 15-16. Numbers: sizes that overflow, non-finite values, zero and negative counts, bad .npy
# =============================================================================================

class Numbers(HostileBase):
    def test_radius_2_pow_62_refused_by_every_tool(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        shutil.copyfile(a, self.p("out.raw"))
        big = "4611686018427387904"
        geo = ["--width", "100", "--radius", big]
        cases = {
            "oocconv": [tool("oocconv"), a, self.p("o.raw")] + geo,
            "oocconv box": [tool("oocconv"), a, self.p("o.raw")] + geo + ["--filter", "box"],
            "ooccheck": [tool("ooccheck"), self.p("out.raw"), a] + geo,
            "ooccheck box": [tool("ooccheck"), self.p("out.raw"), a] + geo + ["--filter", "box"],
            "oocinfo": [tool("oocinfo"), a] + geo,  # oocinfo has --radius, no --filter
        }
        for name, cmd in cases.items():
            with self.subTest(case=name):
                r = run(cmd, timeout=30, preexec_fn=safety_as)
                self.assertExit(r, 2)
                self.assertAbsent(self.p("o.raw"), r)

    def test_non_finite_sigma_and_huge_radius_refused(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        shutil.copyfile(a, self.p("out.raw"))
        cases = [("--sigma", "inf"), ("--sigma", "1e300"), ("--sigma", "nan"),
                 ("--sigma", "-inf"), ("--radius", "1000000000000000000")]
        for opt, value in cases:
            for exe, files in [("oocconv", [a, self.p("o.raw")]),
                               ("ooccheck", [self.p("out.raw"), a])]:
                with self.subTest(tool=exe, option=opt, value=value):
                    r = run([tool(exe)] + files + ["--width", "100", opt, value], timeout=30,
                            preexec_fn=safety_as)
                    self.assertExit(r, 2)
                    self.assertMentions(r, opt.lstrip("-"))
                    self.assertAbsent(self.p("o.raw"), r)

    def test_zero_negative_and_absurd_counts_are_usage_errors(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        base = [a, "o.raw", "--width", "100", "--radius", "1"]
        synth = ["synth:noise", "null:", "--width", "100", "--height", "100", "--radius", "1"]
        cases = [
            ("--height -1", base + ["--height", "-1"], "height"),
            ("--width -5", [a, "o.raw", "--width", "-5", "--radius", "1"], "width"),
            ("--threads 0", base + ["--threads", "0"], "threads"),
            ("--slots 0", base + ["--slots", "0"], "slots"),
            ("--band-rows 0", base + ["--band-rows", "0"], "band-rows"),
            ("--page 1 on synth:", synth + ["--page", "1"], "page"),
            ("--threads 100000", base + ["--threads", "100000"], "--threads"),
            ("empty output name", [a, "", "--width", "100", "--radius", "1"], None),
        ]
        for name, args, word in cases:
            with self.subTest(case=name):
                r = self.oocconv(*args, cwd=self.d, timeout=30)
                self.assertExit(r, 2)
                if word:
                    self.assertMentions(r, word)
                self.assertAbsent(self.p("o.raw"), r)
                self.assertNoPartial(r=r)

    def test_npy_with_negative_shape_is_bad_input(self):
        payload = random_image(20, 30).tobytes()
        with open(self.p("neg.npy"), "wb") as f:
            f.write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-20, 30), }",
                              payload))
        r = self.oocconv("neg.npy", "o.raw", "--radius", "1", cwd=self.d, timeout=30)
        self.assertExit(r, 3)
        self.assertAbsent(self.p("o.raw"), r)

    def test_npy_header_without_closing_brace_is_bad_input(self):
        payload = random_image(20, 30).tobytes()
        with open(self.p("open.npy"), "wb") as f:
            f.write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (20, 30), ",
                              payload))
        r = self.oocconv("open.npy", "o.raw", "--radius", "1", cwd=self.d, timeout=30)
        self.assertExit(r, 3)
        self.assertAbsent(self.p("o.raw"), r)

    def test_threads_8_really_runs_8_threads(self):
        proc = Proc([tool("oocconv"), "synth:noise", "null:", "--width", "8192", "--height",
                     "16384", "--radius", "64", "--threads", "8", "--method", "direct",
                     "--stats", "json", "-q"])
        most, deadline = 0, time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                most = max(most, len(os.listdir("/proc/%d/task" % proc.pid)))
            except FileNotFoundError:
                pass
            time.sleep(0.005)
        r = proc.finish(60)
        self.assertExit(r, 0)
        self.assertGreaterEqual(most, 8, "at most %d threads seen\n%s" % (most, r))
        self.assertEqual(json.loads(r.out)["plan"]["threads"], 8, str(r))


# =============================================================================================
# 23. A real memory cgroup
# =============================================================================================

class MemoryCgroup:
    """A memory cgroup (v1, else v2) with a limit; preexec() moves the child into it."""

    V1 = "/sys/fs/cgroup/memory"

    def __init__(self, limit_bytes):
        self.limit = limit_bytes
        self.path = None
        self.kind = None

    def __enter__(self):
        name = "ooc_hostile_%d_%d" % (os.getpid(), time.monotonic_ns() % 1000000)
        reasons = []
        if os.path.isdir(self.V1) and os.access(self.V1, os.W_OK):
            try:
                self.path = os.path.join(self.V1, name)
                os.mkdir(self.path)
                self.kind = 1
                self._write("memory.limit_in_bytes", self.limit)
                if os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
                    self._write("memory.memsw.limit_in_bytes", self.limit)
                return self
            except OSError as e:
                self._remove()
                reasons.append("cgroup v1: %s" % e)
        else:
            reasons.append("cgroup v1: %s is not writable" % self.V1)
        v2 = self._v2_root()
        if v2 and os.access(v2, os.W_OK):
            try:
                self.path = os.path.join(v2, name)
                os.mkdir(self.path)
                self.kind = 2
                if not os.path.exists(os.path.join(self.path, "memory.max")):
                    raise OSError("the memory controller is not enabled at %s" % v2)
                self._write("memory.max", self.limit)
                if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                    self._write("memory.swap.max", 0)
                return self
            except OSError as e:
                self._remove()
                reasons.append("cgroup v2: %s" % e)
        else:
            reasons.append("cgroup v2: no writable mount")
        raise unittest.SkipTest("no memory cgroup can be made (%s)" % "; ".join(reasons))

    def __exit__(self, *exc):
        self._remove()

    @staticmethod
    def _v2_root():
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[2] == "cgroup2":
                    return fields[1]
        return None

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def _read(self, name):
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return None

    def _remove(self):
        if self.path and os.path.isdir(self.path):
            for _ in range(50):  # the child may still be leaving it
                try:
                    os.rmdir(self.path)
                    break
                except OSError:
                    time.sleep(0.1)
        self.path = None

    def preexec(self):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def peak(self):
        v = self._read("memory.max_usage_in_bytes" if self.kind == 1 else "memory.peak")
        return int(v) if v else None

    def oom_kills(self):
        text = self._read("memory.oom_control" if self.kind == 1 else "memory.events") or ""
        m = re.search(r"oom_kill (\d+)", text)
        return int(m.group(1)) if m else 0


class RealCgroup(HostileBase):
    LIMIT = 200 << 20

    def test_deflate_strip_under_200M_cgroup_refused_not_oom_killed(self):
        with MemoryCgroup(self.LIMIT) as cg:
            big = Shared.big_deflate_tiff(self)
            r = self.oocconv(big, "o.raw", "--radius", "1", "--mem-limit", "16M", "--device", "cpu",
                             cwd=self.d, timeout=60, preexec_fn=cg.preexec, measure_rss=True)
            kills = cg.oom_kills()
        self.assertNotIn(r.rc, (-9, 137), "OOM-killed\n%s" % r)
        self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
        self.assertExit(r, 2)
        self.assertNoPartial(r=r)

    def test_2G_synth_under_200M_cgroup_with_64M_mem_limit(self):
        # null: the memory bound is the point; a file would also charge the cgroup for page
        # cache, and where /tmp lives in memory (gVisor on the GPU machine) for the whole file.
        out = "null:"
        with MemoryCgroup(self.LIMIT) as cg:
            r = self.oocconv("synth:noise", out, "--width", "16384", "--height", "32768",
                             "--radius", "16", "--mem-limit", "64M", "--device", "cpu", "-q",
                             timeout=240,
                             preexec_fn=cg.preexec, measure_rss=True)
            peak, kills = cg.peak(), cg.oom_kills()
        if out != "null:" and os.path.exists(out):
            size = os.path.getsize(out)
            os.unlink(out)  # 2 GiB: not kept until the directory goes
            self.assertEqual(size, 16384 * 32768 * 4)
        self.assertExit(r, 0)
        self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
        if peak is not None:
            self.assertLessEqual(peak, self.LIMIT, str(r))
        self.assertLess(r.rss_kb, self.LIMIT // 1024, str(r))
        self.assertNoPartial(r=r)


    def test_volume_of_65536_wide_planes_under_256M(self):
        # The 8 planes of 65536 x 65536 u8 under --mem-limit 256M: a band's memory does
        # not grow with the planes' height (the window is every plane, the band's rows in each),
        # so 256 rows a plane show the bound in seconds; the device runs the full height.
        limit = 256 << 20
        with MemoryCgroup(limit + (32 << 20)) as cg:
            r = run([tool("oocrun"), "synth:noise", "null:", "gaussian sigma=2 ! median size=3",
                     "--width", "65536", "--height", "256", "--depth", "8", "--type", "u8",
                     "--mem-limit", "256M", "--device", "cpu", "-q"], timeout=300,
                    preexec_fn=cg.preexec, measure_rss=True)
            peak, kills = cg.peak(), cg.oom_kills()
        self.assertExit(r, 0)
        self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
        if peak is not None:
            self.assertLessEqual(peak, limit + (32 << 20), str(r))
        self.assertLess(r.rss_kb, limit // 1024, str(r))

    def test_pipeline_of_six_stages_stays_under_its_mem_limit(self):
        # The halos of every stage and each stage's intermediate rows are planned inside
        # --mem-limit: 256 MiB of f32 (more than the cgroup holds; the 2G run above is the long
        # one) through six stages in a 200M cgroup with a 48M limit. The planner's own plan, and
        # tiles across the row of a width forced.
        chain = ("gaussian sigma=3 ! dog sigma1=1 sigma2=2 ! gradient-magnitude ! "
                 "white-tophat size=15 ! scale mul=4 ! convert type=u8")
        for extra in ([], ["--tile-cols", "700"], ["--tile-cols", "100000"]):
            with self.subTest(extra=extra), MemoryCgroup(self.LIMIT) as cg:
                r = run([tool("oocrun"), "synth:noise", "null:", chain, "--width", "8192",
                         "--height", "8192", "--mem-limit", "48M", "--device", "cpu", "-q"]
                        + extra, timeout=300, preexec_fn=cg.preexec, measure_rss=True)
                peak, kills = cg.peak(), cg.oom_kills()
                self.assertExit(r, 0)
                self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
                if peak is not None:
                    self.assertLessEqual(peak, self.LIMIT, str(r))
                # The limit plus the process's own code and libraries (about 30 MiB here).
                self.assertLess(r.rss_kb, (48 << 20) // 1024 + 40 * 1024, str(r))

    def test_defaults_follow_the_cgroup_limit(self):
        # No --mem-limit: the default is half of the cgroup's limit (not of the node's RAM), and
        # --stats and oocinfo name the cgroup file it came from.
        env = bare_env()
        with MemoryCgroup(self.LIMIT) as cg:
            r = self.oocconv("synth:noise", "null:", "--width", "4096", "--height", "4096",
                             "--radius", "16", "--device", "cpu", "--stats", "json",
                             preexec_fn=cg.preexec, env=env)
            info = run([tool("oocinfo")], preexec_fn=cg.preexec, env=env)
        self.assertExit(r, 0)
        plan = json.loads(r.out)["plan"]
        self.assertEqual(plan["mem_limit_bytes"], self.LIMIT // 2, str(r))
        self.assertTrue(plan["mem_limit_from"].startswith("half of cgroup limit /sys/fs/cgroup"),
                        str(r))
        self.assertExit(info, 0)
        self.assertIn("default --mem-limit: 100.0 MiB, half of cgroup limit /sys/fs/cgroup",
                      info.out, str(info))


def bare_env(**variables):
    """This environment without a launcher's allocation and task variables, plus `variables`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "OMPI_", "MPI_LOCALNRANKS"))}
    env.update(variables)
    return env


class SlurmAllocation(HostileBase):
    def test_default_budget_follows_slurm_mem_per_node(self):
        # As a Slurm job with --mem=2G sees it: half of the 2 GiB by default, said by --stats and
        # oocinfo; a given --mem-limit wins and is named.
        env = bare_env(SLURM_MEM_PER_NODE="2048")
        args = ["synth:noise", "null:", "--width", "512", "--height", "512", "--radius", "2",
                "--device", "cpu", "--stats", "json"]
        r = self.oocconv(*args, env=env)
        self.assertExit(r, 0)
        plan = json.loads(r.out)["plan"]
        if plan["mem_limit_from"].startswith("half of cgroup limit"):
            self.skipTest("this process's cgroup allows less than 2 GiB: " + plan["mem_limit_from"])
        self.assertEqual(plan["mem_limit_from"], "half of SLURM_MEM_PER_NODE 2048 MiB", str(r))
        self.assertEqual(plan["mem_limit_bytes"], 1 << 30, str(r))
        info = run([tool("oocinfo")], env=env)
        self.assertIn("default --mem-limit: 1.0 GiB, half of SLURM_MEM_PER_NODE 2048 MiB",
                      info.out, str(info))
        r = self.oocconv(*args, "--mem-limit", "64M", env=env)
        self.assertExit(r, 0)
        plan = json.loads(r.out)["plan"]
        self.assertEqual((plan["mem_limit_bytes"], plan["mem_limit_from"]),
                         (64 << 20, "--mem-limit"), str(r))
        # Shared by the step's 4 tasks on the node: a quarter of that.
        r = self.oocconv(*args, env=dict(env, SLURM_STEP_TASKS_PER_NODE="4"))
        plan = json.loads(r.out)["plan"]
        self.assertEqual(plan["mem_limit_bytes"], 256 << 20, str(r))


class CpuAffinity(HostileBase):
    def test_defaults_follow_the_affinity_mask(self):
        # As Slurm's --cpus-per-task leaves it: one allowed core means one thread by default,
        # for the pipeline and for TIFF decoding alike.
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("this process may use one core only: nothing to narrow")
        one = {min(os.sched_getaffinity(0))}
        pin = lambda: os.sched_setaffinity(0, one)
        r = self.oocconv("synth:noise", "null:", "--width", "512", "--height", "512",
                         "--radius", "2", "--device", "cpu", "--stats", "json", preexec_fn=pin)
        self.assertExit(r, 0)
        self.assertEqual(json.loads(r.out)["plan"]["threads"], 1, str(r))
        info = run([tool("oocinfo")], preexec_fn=pin)
        self.assertIn("default --threads: 1, from the CPU affinity mask (1 of", info.out,
                      str(info))
        # --threads still wins over the mask (the user asked for it).
        r = self.oocconv("synth:noise", "null:", "--width", "512", "--height", "512",
                         "--radius", "2", "--device", "cpu", "--threads", "3", "--stats", "json",
                         preexec_fn=pin)
        self.assertEqual(json.loads(r.out)["plan"]["threads"], 3, str(r))


if __name__ == "__main__":
    sys.exit(main())
