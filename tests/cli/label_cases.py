"""What the label checks share (test_label.py, test_label_types.py, test_label_parts.py): scipy's
labels for a connectivity, the late-merging image, and a case with a temporary folder and a tool
runner."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np
from scipy import ndimage as ndi

RANK = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}


def scipy_label(mask, conn, planes_apart=False, output=None):
    """scipy.ndimage.label with the structure of `conn` (each plane apart: no links along z), as
    u32 unless `output` (a dtype) says."""
    s = ndi.generate_binary_structure(mask.ndim, RANK[conn])
    if planes_apart:
        s = np.zeros((3, 3, 3), bool)
        s[1] = ndi.generate_binary_structure(2, RANK[conn])
    want, n = ndi.label(mask, s, output=output)
    return (want if output is not None else want.astype(np.uint32)), n


def late_merging_image(blobs):
    """A comb, a spiral and crossing diagonals (shapes that join far from where they start) over
    `blobs` (63 x 64), beside teeth that span the whole height and join in the last row."""
    comb = np.zeros((57, 64), np.uint8)
    comb[:, ::2] = 1
    comb[-1, :] = 1
    spiral = np.zeros((61, 64), np.uint8)
    lo, hi = 0, 60
    while lo + 2 < hi:
        spiral[lo, lo:hi + 1] = 1
        spiral[lo:hi + 1, hi] = 1
        spiral[hi, lo + 2:hi + 1] = 1
        spiral[lo + 2:hi + 1, lo + 2] = 1
        lo, hi = lo + 4, hi - 4
    diag = np.zeros((40, 64), np.uint8)
    diag[:, :40] = np.eye(40, dtype=np.uint8)[::-1] | np.eye(40, dtype=np.uint8)
    a = np.vstack([comb, spiral, diag, blobs.astype(np.uint8)])
    teeth = np.zeros((a.shape[0], 15), np.uint8)
    teeth[:, ::2] = 3
    teeth[-1] = 3
    return np.hstack([a, teeth])


class LabelCase(unittest.TestCase):
    """A temporary folder (p(name)), run_tool (a tool's argv, -q added, its exit code checked),
    stop_in_second_pass and mpirun."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ooc_label_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.dir, name)

    def run_tool(self, args, env=None, code=0):
        r = subprocess.run(args + ["-q"], capture_output=True, text=True,
                           env=dict(os.environ, **(env or {})))
        self.assertEqual(r.returncode, code, f"{args}: {r.stderr}")
        return r

    def stop_in_second_pass(self, argv, journal, env=None, code=75):
        """Runs argv (-q added) and stops it by SIGTERM once `journal` shows rows written (the
        second pass: the first writes none); it must exit `code` (None: any but 0, as mpirun's),
        its stderr returned. Skips where the run ends first."""
        proc = subprocess.Popen(argv + ["-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with open(journal) as f:
                    if any(line.startswith("done ") and int(line.split()[1]) > 0 for line in f):
                        break
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        if proc.poll() is not None:
            proc.communicate()
            self.skipTest("the run ended before the signal")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        if code is None:
            self.assertNotEqual(proc.returncode, 0, err)
        else:
            self.assertEqual(proc.returncode, code, err)
        return err

    def mpirun(self):
        """OpenMPI's mpirun and an environment that lets it run here (as root, more ranks than
        cores, shared memory); skips without it."""
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("mpirun not installed")
        return mpirun, dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                            OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                            OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
                            OMPI_MCA_btl_vader_single_copy_mechanism="none")
