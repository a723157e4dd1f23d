#!/usr/bin/env python3
"""2-D convolution (`oocconv --kernel`) against scipy.ndimage.convolve: every type, channel
count, border and kernel shape, ties and saturation, NaN, kernel files and built-ins, rank-1
kernels, bad kernels, bit-identical across bands and threads (A in ops_support.py).
Usage: test_convolve_kernel.py --bin-dir DIR [unittest options, e.g. -v or a test name]"""

import json
import os
import sys

import numpy as np

from ops_support import (BORDERS, LAPLACE, OpsCase, SOBEL_X, convert, gaussian2d, main, random_data,
    run, scipy_ref)


class ConvolveTest(OpsCase):
    def test_sweep_types_channels_borders_kernels(self):
        """Every type configuration x channels 1, 3 x every border x 6 kernel shapes; odd widths,
        band heights 1, 7 and planned (none dividing the height); outputs over poisoned files."""
        rng = np.random.default_rng(1234)
        configs = [("u8", "u8"), ("u16", "u16"), ("i16", "i16"), ("f32", "f32"), ("f64", "f64"),
                   ("u8", "f32"), ("u16", "f32"), ("i16", "f32")]
        shapes = [(3, 3), (5, 7), (15, 15), (31, 31), (1, 9), (9, 1)]
        kernels = {s: rng.uniform(-1, 1, s) for s in shapes}
        for s in ((3, 3), (5, 7), (15, 15), (31, 31)):
            self.assertGreater(np.linalg.matrix_rank(kernels[s]), 1)
        kfiles = {s: self.write_kernel(kernels[s]) for s in shapes}
        sizes = [(23, 37), (17, 29), (20, 31)]
        bands = [None, 1, 7]
        i = 0
        for in_t, out_t in configs:
            for ch in (1, 3):
                x_by_size = {hw: random_data(rng, in_t, hw + (ch,)) for hw in sizes}
                for border in BORDERS:
                    for s in shapes:
                        i += 1
                        hw = sizes[i % len(sizes)]
                        br = bands[(i // 3) % len(bands)]
                        cval = (0.5 if i % 2 else 7) if border == "constant" else None
                        extra = ["--band-rows", br] if br else []
                        what = (f"{in_t}->{out_t} C={ch} {border}"
                                f"{'' if cval is None else f'({cval})'} kernel {s[0]}x{s[1]} "
                                f"image {hw[0]}x{hw[1]} band-rows {br or 'default'}")
                        with self.subTest(what):
                            x = x_by_size[hw]
                            got, _ = self.conv(x, kfiles[s], border, cval, out_t, extra)
                            self.check_close(got, x, kernels[s], border, cval, in_t, out_t, what)

    def test_kernel_larger_than_image(self):
        """41x41 (and 41x3, 3x41) kernels on a 20x30 image: scipy's extension repeats."""
        rng = np.random.default_rng(7)
        for in_t, out_t in (("f32", "f32"), ("u8", "u8"), ("f64", "f64"), ("u16", "f32")):
            for ch in (1, 3):
                x = random_data(rng, in_t, (20, 30, ch))
                for shape in ((41, 41), (41, 3), (3, 41)):
                    k = rng.uniform(-1, 1, shape)
                    kf = self.write_kernel(k)
                    for border in BORDERS:
                        cval = 7 if border == "constant" else None
                        for br in (None, 7):
                            what = f"{in_t}->{out_t} C={ch} {shape} {border} band-rows {br}"
                            with self.subTest(what):
                                got, _ = self.conv(x, kf, border, cval, out_t,
                                                   ["--band-rows", br] if br else [])
                                self.check_close(got, x, k, border, cval, in_t, out_t, what)

    def test_integer_output_rounds_half_even_and_saturates(self):
        """Exact halves (data in steps of 0.5, integer kernels, exact in f32) round to even, out of
        range saturates; both through the 2-D path (laplace) and the separable one (sobel-x)."""
        rng = np.random.default_rng(11)
        x = (rng.integers(-700, 700, (19, 27, 1)) * 0.5).astype(np.float32)
        for name, k in (("laplace", LAPLACE), ("sobel-x", SOBEL_X), ("sobel-y", SOBEL_X.T)):
            for out_t in ("u8", "i16", "u16"):
                for border in ("reflect", "constant"):
                    what = f"{name} f32->{out_t} {border}"
                    with self.subTest(what):
                        cval = 2.5 if border == "constant" else None
                        got, _ = self.conv(x, name, border, cval, out_t)
                        ref = scipy_ref(x, k, border, cval or 0.0)
                        self.assertTrue(np.any(np.mod(ref, 1) == 0.5), "no ties in the data")
                        expect = convert(ref, out_t)
                        bad = np.argwhere(got != expect)
                        self.assertEqual(len(bad), 0,
                                         f"{what}: {len(bad)} samples differ, first at "
                                         f"{bad[:1].tolist()}: got "
                                         f"{got[tuple(bad[0])] if len(bad) else ''}, expected "
                                         f"{expect[tuple(bad[0])] if len(bad) else ''} "
                                         f"(exact {ref[tuple(bad[0])] if len(bad) else ''})")

    def test_nan_and_infinities_to_integers(self):
        """NaN becomes 0 and +-inf saturate in an integer output (1x1 kernel, and a dense 3x3
        kernel through which the NaN spreads to its neighbours, as in scipy)."""
        x = np.array([[0.5, 1.5, 2.5, -0.5, 3.49],
                      [300, -5, np.nan, np.inf, -np.inf],
                      [254.5, 255.5, 65535.5, -32768.5, 7]], np.float32)[:, :, None]
        k1 = self.write_kernel([[1.0]])
        rng = np.random.default_rng(3)
        kd = rng.uniform(0.5, 1, (3, 3))
        kdf = self.write_kernel(kd)
        for kf, k in ((k1, [[1.0]]), (kdf, kd)):
            for out_t in ("u8", "u16", "i16"):
                what = f"kernel {np.shape(k)} f32->{out_t}"
                with self.subTest(what):
                    with np.errstate(invalid="ignore"):
                        ref = scipy_ref(x, k, "nearest")
                    got, _ = self.conv(x, kf, "nearest", None, out_t)
                    expect = convert(ref, out_t)
                    if np.shape(k) == (1, 1):
                        np.testing.assert_array_equal(got, expect, what)
                    else:  # NaN / inf exactly where scipy has them; elsewhere within 1
                        special = ~np.isfinite(ref)
                        np.testing.assert_array_equal(got[special], expect[special], what)
                        diff = np.abs(got.astype(np.int64) - expect.astype(np.int64))
                        self.assertLessEqual(int(diff.max()), 1, what)

    def test_output_exact_size_over_poisoned_file(self):
        """An existing, larger OUT full of poison is replaced by exactly H x W x C x bytes."""
        rng = np.random.default_rng(5)
        for in_t, out_t, ch in (("u8", "u8", 3), ("f32", "f64", 1), ("i16", "u16", 2),
                                ("f64", "u8", 4)):
            with self.subTest(f"{in_t}->{out_t} C={ch}"):
                x = random_data(rng, in_t, (13, 21, ch))
                k = rng.uniform(-1, 1, (5, 3))
                got, _ = self.conv(x, self.write_kernel(k), "mirror", None, out_t)
                self.check_close(got, x, k, "mirror", None, in_t, out_t, f"{in_t}->{out_t}")

    def test_kernel_text_file(self):
        """Text kernels: rows of numbers separated by spaces or commas, '# comment' lines."""
        rng = np.random.default_rng(21)
        k = rng.uniform(-2, 2, (5, 7))
        lines = ["# a 5 x 7 kernel", "# rows of numbers"]
        for r, row in enumerate(k):
            if r % 2:
                lines.append(", ".join(f"{v:.17g}" for v in row))
            else:
                lines.append("  " + "   ".join(f"{v:.17g}" for v in row) + " ")
            if r == 2:
                lines.append("# a comment between rows")
        kf = self.path("k.txt")
        with open(kf, "w") as f:
            f.write("\n".join(lines) + "\n")
        x = random_data(rng, "f32", (22, 33, 2))
        for border in BORDERS:
            with self.subTest(border):
                got, _ = self.conv(x, kf, border, 0.5 if border == "constant" else None)
                self.check_close(got, x, k, border, 0.5 if border == "constant" else None,
                                 "f32", "f32", f"text kernel {border}")
        # A 3x3 with commas only and no trailing newline.
        kf2 = self.path("k2.txt")
        with open(kf2, "w") as f:
            f.write("1,2,3\n4,-5,6\n-7,8,9.5")
        k2 = np.array([[1, 2, 3], [4, -5, 6], [-7, 8, 9.5]])
        got, _ = self.conv(x, kf2, "wrap")
        self.check_close(got, x, k2, "wrap", None, "f32", "f32", "comma kernel")

    def test_kernel_npy_every_real_dtype(self):
        """.npy kernels of every real dtype (as scipy casts weights to float64): bool, int8-64,
        uint8-64, float16/32/64, either byte order, C or Fortran order; taken exactly, by oocconv
        --kernel and by oocrun's convolve stage alike."""
        rng = np.random.default_rng(22)
        x = random_data(rng, "f64", (18, 25, 3))
        dtypes = ["?", "i1", "u1", "<i2", ">i2", "<u2", "<i4", ">u4", "<i8", ">i8", "<u8", "<f2",
                  "<f4", ">f4", "<f8", ">f8"]
        for dt in dtypes:
            d = np.dtype(dt)
            for shape in ((3, 5), (7, 7)):
                if d.kind == "b":
                    k = rng.integers(0, 2, shape).astype(d)
                elif d.kind in "iu":
                    lo = 0 if d.kind == "u" else -100
                    k = rng.integers(lo, 100, shape).astype(d)
                else:
                    k = rng.uniform(-1, 1, shape).astype(d)
                for order in ("C", "F"):
                    kf = self.fresh(".npy")
                    np.save(kf, np.asfortranarray(k) if order == "F" else k)
                    name = f"{d.str} {shape} {order}"
                    with self.subTest(name):
                        got, _ = self.conv(x, kf, "nearest")
                        self.check_close(got, x, k.astype(np.float64), "nearest", None, "f64",
                                         "f64", f"npy {name}")
            # The pipeline stage reads the same files: the same bytes.
            src, a, b = self.fresh(".npy"), self.fresh(".npy"), self.fresh(".npy")
            np.save(src, x)
            kf = self.fresh(".npy")
            np.save(kf, k)
            run(["oocconv", src, a, "--kernel", kf, "--border", "nearest", "-q"])
            rc, _, err = run(["oocrun", src, b, f"convolve kernel={kf}", "--border", "nearest",
                              "-q"])
            self.assertEqual(rc, 0, f"oocrun convolve kernel= {d.str}: {err}")
            self.assertEqual(open(a, "rb").read(), open(b, "rb").read(), d.str)

    def test_builtin_kernels(self):
        """box:N, gaussian2d:S (radius ceil(3S)), laplace, sobel-x, sobel-y equal their
        definitions through scipy."""
        rng = np.random.default_rng(23)
        builtins = [("box:1", np.ones((1, 1))), ("box:3", np.full((3, 3), 1 / 9)),
                    ("box:5", np.full((5, 5), 1 / 25)), ("box:9", np.full((9, 9), 1 / 81)),
                    ("gaussian2d:0.7", gaussian2d(0.7)), ("gaussian2d:1.5", gaussian2d(1.5)),
                    ("gaussian2d:2", gaussian2d(2.0)), ("laplace", LAPLACE),
                    ("sobel-x", SOBEL_X), ("sobel-y", SOBEL_X.T)]
        for in_t, out_t in (("f64", "f64"), ("f32", "f32"), ("u16", "f32")):
            x = random_data(rng, in_t, (21, 35, 2))
            for name, k in builtins:
                for border in ("reflect", "wrap", "constant"):
                    cval = 3 if border == "constant" else None
                    what = f"{name} {in_t}->{out_t} {border}"
                    with self.subTest(what):
                        got, _ = self.conv(x, name, border, cval, out_t)
                        self.check_close(got, x, k, border, cval, in_t, out_t, what)

    def test_rank1_kernels_reported_and_match(self):
        """box, gaussian2d, sobel and an outer product from a file say "rank 1" in --stats json's
        "operation" and equal scipy, also with --border constant --border-value 3 (where sobel-x,
        whose row taps sum to 0, runs 2-D)."""
        rng = np.random.default_rng(24)
        outer = np.outer(rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 5))
        of = self.path("outer.txt")
        np.savetxt(of, outer, fmt="%.17g")
        cases = [("box:5", np.full((5, 5), 1 / 25)), ("gaussian2d:1.5", gaussian2d(1.5)),
                 ("sobel-x", SOBEL_X), ("sobel-y", SOBEL_X.T), (of, outer),
                 (self.write_kernel(outer.T), outer.T)]
        for in_t, out_t in (("f32", "f32"), ("u8", "u8"), ("f64", "f64")):
            x = random_data(rng, in_t, (24, 31, 3))
            for name, k in cases:
                for border, cval in (("constant", 3), ("reflect", None), ("mirror", None)):
                    what = f"{os.path.basename(name)} {in_t}->{out_t} {border}"
                    with self.subTest(what):
                        got, so = self.conv(x, name, border, cval, out_t,
                                            ["--stats", "json", "--band-rows", 5])
                        op = json.loads(so)["operation"]
                        # Under a nonzero constant border a rank-1 kernel runs separable only if
                        # its row taps can be scaled to sum to 1 (the separable filter pads the
                        # x-filtered rows with the constant); sobel-x's row sums to 0: 2-D.
                        zero_row = name == "sobel-x" and border == "constant"
                        if zero_row:
                            self.assertNotIn("rank 1", op, f"{what}: operation {op!r}")
                        else:
                            self.assertIn("rank 1", op, f"{what}: operation {op!r}")
                        self.check_close(got, x, k, border, cval, in_t, out_t, what)

    def test_rank2_kernel_not_reported_rank1(self):
        """laplace (rank 2) and a random 5x5 run as 2-D kernels: no "rank 1" in the operation."""
        rng = np.random.default_rng(25)
        x = random_data(rng, "f32", (16, 19, 1))
        k = rng.uniform(-1, 1, (5, 5))
        for name, kk in (("laplace", LAPLACE), (self.write_kernel(k), k)):
            with self.subTest(os.path.basename(name)):
                got, so = self.conv(x, name, "constant", 3, None, ["--stats", "json"])
                op = json.loads(so)["operation"]
                self.assertNotIn("rank 1", op, f"operation {op!r}")
                self.check_close(got, x, kk, "constant", 3, "f32", "f32", name)

    def test_bad_kernels_refused(self):
        """Bad kernels: exit 2, a message naming the kernel, no OUT and no OUT.partial."""
        def text(name, body):
            p = self.path(name)
            with open(p, "w") as f:
                f.write(body)
            return p
        k3d = self.path("k3d.npy")
        np.save(k3d, np.ones((3, 3, 3)))
        k1d = self.path("k1d.npy")
        np.save(k1d, np.ones(3))
        kcomplex = self.path("kcomplex.npy")
        np.save(kcomplex, np.ones((3, 3), np.complex64))
        kdir = self.path("kdir")
        os.mkdir(kdir)
        cases = {
            "even 4x4": [text("even.txt", "1 1 1 1\n" * 4)],
            "even 3x4": [text("even2.txt", "1 1 1 1\n" * 3)],
            "empty file": [text("empty.txt", "")],
            "only comments": [text("comments.txt", "# nothing\n# here\n")],
            "NaN tap": [text("nan.txt", "1 2 3\n4 nan 6\n7 8 9\n")],
            "inf tap": [text("inf.txt", "1 2 3\n4 inf 6\n7 8 9\n")],
            "ragged rows": [text("ragged.txt", "1 2 3\n4 5\n7 8 9\n")],
            "not a number": [text("word.txt", "1 2 3\n4 x 6\n7 8 9\n")],
            "3-D npy": [k3d],
            "1-D npy": [k1d],
            "complex npy": [kcomplex],
            "box:4": ["box:4"],
            "box:0": ["box:0"],
            "gaussian2d:-1": ["gaussian2d:-1"],
            "gaussian2d:0": ["gaussian2d:0"],
            "foo": ["foo"],
            "missing file": [self.path("nope.txt")],
            "directory": [kdir],
            "--kernel with --radius": ["laplace", "--radius", "2"],
            "--kernel with --taps": ["laplace", "--taps", "1,2,1"],
        }
        x = random_data(np.random.default_rng(0), "f32", (9, 11, 1))
        src = self.write_raw(x)
        for what, kargs in cases.items():
            with self.subTest(what):
                out = self.path("bad_out.raw")
                args = ["oocconv", src, out, "--width", 11, "--kernel"] + kargs
                rc, _, err = run(args, expect=2)
                self.assertEqual(rc, 2, f"{what}: rc {rc}, stderr {err.strip()!r}")
                self.assertIn("kernel", err.lower(), f"{what}: message {err.strip()!r}")
                self.assertFalse(os.path.exists(out), f"{what}: output written")
                self.assertFalse(os.path.exists(out + ".partial"), f"{what}: .partial left")

    def test_bit_identical_across_bands_and_threads(self):
        """The same bytes for --band-rows 1 / 5 / planned and --threads 1 / 2 (2-D and rank 1)."""
        rng = np.random.default_rng(26)
        k = rng.uniform(-1, 1, (15, 15))
        kf = self.write_kernel(k)
        for in_t, out_t, ch, kern in (("f32", "f32", 3, kf), ("u16", "u16", 1, kf),
                                      ("f32", "f32", 2, "gaussian2d:2"),
                                      ("u8", "f32", 3, kf), ("f64", "f64", 1, kf)):
            x = random_data(rng, in_t, (41, 53, ch))
            src = self.write_raw(x)
            for border in ("reflect", "constant"):
                what = f"{in_t}->{out_t} C={ch} {os.path.basename(kern)} {border}"
                with self.subTest(what):
                    blobs = {}
                    for br in (1, 5, None):
                        for th in (1, 2):
                            out = self.fresh()
                            args = ["oocconv", src, out, "--width", 53, "--type", in_t,
                                    "--channels", ch, "--kernel", kern, "--border", border,
                                    "--border-value", 0.5, "--out-type", out_t,
                                    "--threads", th, "-q"]
                            if br:
                                args += ["--band-rows", br]
                            rc, _, err = run(args)
                            self.assertEqual(rc, 0, err)
                            with open(out, "rb") as f:
                                blobs[(br, th)] = f.read()
                    first = blobs[(1, 1)]
                    for key, blob in blobs.items():
                        self.assertEqual(blob, first, f"{what}: band-rows/threads {key} differ "
                                         "from (1, 1)")


if __name__ == "__main__":
    sys.exit(main())
