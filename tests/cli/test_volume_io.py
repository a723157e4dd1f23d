#!/usr/bin/env python3
"""Volumes (z-stacks) in and out: raw files of whole planes (--height, --depth), .npy arrays of
(z, y, x[, c]) and --volume, multi-page TIFF (uncompressed, Deflate, tiled, ImageJ, RGB; --pages,
--page), each read by oocrun through a point stage (scale mul=1, plane by plane) and written as
raw, .npy and TIFF, compared byte for byte with NumPy and tifffile; oocinfo's planes; oocgen
--depth; the errors (a size that is not whole planes, TIFF pages that differ, a bad --pages,
outputs that take no volume); TIFF volumes' levels as each page's SubIFDs.

Usage: test_volume_io.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import cli_args  # beside this file
import cli_cases

try:
    import tifffile
except ImportError:
    cli_cases.skip_module(__name__, "tifffile is not installed")

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
OOCINFO = os.path.join(BIN, "oocinfo")
OOCGEN = os.path.join(BIN, "oocgen")
TYPE = {"u1": "u8", "u2": "u16", "i2": "i16", "u4": "u32", "i4": "i32", "f4": "f32", "f8": "f64"}
# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(11)
COPY = "scale mul=1"


def run(tool, *args):
    return subprocess.run([tool, *map(str, args)], capture_output=True, text=True)


def random_volume(shape, dtype):
    """Random samples of `dtype`, none zero (a volume read as zeros would pass otherwise)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = (rng.random(shape) * 2000 - 1000).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(max(info.min, -30000), min(info.max, 60000), shape).astype(dt)
    a[a == 0] = 1
    return a


def load(path, shape=None, dtype=None):
    if path.endswith(".npy"):
        return np.load(path)
    if path.endswith(".tif"):
        return tifffile.imread(path)
    return np.fromfile(path, dtype=dtype).reshape(shape)


class VolumeCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ooc_volume_")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def copy_case(self, name, src, want, extra=(), outputs=("out.raw", "out.npy", "out.tif"),
                  out_extra=()):
        """oocrun SRC OUT 'scale mul=1' for each output: equal to `want`, shape and bytes."""
        for out in outputs:
            dst = self.p(out)
            if os.path.exists(dst):
                os.remove(dst)
            r = run(OOCRUN, src, dst, COPY, "-q", *extra, *out_extra)
            case = f"{name} -> {out} {' '.join(map(str, out_extra))}".strip()
            if r.returncode:
                cli_cases.fail(f"{case}: exit {r.returncode}: {r.stderr.strip()}")
                continue
            got = load(dst, want.shape, want.dtype)
            problems = []
            if got.shape != want.shape or got.dtype != want.dtype:
                problems.append(f"read back as {got.dtype} {got.shape}, want {want.dtype} "
                                f"{want.shape}")
            elif not np.array_equal(got, want):
                planes = [z for z in range(want.shape[0]) if not np.array_equal(got[z], want[z])]
                problems.append(f"planes {planes} differ")
            if out.endswith(".tif") and not problems:
                with tifffile.TiffFile(dst) as tf:
                    if len(tf.pages) != want.shape[0]:
                        problems.append(f"{len(tf.pages)} pages, want one per plane "
                                        f"({want.shape[0]})")
            cli_cases.report(case, problems)

    def expect_error(self, what, args, code, phrases, tool=OOCRUN):
        r = run(tool, *args)
        missing = [p for p in phrases if p not in r.stderr]
        cli_cases.report(what, [
            f"exit {r.returncode}, want {code}" if r.returncode != code else None,
            f"stderr {r.stderr.strip()!r} lacks {missing}" if missing else None])

    def test_1_raw(self):
        """Raw files of whole planes: --height infers the depth, --depth the height."""
        with cli_cases.cases(self):
            for dtype, shape in (("u2", (5, 23, 37)), ("f4", (3, 17, 40)), ("u1", (4, 9, 11))):
                a = random_volume(shape, dtype)
                src = self.p("in.raw")
                a.tofile(src)
                base = ["--width", shape[2], "--type", TYPE[dtype]]
                self.copy_case(f"raw {dtype} {shape} --height", src, a,
                               base + ["--height", shape[1]])
                self.copy_case(f"raw {dtype} {shape} --depth", src, a,
                               base + ["--depth", shape[0], "--band-rows", 4],
                               outputs=("out.npy",))
                self.copy_case(f"raw {dtype} {shape} --height --depth", src, a,
                               base + ["--depth", shape[0], "--height", shape[1]],
                               outputs=("out.raw",))
            rgb = random_volume((3, 12, 14, 3), "u2")
            rgb.tofile(self.p("rgb.raw"))
            self.copy_case("raw u16 x3", self.p("rgb.raw"), rgb,
                           ["--width", 14, "--height", 12, "--channels", 3, "--type", "u16"])

    def test_2_npy(self):
        """(z, y, x) and (z, y, x, c) arrays are volumes; --volume makes (z, y, x) of a 3-D
        array whose last axis has 1 to 4 entries."""
        with cli_cases.cases(self):
            for dtype, shape in (("i2", (6, 19, 25)), ("f8", (2, 8, 9)), ("u2", (4, 10, 12, 2)),
                                 ("u1", (3, 7, 5, 4))):
                a = random_volume(shape, dtype)
                np.save(self.p("in.npy"), a)
                self.copy_case(f"npy {dtype} {shape}", self.p("in.npy"), a,
                               ["--threads", 2, "--band-rows", 3])
            a = random_volume((5, 9, 3), "f4")
            np.save(self.p("in.npy"), a)
            self.copy_case("npy (5, 9, 3) --volume", self.p("in.npy"), a, ["--volume"],
                           outputs=("out.npy", "out.tif"))
            r = run(OOCINFO, self.p("in.npy"))
            cli_cases.report("npy (5, 9, 3) without --volume: 3 channels, no planes", [
                None if r.returncode == 0 and "9 x 5 pixels, 3 channel" in r.stdout and
                "planes" not in r.stdout else f"exit {r.returncode}: {r.stdout}{r.stderr}"])

    def test_3_tiff_read(self):
        """Multi-page files as tifffile writes them: every layout reads as the whole stack."""
        with cli_cases.cases(self):
            a = random_volume((11, 60, 70), "u2")
            layouts = {"uncompressed": {}, "deflate": {"compression": "zlib"},
                       "tiled": {"tile": (16, 16)}, "deflate strips of 7": {
                           "compression": "zlib", "rowsperstrip": 7},
                       "imagej": {"imagej": True}}
            for name, kw in layouts.items():
                src = self.p("in.tif")
                tifffile.imwrite(src, a, **kw)
                self.copy_case(f"tiff {name}", src, a, ["--band-rows", 8])
            rgb = random_volume((5, 20, 30, 3), "u1")
            tifffile.imwrite(self.p("rgb.tif"), rgb, photometric="rgb", compression="zlib")
            self.copy_case("tiff rgb deflate", self.p("rgb.tif"), rgb)
            f = random_volume((4, 33, 21), "f4")
            tifffile.imwrite(self.p("f.tif"), f, tile=(16, 16), compression="zlib",
                             photometric="minisblack")
            self.copy_case("tiff f32 tiled deflate", self.p("f.tif"), f, ["--threads", 3])
            # Separate sample planes, big endian (mapped, swapped; decoded), BigTIFF, and
            # reduced-resolution pages between the planes (not planes).
            c3 = random_volume((4, 21, 33, 3), "u2")
            planar = np.ascontiguousarray(c3.transpose(0, 3, 1, 2))
            tifffile.imwrite(self.p("sep.tif"), planar, photometric="rgb",
                             planarconfig="separate", compression="zlib", rowsperstrip=5)
            self.copy_case("tiff separate planes", self.p("sep.tif"), c3, outputs=("out.npy",))
            tifffile.imwrite(self.p("be.tif"), c3, photometric="rgb", byteorder=">")
            self.copy_case("tiff big endian", self.p("be.tif"), c3, outputs=("out.npy",))
            tifffile.imwrite(self.p("bez.tif"), c3, photometric="rgb", byteorder=">",
                             compression="zlib", tile=(16, 16))
            self.copy_case("tiff big endian deflate tiles", self.p("bez.tif"), c3,
                           outputs=("out.npy",))
            tifffile.imwrite(self.p("big.tif"), a, bigtiff=True, photometric="minisblack")
            self.copy_case("bigtiff", self.p("big.tif"), a, outputs=("out.npy",))
            with tifffile.TiffWriter(self.p("reduced.tif")) as tw:
                for z in range(4):
                    tw.write(a[z], contiguous=False)
                    tw.write(a[z, ::2, ::2], subfiletype=1, contiguous=False)
            self.copy_case("tiff with reduced pages", self.p("reduced.tif"), a[:4],
                           outputs=("out.npy",))
            self.copy_case("tiff with reduced pages, --pages 1:3", self.p("reduced.tif"), a[1:3],
                           ["--pages", "1:3"], outputs=("out.npy",))
            # Pages read planes; --page one page as a 2-D image.
            tifffile.imwrite(self.p("in.tif"), a, compression="zlib")
            self.copy_case("--pages 2:5", self.p("in.tif"), a[2:5], ["--pages", "2:5"],
                           outputs=("out.npy",))
            self.copy_case("--pages -3:", self.p("in.tif"), a[-3:], ["--pages", "-3:"],
                           outputs=("out.tif",))
            self.copy_case("--pages :2", self.p("in.tif"), a[:2], ["--pages", ":2"],
                           outputs=("out.raw",))
            dst = self.p("page.npy")
            r = run(OOCRUN, self.p("in.tif"), dst, COPY, "-q", "--page", 4)
            cli_cases.report("--page 4: a 2-D image", [
                f"exit {r.returncode}: {r.stderr}" if r.returncode else
                None if np.array_equal(np.load(dst), a[4]) else "differs from page 4"])

    def test_4_tiff_write(self):
        """A volume written as TIFF: a page per plane in every layout, tifffile reads it back."""
        with cli_cases.cases(self):
            a = random_volume((7, 40, 45), "u2")
            np.save(self.p("in.npy"), a)
            for extra in ((), ("--compress", "deflate"), ("--tile", 16, "--compress", "deflate"),
                          ("--compress", "packbits"), ("--bigtiff", "yes", "--tile", 32)):
                self.copy_case("npy to tiff", self.p("in.npy"), a, ["--band-rows", 6],
                               outputs=("out.tif",), out_extra=extra)
            # Our own volume read back (decoded, not mapped).
            run(OOCRUN, self.p("in.npy"), self.p("own.tif"), COPY, "-q", "--compress", "deflate",
                "--tile", 16)
            self.copy_case("own deflate tiles", self.p("own.tif"), a, outputs=("out.npy",))

    def test_5_oocinfo_oocgen(self):
        """oocinfo shows the planes; oocgen --depth makes a volume, plane 0 the 2-D image."""
        with cli_cases.cases(self):
            a = random_volume((11, 60, 70), "u2")
            tifffile.imwrite(self.p("in.tif"), a)
            a.tofile(self.p("in.raw"))
            for what, args in (("tiff", [self.p("in.tif")]),
                               ("raw --height", [self.p("in.raw"), "--width", 70, "--height", 60,
                                                 "--type", "u16"]),
                               ("raw --depth", [self.p("in.raw"), "--width", 70, "--depth", 11,
                                                "--type", "u16"])):
                r = run(OOCINFO, *args)
                cli_cases.report(f"oocinfo {what}", [
                    None if r.returncode == 0 and "11 planes of 70 x 60" in r.stdout
                    else f"exit {r.returncode}: {r.stdout}{r.stderr}"])
            r = run(OOCINFO, self.p("in.tif"), "--pages", "3:5")
            cli_cases.report("oocinfo --pages 3:5", [
                None if r.returncode == 0 and "2 planes of 70 x 60" in r.stdout
                else f"exit {r.returncode}: {r.stdout}{r.stderr}"])
            for pattern in ("noise", "gradient", "gaussian-spots"):
                vol, flat = self.p(f"{pattern}.npy"), self.p(f"{pattern}2d.npy")
                common = ["--width", 130, "--height", 70, "--type", "u16", "-q"]
                r1 = run(OOCGEN, vol, *common, "--pattern", pattern, "--depth", 5)
                r2 = run(OOCGEN, flat, *common, "--pattern", pattern)
                # The same volume as a synth: input, in bands of 3 rows on one thread.
                r3 = run(OOCRUN, f"synth:{pattern}", self.p("again.npy"), COPY, *common,
                         "--depth", 5, "--band-rows", 3, "--threads", 1)
                if r1.returncode or r2.returncode or r3.returncode:
                    cli_cases.fail(f"oocgen {pattern}: {r1.stderr}{r2.stderr}{r3.stderr}")
                    continue
                v, f = np.load(vol), np.load(flat)
                cli_cases.report(f"oocgen --depth 5 {pattern}", [
                    None if v.shape == (5, 70, 130) else f"shape {v.shape}",
                    None if np.array_equal(v[0], f) else "plane 0 is not the 2-D image",
                    None if all(not np.array_equal(v[z], v[0]) for z in range(1, 5))
                    else "planes repeat plane 0",
                    None if np.array_equal(v, np.load(self.p("again.npy")))
                    else "synth: input differs in other bands and threads"])

    def test_6_errors(self):
        """Sizes that are not whole planes, pages that differ, bad --pages, outputs that take no
        volume: exit codes and messages that name the numbers."""
        with cli_cases.cases(self):
            a = random_volume((11, 60, 70), "u2")
            a.tofile(self.p("in.raw"))
            out = self.p("out.npy")
            raw = [self.p("in.raw"), out, COPY, "-q", "--width", 70, "--type", "u16"]
            self.expect_error("raw --height 61", raw + ["--height", 61], 3,
                              ["660 rows", "--height says 61", "not a whole number of planes"])
            self.expect_error("raw --depth 7", raw + ["--depth", 7], 3,
                              ["660 rows", "--depth 7", "not a whole number of planes"])
            self.expect_error("raw --height 60 --depth 10", raw + ["--height", 60, "--depth", 10],
                              3, ["660 rows", "--height 60 x --depth 10"])
            np.save(self.p("in.npy"), a)
            self.expect_error("npy --depth 3", [self.p("in.npy"), out, COPY, "-q", "--depth", 3],
                              2, ["--depth 3 contradicts", "11"])
            with tifffile.TiffWriter(self.p("mixed.tif")) as tw:
                tw.write(a[0])
                tw.write(a[1])
                tw.write(a[2, :50])
            self.expect_error("pages that differ", [self.p("mixed.tif"), out, COPY, "-q"], 3,
                              ["page 2 is 70 x 50", "--page 2"])
            r = run(OOCRUN, self.p("mixed.tif"), out, COPY, "-q", "--pages", ":2")
            cli_cases.report("pages that differ, --pages :2", [
                f"exit {r.returncode}: {r.stderr}" if r.returncode else
                None if np.array_equal(np.load(out), a[:2]) else "differs from pages 0-1"])
            tifffile.imwrite(self.p("in.tif"), a)
            for bad in ("5:2", "x", "0:99", "3", "1:2:3", "-20:"):
                self.expect_error(f"--pages {bad}",
                                  [self.p("in.tif"), out, COPY, "-q", "--pages", bad], 2,
                                  ["--pages takes A:B", "11 plane(s)", f"'{bad}'"])
            self.expect_error("--pages of raw input", raw + ["--height", 60, "--pages", "1:3"],
                              2, ["--pages applies to TIFF input"])
            self.expect_error("--page and --pages",
                              [self.p("in.tif"), out, COPY, "-q", "--pages", "1:3", "--page", 1],
                              2, ["give one"])
            # Zarr volumes are read and written: test_zarr_volumes.py.
            self.expect_error("tiff volume with --cog",
                              [self.p("in.tif"), self.p("out.tif"), COPY, "-q", "--cog"], 2,
                              ["--cog", "volume", "--pyramid"])
            self.expect_error("tiff volume with --levels in parts",
                              [self.p("in.tif"), self.p("out.tif"), COPY, "-q", "--levels", 1,
                               "--part", "0/2"], 2, ["volume", "parts"])

    def test_7_tiff_pyramid(self):
        """--levels of a TIFF volume: each page's SubIFDs hold its plane's 2 x 2 means (OME-TIFF's
        rule), read back by tifffile level by level, as .tif and .ome.tif, and by oocrun --input-level."""
        def reduce(x):
            f = x.astype(np.float64)
            f = np.concatenate([f, f[-1:]], 0) if f.shape[0] % 2 else f
            f = np.concatenate([f, f[:, -1:]], 1) if f.shape[1] % 2 else f
            m = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) / 4
            return np.rint(m).astype(x.dtype) if x.dtype.kind in "iu" else m.astype(x.dtype)

        with cli_cases.cases(self):
            for dt, channels, name, extra in (
                    ("u2", 1, "p.ome.tif", ("--compress", "deflate")),
                    ("f4", 3, "p.tif", ("--bigtiff", "yes")),
                    ("u1", 1, "p.ome.tif", ("--compress", "packbits", "--band-rows", 5)),
                    ("i2", 1, "p.tif", ())):
                a = random_volume((5, 37, 45) + ((channels,) if channels > 1 else ()), dt)
                np.save(self.p("in.npy"), a)
                out = self.p(name)
                case = f"pyramid {dt} x{channels} {name} {' '.join(map(str, extra))}"
                r = run(OOCRUN, self.p("in.npy"), out, COPY, "-q", "--levels", 2, "--tile", 16,
                        *extra)
                if r.returncode:
                    cli_cases.fail(f"{case}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                problems = []
                with tifffile.TiffFile(out) as t:
                    if len(t.pages) != 5:
                        problems.append(f"{len(t.pages)} pages, want 5")
                    for i, page in enumerate(t.pages):
                        if len(page.subifds or ()) != 2:
                            problems.append(f"page {i} has {len(page.subifds or ())} SubIFDs")
                    levels = t.series[0].levels
                    if len(levels) != 3:
                        problems.append(f"tifffile sees {len(levels)} levels, want 3")
                    level = a
                    for k, lv in enumerate(levels[:3]):
                        got = lv.asarray()
                        if got.shape != level.shape:
                            problems.append(f"level {k}: shape {got.shape}, want {level.shape}")
                        elif not (np.array_equal(got, level) if a.dtype.kind in "iu" else
                                  np.allclose(got, level, rtol=1e-6)):
                            problems.append(f"level {k} differs")
                        level = np.stack([reduce(p) for p in level])
                # Read back by ooc: --input-level k takes each page's SubIFD k as its plane.
                r = run(OOCRUN, out, self.p("l2.npy"), COPY, "-q", "--input-level", 2, "--pages",
                        "1:4")
                if r.returncode:
                    problems.append(f"--input-level 2: exit {r.returncode}: {r.stderr.strip()}")
                else:
                    with tifffile.TiffFile(out) as t:
                        if not np.array_equal(np.load(self.p("l2.npy")),
                                              t.series[0].levels[2].asarray()[1:4]):
                            problems.append("--input-level 2 --pages 1:4 differs from tifffile's")
                cli_cases.report(case, problems)

    def test_8_tiff_parts_and_resume(self):
        """A TIFF volume in parts (any order, boundaries inside planes and rows of strips or
        tiles), joined by --finish, and a run stopped by SIGTERM then resumed: one run's pages."""
        with cli_cases.cases(self):
            a = random_volume((5, 37, 45), "u2")
            np.save(self.p("pv.npy"), a)
            want = a.astype(np.float64) * 3  # scale mul=3 into f32
            for n, extra in enumerate(((), ("--tile", 16, "--compress", "deflate"),
                                       ("--compress", "packbits"))):
                out = self.p(f"parts{n}.tif")
                problems = []
                for i in (3, 0, 2, 1):
                    r = run(OOCRUN, self.p("pv.npy"), out, "scale mul=3 ! convert type=f32", "-q",
                            *extra, "--part", f"{i}/4")
                    if r.returncode:
                        problems.append(f"part {i}: exit {r.returncode}: {r.stderr.strip()}")
                r = run(OOCRUN, "--finish", out)
                if r.returncode:
                    problems.append(f"--finish: exit {r.returncode}: {r.stderr.strip()}")
                elif not np.array_equal(tifffile.imread(out), want.astype(np.float32)):
                    problems.append("the joined pages differ from the volume")
                else:
                    with tifffile.TiffFile(out) as t:
                        if len(t.pages) != 5:
                            problems.append(f"{len(t.pages)} pages, want 5")
                cli_cases.report(f"4 parts of a TIFF volume {' '.join(map(str, extra))}", problems)
            # A part missing: --finish names its rows.
            for i in (0, 1):
                run(OOCRUN, self.p("pv.npy"), self.p("gap.tif"), COPY, "-q", "--part", f"{i}/3")
            self.expect_error("--finish with a part missing", ["--finish", self.p("gap.tif")], 3,
                              ["not complete", "rows"])
            # Stopped part way (a slow run on one thread), then resumed.
            slow = random_volume((24, 200, 200), "f4")
            np.save(self.p("slow.npy"), slow)
            args = [self.p("slow.npy"), None, "median size=7", "-q", "--threads", 1,
                    "--band-rows", 8, "--tile", 32, "--compress", "deflate"]
            ref = self.p("ref.tif")
            r = run(OOCRUN, *[ref if x is None else x for x in args])
            if r.returncode:
                return cli_cases.fail(f"resume reference: exit {r.returncode}: {r.stderr}")
            cli_cases.stop_and_resume(
                "a TIFF volume stopped and resumed",
                lambda out: [OOCRUN, *map(str, [out if x is None else x for x in args])],
                lambda attempt: self.p(f"resumed{attempt}.tif"),
                lambda out: [] if np.array_equal(tifffile.imread(out), tifffile.imread(ref))
                else ["differs from one run"])


if __name__ == "__main__":
    unittest.main(argv=[__file__] + _REST)
