#!/usr/bin/env python3
"""--device cuda for --kernel and ooceq against the CPU backend and the float64 reference;
skipped, saying so, without a CUDA device (C in ops_support.py).
Usage: test_cuda_convolve_equalize.py --bin-dir DIR [unittest options, e.g. -v or a test name]"""

import json
import os
import sys

import numpy as np

from ops_support import (LAPLACE, OpsCase, SOBEL_X, convert, cuda_count, cv2, cv2_eq, gaussian2d,
    main, random_data, scipy_ref)


class CudaTest(OpsCase):
    def setUp(self):
        super().setUp()
        if cuda_count() == 0:
            self.skipTest("oocinfo lists no CUDA device here (CUDA devices: 0)")

    def test_cuda_convolve_matches_cpu_and_reference(self):
        """--device cuda against --device cpu: f32 within 1e-5 relative of the float64 reference;
        integer outputs of exact arithmetic (integer kernels and data) identical."""
        rng = np.random.default_rng(51)
        kr = rng.uniform(-1, 1, (15, 15))
        kint = rng.integers(-3, 4, (7, 5)).astype(np.float64)
        kint[3, 2] = 5  # rank > 1, exact in f32 for u8 data
        krf, kif = self.write_kernel(kr), self.write_kernel(kint)
        cases = [("f32", "f32", 3, krf, kr, "reflect", None, None),
                 ("f32", "f32", 1, krf, kr, "constant", 0.5, 7),
                 ("f32", "f32", 2, "gaussian2d:1.5", gaussian2d(1.5), "wrap", None, 1),
                 ("f64", "f64", 1, krf, kr, "mirror", None, None),
                 ("u8", "i16", 3, kif, kint, "nearest", None, 7),
                 ("u8", "u8", 1, "laplace", LAPLACE, "constant", 7, None),
                 ("u16", "u16", 1, "sobel-x", SOBEL_X, "reflect", None, 5)]
        for in_t, out_t, ch, kern, k, border, cval, br in cases:
            what = f"{in_t}->{out_t} C={ch} {os.path.basename(kern)} {border}"
            with self.subTest(what):
                x = random_data(rng, in_t, (45, 67, ch))
                extra = ["--band-rows", br] if br else []
                cpu, _ = self.conv(x, kern, border, cval, out_t, extra + ["--device", "cpu"])
                gpu, so = self.conv(x, kern, border, cval, out_t,
                                    extra + ["--device", "cuda", "--stats", "json"])
                self.assertIn("cuda", json.loads(so)["backend"].lower())
                if out_t in ("f32", "f64"):
                    self.check_close(gpu, x, k, border, cval, in_t, out_t, what + " cuda")
                    self.check_close(cpu, x, k, border, cval, in_t, out_t, what + " cpu")
                else:
                    self.assertTrue(np.array_equal(cpu, gpu), f"{what}: cpu and cuda differ by "
                                    f"up to {np.abs(cpu.astype(int) - gpu.astype(int)).max()}")
                    np.testing.assert_array_equal(cpu, convert(scipy_ref(x, k, border, cval or 0),
                                                               out_t))

    def test_cuda_equalize_identical_to_cpu(self):
        """ooceq --device cuda gives the CPU backend's bytes (u8 and u16, 1 and 3 channels)."""
        if cv2 is None:
            self.skipTest("this python has no cv2")
        rng = np.random.default_rng(52)
        for dt, c, hi in ((np.uint8, 1, 256), (np.uint8, 3, 90), (np.uint16, 1, 65536),
                          (np.uint16, 3, 3000)):
            x = rng.integers(0, hi, (129, 77, c)).astype(dt)
            what = f"{np.dtype(dt).name} C={c}"
            with self.subTest(what):
                cpu, _ = self.eq(x, ["--band-rows", 7], device="cpu")
                gpu, _ = self.eq(x, ["--band-rows", 7], device="cuda")
                self.assertTrue(np.array_equal(cpu, gpu), f"{what}: cpu and cuda differ")
                if dt == np.uint8:
                    self.assertTrue(np.array_equal(gpu, cv2_eq(x)), f"{what}: cuda vs cv2")


if __name__ == "__main__":
    sys.exit(main())
