# One filter run for the CLI checks of convolutions (test_fft_convolve.py,
# test_fft_separable.py): the input written as raw, the output poisoned first (every sample must
# be written), oocconv with the filter's options or oocrun with its stage, then the output read
# back after its size is checked and no .partial is left; and their test cases' scratch folder.
import os
import shutil
import tempfile
import unittest

import numpy as np


class ScratchCase(unittest.TestCase):
    """A test case with a scratch folder (in /dev/shm where there is one), fresh() paths in it and
    a seeded generator: PREFIX and SEED set by the subclass."""
    PREFIX, SEED = "ooc_", 0

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix=self.PREFIX, dir="/dev/shm" if os.path.isdir(
            "/dev/shm") else None)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.n = 0
        self.rng = np.random.default_rng(self.SEED)

    def fresh(self, ext=".raw"):
        self.n += 1
        return os.path.join(self.tmp, f"f{self.n}{ext}")


def run_filter(test, run, fresh, np_types, x, oocconv_args, stage, border="reflect", cval=None,
               out_t=None, extra=(), tool="oocconv"):
    """x: (H, W, C); np_types: type name -> NumPy type; run(args) -> (rc, out, err); fresh() ->
    a new path in the test's folder. Returns the output array."""
    in_t = {v: k for k, v in np_types.items()}[x.dtype.type]
    out_t = out_t or in_t
    h, w, c = x.shape
    src = fresh()
    x.tofile(src)
    out = fresh()
    size = h * w * c * np.dtype(np_types[out_t]).itemsize
    with open(out, "wb") as f:
        f.write(b"\xa5" * (size + 7))
    common = ["--width", w, "--height", h, "--type", in_t, "--channels", c, "--border", border,
              "-q"]
    if cval is not None:
        common += ["--border-value", cval]
    if out_t != in_t:
        common += ["--out-type", out_t]
    if tool == "oocconv":
        args = ["oocconv", src, out] + list(oocconv_args) + common
    else:
        args = ["oocrun", src, out, stage] + common
    rc, _, err = run(args + list(extra))
    test.assertEqual(rc, 0, err)
    test.assertEqual(os.path.getsize(out), size, "output size")
    test.assertFalse(os.path.exists(out + ".partial"))
    return np.fromfile(out, np_types[out_t]).reshape(h, w, c)
