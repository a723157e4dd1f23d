#!/usr/bin/env python3
"""Voxel sizes (anisotropic volumes): read from ImageJ TIFF, OME-TIFF and OME-Zarr (0.4 and 0.5)
inputs and shown by oocinfo, --voxel-size overriding them; gaussian sigma-um (sigma per axis = S /
voxel size) and sigmas=Sz,Sy,Sx against scipy.ndimage.gaussian_filter with that sigma tuple;
OME-TIFF volumes (tifffile reads their series and PhysicalSize) and OME-Zarr outputs whose
multiscales follow NGFF (axes, units, a scale per level); bad values exit 2 and write nothing.

Usage: test_voxel_size.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
from scipy import ndimage as ndi

import cli_args  # beside this file
import cli_cases

try:
    import tifffile
    import zarr
except ImportError:
    cli_cases.skip_module(__name__, "tifffile or zarr is not installed")

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
OOCCONV = os.path.join(BIN, "oocconv")
OOCINFO = os.path.join(BIN, "oocinfo")
rng = np.random.default_rng(46)
VOL = (rng.random((7, 30, 41)) * 100).astype(np.float32)  # (z, y, x)
IMG = (rng.random((33, 45)) * 100).astype(np.float32)


def run(tool, *args):
    return subprocess.run([tool, *map(str, args)], capture_output=True, text=True)


def gaussian(a, sigma):
    """scipy's Gaussian as ooc computes it: radius ceil(3 sigma) per axis, on f64 of the input."""
    radius = [int(np.ceil(3 * s - 1e-9)) for s in sigma]
    return ndi.gaussian_filter(a.astype(np.float64), sigma=sigma, radius=radius)


