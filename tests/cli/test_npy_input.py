#!/usr/bin/env python3
"""oocconv on .npy files written by NumPy: every dtype and byte order, 2-D and 3-D shapes, against
the same data filtered as raw; outputs must load in NumPy, their data 64-byte aligned as NumPy
writes it; --format overrides the name; bad .npy files give clear errors.

Usage: test_npy_input.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import cli_args  # beside this file
import cli_cases

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCCONV = os.path.join(BIN, "oocconv")
TYPE = {"u1": "u8", "u2": "u16", "i2": "i16", "u4": "u32", "i4": "i32", "f4": "f32", "f8": "f64"}
# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(5)


def run(*args):
    return subprocess.run([OOCCONV, *map(str, args), "-q"], capture_output=True, text=True)


class NpyCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ooc_npy_")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def sweep(self, kind):
        """Every byte order and shape of one dtype: the .npy result equals the raw one."""
        with cli_cases.cases(self, verbose=False):
            for order in ("<", ">") if kind != "u1" else ("|",):
                for shape in ((23, 37), (23, 37, 3), (5, 7, 4)):
                    dt = np.dtype(order + kind)
                    if dt.kind == "f":
                        img = (rng.random(shape) * 2000 - 1000).astype(dt)
                    else:
                        info = np.iinfo(dt)
                        img = rng.integers(max(info.min, -30000), min(info.max, 60000),
                                           shape).astype(dt)
                    img[img == 0] = 1
                    src, out = self.p("in.npy"), self.p("out.npy")
                    raw, rout = self.p("in.raw"), self.p("out.raw")
                    np.save(src, img)
                    img.astype(dt.newbyteorder("<")).tofile(raw)
                    ch = shape[2] if len(shape) == 3 else 1
                    case = f"{dt.str} {shape}"
                    r1 = run(src, out, "--radius", 2)
                    r2 = run(raw, rout, "--radius", 2, "--width", shape[1], "--channels", ch,
                             "--type", TYPE[kind])
                    if r1.returncode or r2.returncode:
                        cli_cases.fail(f"{case}: exit {r1.returncode}/{r2.returncode}: "
                                       f"{r1.stderr}{r2.stderr}")
                        continue
                    got = np.load(out)
                    want = np.fromfile(rout, dtype=dt.newbyteorder("<")).reshape(shape)
                    if got.shape != shape or got.dtype != want.dtype or \
                            not np.array_equal(got, want, equal_nan=True):
                        cli_cases.fail(f"{case}: .npy result differs from the raw one "
                                       f"({got.dtype} {got.shape})")
                    # The header's data offset: a multiple of 64, as NumPy writes it.
                    with open(out, "rb") as f:
                        f.read(8)
                        hlen = int.from_bytes(f.read(2), "little")
                        if (10 + hlen) % 64:
                            cli_cases.fail(f"{case}: header of {10 + hlen} bytes: data not "
                                           "64-byte aligned")

    # One test per dtype, numbered in the order they draw their data.
    def test_1_u1(self):
        self.sweep("u1")

    def test_2_u2(self):
        self.sweep("u2")

    def test_3_i2(self):
        self.sweep("i2")

    def test_4_u4(self):
        self.sweep("u4")

    def test_5_i4(self):
        self.sweep("i4")

    def test_6_f4(self):
        self.sweep("f4")

    def test_7_f8(self):
        self.sweep("f8")

    def test_8_explicit_formats(self):
        img = rng.random((9, 11)).astype("<f4") + 1
        src = self.p("in.npy")
        np.save(src, img)
        with cli_cases.cases(self, verbose=False):
            named_raw = self.p("as_npy.raw")
            if run(src, named_raw, "--radius", 1, "--format", "npy").returncode or \
                    np.load(named_raw).shape != (9, 11):
                cli_cases.fail("--format npy did not write .npy to a .raw name")
            named_npy = self.p("as_raw.npy")
            if run(src, named_npy, "--radius", 1, "--format", "raw").returncode or \
                    os.path.getsize(named_npy) != 9 * 11 * 4:
                cli_cases.fail("--format raw did not write raw to a .npy name")

    def test_9_bad_files(self):
        """Bad files and contradictions: exit code and message."""
        bad, out = self.p("bad.npy"), self.p("o.npy")

        def expect(args, code, phrase, what):
            r = run(*args)
            if r.returncode != code or phrase not in r.stderr:
                cli_cases.fail(f"{what}: exit {r.returncode} (want {code}), stderr "
                               f"{r.stderr.strip()!r} (want {phrase!r})")

        with cli_cases.cases(self, verbose=False):
            np.save(bad, np.asfortranarray(rng.random((6, 5))))
            expect([bad, out, "--radius", 1], 3, "Fortran order", "Fortran order")
            np.save(bad, rng.random((6, 5)).astype(np.complex64))
            expect([bad, out, "--radius", 1], 3, "not supported", "complex dtype")
            np.save(bad, rng.random((2, 3, 4, 5)))
            expect([bad, out, "--radius", 1], 3, "not an image", "4-D shape")
            np.save(bad, rng.random((6, 5)))
            with open(bad, "r+b") as f:
                f.truncate(os.path.getsize(bad) - 8)
            expect([bad, out, "--radius", 1], 3, "truncated", "truncated data")
            np.save(bad, rng.random((6, 5)))
            expect([bad, out, "--radius", 1, "--width", 6], 2, "contradicts", "--width conflict")
            expect([bad, out, "--radius", 1, "--type", "f32"], 2, "contradicts",
                   "--type conflict")
            expect([bad, out, "--radius", 1, "--in-format", "bogus"], 2, "--in-format",
                   "bad --in-format")
            with open(bad, "wb") as f:
                f.write(b"\x93NUMPY\x01\x00\xff\x00{'descr'")
            expect([bad, out, "--radius", 1], 3, "truncated", "truncated header")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