def voxel_line(path, *args):
    r = run(OOCINFO, path, *args)
    assert r.returncode == 0, r.stderr
    lines = [x.strip() for x in r.stdout.splitlines() if "voxel size" in x]
    return lines[0] if lines else None


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class VoxelSizeCheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ooc-voxel-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.dir, name)

    def ok(self, tool, *args):
        r = run(tool, *args, "-q")
        self.assertEqual(r.returncode, 0, r.stderr)

    def imagej(self, name="ij.tif"):
        """An ImageJ stack: x 0.5 um, y 0.25 um (resolution: pixels per unit), z 2 um."""
        tifffile.imwrite(self.p(name), VOL, imagej=True, resolution=(1 / 0.5, 1 / 0.25),
                         metadata={"spacing": 2.0, "unit": "um", "axes": "ZYX"})
        return self.p(name)

    def ome_zarr(self, name, units=("millimeter", "millimeter", "millimeter"), version="0.4"):
        """A two-level OME-Zarr 0.4 group written by zarr-python, scales in `units`."""
        path = self.p(name)
        g = zarr.open_group(path, mode="w")
        g.create_dataset("0", data=VOL, chunks=(1, 16, 16))
        g.create_dataset("1", data=VOL[:, ::2, ::2], chunks=(1, 16, 16))
        axes = [{"name": n, "type": "space", **({"unit": u} if u else {})}
                for n, u in zip("zyx", units)]
        g.attrs["multiscales"] = [{"version": version, "axes": axes, "datasets": [
            {"path": "0", "coordinateTransformations": [{"type": "scale",
                                                         "scale": [0.003, 0.001, 0.0005]}]},
            {"path": "1", "coordinateTransformations": [{"type": "scale",
                                                         "scale": [0.003, 0.002, 0.001]}]}]}]
        return path

    def test_01_read_from_each_input_kind_and_shown_by_oocinfo(self):
        self.assertEqual(voxel_line(self.imagej()),
                         "voxel size: 2 x 0.25 x 0.5 um (z, y, x), from ImageJ")
        tifffile.imwrite(self.p("ij2d.tif"), IMG, imagej=True, resolution=(1 / 0.5, 1 / 0.5),
                         metadata={"unit": "micron"})
        self.assertEqual(voxel_line(self.p("ij2d.tif")),
                         "voxel size: 0.5 x 0.5 um (y, x), from ImageJ")
        # OME-TIFF in nanometres, converted.
        tifffile.imwrite(self.p("in.ome.tif"), VOL, metadata={
            "axes": "ZYX", "PhysicalSizeX": 250, "PhysicalSizeXUnit": "nm",
            "PhysicalSizeY": 500, "PhysicalSizeYUnit": "nm", "PhysicalSizeZ": 1500,
            "PhysicalSizeZUnit": "nm"})
        self.assertEqual(voxel_line(self.p("in.ome.tif")),
                         "voxel size: 1.5 x 0.5 x 0.25 um (z, y, x), from OME-XML")
        # OME-Zarr in millimetres: the level read (--input-level 1 doubles y and x).
        g = self.ome_zarr("mm.zarr")
        self.assertEqual(voxel_line(g),
                         "voxel size: 3 x 1 x 0.5 um (z, y, x), from OME-Zarr scale of level 0")
        self.assertEqual(voxel_line(g, "--input-level", 1),
                         "voxel size: 3 x 2 x 1 um (z, y, x), from OME-Zarr scale of level 1")
        # A scale without a length unit is no size; nor is a plain TIFF's.
        self.assertIsNone(voxel_line(self.ome_zarr("nounit.zarr", units=(None, None, None))))
        tifffile.imwrite(self.p("plain.tif"), VOL)
        self.assertIsNone(voxel_line(self.p("plain.tif")))
        # oocinfo --voxel-size stands for the file's.
        self.assertEqual(voxel_line(self.p("plain.tif"), "--voxel-size", "4,2,1"),
                         "voxel size: 4 x 2 x 1 um (z, y, x), from --voxel-size")
        # OME-Zarr 0.5 (Zarr 3) as ooc writes it, read back.
        out = self.p("v3.zarr")
        self.ok(OOCRUN, g, out, "scale mul=1", "--zarr-version", 3)
        self.assertEqual(voxel_line(out),
                         "voxel size: 3 x 1 x 0.5 um (z, y, x), from OME-Zarr scale of level 0")

    def test_02_sigma_um_and_sigmas_match_scipy(self):
        src = self.imagej()
        out = self.p("g.npy")
        # sigma 1.5 um: (0.75, 6, 3) pixels along (z, y, x).
        self.ok(OOCRUN, src, out, "gaussian sigma-um=1.5")
        ref = gaussian(VOL, (1.5 / 2, 1.5 / 0.25, 1.5 / 0.5))
        np.testing.assert_allclose(np.load(out), ref, atol=2e-4)
        # --voxel-size beats the input's.
        self.ok(OOCRUN, src, out, "gaussian sigma-um=2", "--voxel-size", "1,0.5,2")
        np.testing.assert_allclose(np.load(out), gaussian(VOL, (2, 4, 1)), atol=2e-4)
        # Per-axis sigmas in pixels (0 leaves z alone), and in 2-D (y, x).
        np.save(self.p("v.npy"), VOL)
        self.ok(OOCRUN, self.p("v.npy"), out, "gaussian sigmas=0,2.5,1")
        np.testing.assert_allclose(np.load(out), gaussian(VOL, (0, 2.5, 1)), atol=2e-4)
        self.ok(OOCRUN, self.p("v.npy"), out, "gaussian sigmas=1.2,0.7,3 ! scale mul=2")
        np.testing.assert_allclose(np.load(out), 2 * gaussian(VOL, (1.2, 0.7, 3)), atol=4e-4)
        np.save(self.p("i.npy"), IMG)
        self.ok(OOCRUN, self.p("i.npy"), out, "gaussian sigmas=3,0.8")
        np.testing.assert_allclose(np.load(out), gaussian(IMG, (3, 0.8)), atol=2e-4)
        self.ok(OOCRUN, self.p("i.npy"), out, "gaussian sigma-um=1", "--voxel-size", "0.25,0.5")
        np.testing.assert_allclose(np.load(out), gaussian(IMG, (4, 2)), atol=2e-4)
        # --planes: each plane in 2-D with the y and x sigmas.
        self.ok(OOCRUN, src, out, "gaussian sigma-um=1", "--planes")
        np.testing.assert_allclose(np.load(out), gaussian(VOL, (0, 4, 2)), atol=2e-4)
        # Zarr level 1 of the millimetre store: its own scale (3, 2, 1 um).
        self.ok(OOCRUN, self.ome_zarr("mm.zarr"), out, "gaussian sigma-um=3", "--input-level", 1)
        np.testing.assert_allclose(np.load(out), gaussian(VOL[:, ::2, ::2], (1, 1.5, 3)),
                                   atol=2e-4)

    def test_02b_compound_stages_take_sigma_um(self):
        """dog, unsharp and subtract-background: sigma-um (sigma1-um, sigma2-um) as gaussian's,
        each axis's sigma from its voxel size, against scipy's per-axis Gaussians."""
        src = self.imagej()  # voxel 2 x 0.25 x 0.5 um
        out = self.p("c.npy")
        v = VOL.astype(np.float64)
        self.ok(OOCRUN, src, out, "dog sigma1-um=0.5 sigma2=1.5")
        want = gaussian(VOL, (0.25, 2, 1)) - gaussian(VOL, (1.5, 1.5, 1.5))
        np.testing.assert_allclose(np.load(out), want, atol=4e-4)
        self.ok(OOCRUN, src, out, "unsharp sigma-um=1 amount=0.5")
        want = v + 0.5 * (v - gaussian(VOL, (0.5, 4, 2)))
        np.testing.assert_allclose(np.load(out), want, atol=4e-4)
        self.ok(OOCRUN, src, out, "subtract-background sigma-um=1", "--planes")
        np.testing.assert_allclose(np.load(out), v - gaussian(VOL, (0, 4, 2)), atol=4e-4)
        np.save(self.p("i.npy"), IMG)
        self.ok(OOCRUN, self.p("i.npy"), out, "subtract-background sigma-um=1", "--voxel-size",
                "0.25,0.5")
        want = IMG.astype(np.float64) - gaussian(IMG, (4, 2))
        np.testing.assert_allclose(np.load(out), want, atol=4e-4)
        for stage, words in (("dog sigma1=1", ["sigma2=S (pixels) or sigma2-um=S"]),
                             ("unsharp sigma=1 sigma-um=1", ["not both"]),
                             ("subtract-background sigma-um=1", ["sigma-um needs the voxel size",
                                                                 "--voxel-size z,y,x"])):
            np.save(self.p("n.npy"), VOL)
            self.expect_refused([self.p("n.npy"), stage], words)

    def test_03_ome_tiff_volume_output(self):
        out = self.p("out.ome.tif")
        self.ok(OOCRUN, self.imagej(), out, "scale mul=1")
        with tifffile.TiffFile(out) as t:
            self.assertTrue(t.is_ome)
            s = t.series[0]
            self.assertEqual((s.axes, s.shape), ("ZYX", VOL.shape))
            self.assertEqual(len(t.pages), VOL.shape[0])  # one IFD a plane
            np.testing.assert_array_equal(s.asarray(), VOL)
            px = tifffile.xml2dict(t.ome_metadata)["OME"]["Image"]["Pixels"]
        self.assertEqual((px["SizeZ"], px["SizeC"], px["DimensionOrder"]), (7, 1, "XYCZT"))
        self.assertEqual((px["PhysicalSizeZ"], px["PhysicalSizeY"], px["PhysicalSizeX"]),
                         (2, 0.25, 0.5))
        self.assertEqual(px["PhysicalSizeXUnit"], "\u00b5m")
        self.assertEqual(px["TiffData"]["PlaneCount"], 7)
        # Channels interleaved (SamplesPerPixel 3), --voxel-size, BigTIFF, u8; read back by ooc.
        rgb = (rng.random((4, 20, 24, 3)) * 255).astype(np.uint8)
        np.save(self.p("rgb.npy"), rgb)
        big = self.p("rgb.ome.tiff")
        self.ok(OOCRUN, self.p("rgb.npy"), big, "scale mul=1", "--voxel-size", "3,1,1",
                "--bigtiff", "yes")
        with tifffile.TiffFile(big) as t:
            self.assertTrue(t.is_bigtiff and t.is_ome)
            s = t.series[0]
            self.assertIn(s.axes, ("ZYXS", "ZYXC"))
            np.testing.assert_array_equal(s.asarray(), rgb)
            px = tifffile.xml2dict(t.ome_metadata)["OME"]["Image"]["Pixels"]
            self.assertEqual((px["SizeZ"], px["SizeC"], px["PhysicalSizeZ"]), (4, 3, 3))
        self.assertEqual(voxel_line(big), "voxel size: 3 x 1 x 1 um (z, y, x), from OME-XML")
        # A plane: PhysicalSizeX and Y only (the voxel's z is a volume's).
        np.save(self.p("i.npy"), IMG)
        self.ok(OOCCONV, self.p("i.npy"), self.p("i.ome.tif"), "--sigma", 1, "--voxel-size",
                "0.3,0.6")
        with tifffile.TiffFile(self.p("i.ome.tif")) as t:
            px = tifffile.xml2dict(t.ome_metadata)["OME"]["Image"]["Pixels"]
        self.assertEqual((px["PhysicalSizeY"], px["PhysicalSizeX"]), (0.3, 0.6))
        self.assertNotIn("PhysicalSizeZ", px)

    def check_multiscales(self, ms, axes, scales):
        """NGFF's rules of multiscales: axes by type (channel before space), space axes in a
        length unit, one scale per dataset as long as the axes."""
        self.assertEqual([a["name"] for a in ms["axes"]], axes)
        for a in ms["axes"]:
            if a["name"] in "zyx":
                self.assertEqual((a["type"], a.get("unit")), ("space", "micrometer"))
            else:
                self.assertEqual(a["type"], "channel")
                self.assertNotIn("unit", a)
        self.assertEqual([d["path"] for d in ms["datasets"]], [str(k) for k in range(len(scales))])
        for d, want in zip(ms["datasets"], scales):
            (t,) = d["coordinateTransformations"]
            self.assertEqual(t["type"], "scale")
            self.assertEqual(len(t["scale"]), len(axes))
            np.testing.assert_allclose(t["scale"], want, rtol=1e-12)

    def test_04_ome_zarr_outputs_record_the_size(self):
        src = self.imagej()
        out = self.p("o.zarr")
        self.ok(OOCRUN, src, out, "gaussian sigma-um=1", "--levels", 2, "--chunk", 16)
        attrs = load_json(os.path.join(out, ".zattrs"))
        (ms,) = attrs["multiscales"]
        self.assertEqual(ms["version"], "0.4")
        self.check_multiscales(ms, ["z", "y", "x"],
                               [[2, 0.25, 0.5], [2, 0.5, 1], [2, 1, 2]])
        got = zarr.open_array(os.path.join(out, "0"), mode="r")[...]
        np.testing.assert_allclose(got, gaussian(VOL, (0.5, 4, 2)), atol=2e-4)
        self.assertEqual(zarr.open_array(os.path.join(out, "2"), mode="r").shape, (7, 8, 11))
        # Zarr 3 (NGFF 0.5): the multiscales under "ome"; channels first; --voxel-size.
        rgb = (rng.random((3, 20, 24, 2)) * 255).astype(np.uint8)
        np.save(self.p("c.npy"), rgb)
        out3 = self.p("o3.zarr")
        self.ok(OOCRUN, self.p("c.npy"), out3, "scale mul=1", "--zarr-version", 3,
                "--voxel-size", "5,0.2,0.1", "--levels", 1, "--chunk", 8)
        group = load_json(os.path.join(out3, "zarr.json"))
        self.assertEqual((group["zarr_format"], group["node_type"]), (3, "group"))
        ome = group["attributes"]["ome"]
        self.assertEqual(ome["version"], "0.5")
        (ms,) = ome["multiscales"]
        self.assertNotIn("version", ms)
        self.check_multiscales(ms, ["c", "z", "y", "x"],
                               [[1, 5, 0.2, 0.1], [1, 5, 0.4, 0.2]])
        self.ok(OOCRUN, out3, self.p("back.npy"), "scale mul=1")
        np.testing.assert_array_equal(np.load(self.p("back.npy")), rgb)
        # A plane: y and x only. Without a size: pixel scales and no units, as before.
        np.save(self.p("i.npy"), IMG)
        self.ok(OOCCONV, self.p("i.npy"), self.p("i.zarr"), "--sigma", 1, "--voxel-size",
                "0.3,0.6")
        (ms,) = load_json(self.p("i.zarr/.zattrs"))["multiscales"]
        self.check_multiscales(ms, ["y", "x"], [[0.3, 0.6]])
        self.ok(OOCRUN, self.p("i.npy"), self.p("n.zarr"), "scale mul=1", "--levels", 1)
        (ms,) = load_json(self.p("n.zarr/.zattrs"))["multiscales"]
        self.assertEqual(ms["axes"], [{"name": "y", "type": "space"},
                                      {"name": "x", "type": "space"}])
        self.assertEqual([d["coordinateTransformations"][0]["scale"] for d in ms["datasets"]],
                         [[1.0, 1.0], [2.0, 2.0]])

    def expect_refused(self, args, words):
        out = self.p("refused.zarr")
        r = run(OOCRUN, *args[:1], out, *args[1:], "-q")
        self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
        for w in words:
            self.assertIn(w, r.stderr, args)
        self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"), args)

    def test_05_bad_values_exit_2_and_write_nothing(self):
        np.save(self.p("v.npy"), VOL)
        v = self.p("v.npy")
        for bad in ("0,1,1", "-1,1,1", "nan,1,1", "1,inf,1", "1,2,3,4", "1", "a,b", "1,,2",
                    "1,2,"):
            self.expect_refused([v, "gaussian sigma=1", "--voxel-size", bad],
                                ["--voxel-size takes z,y,x", f"'{bad}'"])
        self.expect_refused([v, "gaussian sigma-um=1"], ["sigma-um needs the voxel size",
                                                          "--voxel-size z,y,x"])
        self.expect_refused([v, "gaussian sigma-um=1", "--voxel-size", "1,1"],
                            ["along z", "--voxel-size z,y,x"])
        self.expect_refused([v, "gaussian sigma-um=0", "--voxel-size", "1,1,1"],
                            ["sigma-um must be a number > 0"])
        self.expect_refused([v, "gaussian sigma=1 sigma-um=1", "--voxel-size", "1,1,1"],
                            ["give one of sigma, sigmas and sigma-um"])
        self.expect_refused([v, "gaussian"], ["sigma is required"])
        for bad in ("1,2", "1,2,3,4", "1,-2,3", "1,x,3", "1,nan,1"):
            self.expect_refused([v, f"gaussian sigmas={bad}"], ["sigmas takes Sz,Sy,Sx", bad])
        self.expect_refused([v, "gaussian sigmas=1,2,3", "--planes"], ["sigmas takes Sy,Sx"])
        self.expect_refused([v, "gaussian sigmas=1,2,3 sigma-z=2"], ["sigma-z goes with sigma"])
        r = run(OOCCONV, v, self.p("c.npy"), "--sigma", 1, "--voxel-size", "0,1,1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--voxel-size takes", r.stderr)
        self.assertFalse(os.path.exists(self.p("c.npy")))

    def test_06_pages_and_levels_inherit_page_0s_size(self):
        """OME-XML and ImageJ describe the size on page 0 only: a stack's later planes, one page
        read alone and a page's reduced levels (SubIFDs, y and x scaled) inherit it."""
        ij = self.imagej()
        self.assertEqual(voxel_line(ij, "--pages", "2:5"),
                         "voxel size: 2 x 0.25 x 0.5 um (z, y, x), from ImageJ of page 0")
        self.assertEqual(voxel_line(ij, "--page", 3),
                         "voxel size: 0.25 x 0.5 um (y, x), from ImageJ of page 0")
        # sigma-um on the later planes: the sigmas of the whole stack's size.
        out = self.p("p.npy")
        self.ok(OOCRUN, ij, out, "gaussian sigma-um=1", "--pages", "2:6")
        want = gaussian(VOL[2:6], (1 / 2.0, 1 / 0.25, 1 / 0.5))
        got = np.load(out).astype(np.float64)
        self.assertLessEqual(float(np.abs(got - want).max()), 1e-4 * float(np.abs(want).max()))
        # An OME-TIFF pyramid: level 1 is half as wide and tall, its pixels twice the size.
        img = (rng.random((64, 96)) * 100).astype(np.float32)
        path = self.p("pyr.ome.tif")
        with tifffile.TiffWriter(path) as w:
            w.write(img, subifds=1, metadata={"axes": "YX", "PhysicalSizeX": 0.5,
                                              "PhysicalSizeY": 0.25})
            w.write(img[::2, ::2], subfiletype=1)
        self.assertEqual(voxel_line(path), "voxel size: 0.25 x 0.5 um (y, x), from OME-XML")
        self.assertEqual(voxel_line(path, "--input-level", 1),
                         "voxel size: 0.5 x 1 um (y, x), from OME-XML of page 0, scaled to the "
                         "level")


if __name__ == "__main__":
    unittest.main(argv=[__file__] + _REST)
