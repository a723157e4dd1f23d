# File-to-file runs (byte-identical with oocconv/ooceq, and against scipy), the stats dict,
# progress callbacks (and stopping a run from one), errors as ooc.Error, the GIL released.
import json
import os
import subprocess
import threading
import time

import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc
from conftest import tool


def noise(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "u":
        return rng.integers(0, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    return rng.random(shape).astype(dtype)


def run_tool(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("ext,options,cli", [
    (".npy", dict(radius=5, border="mirror"), ["--radius", "5", "--border", "mirror"]),
    (".tif", dict(sigma=1.7, border="nearest"), ["--sigma", "1.7", "--border", "nearest"]),
    (".npy", dict(taps=[1, 4, 6, 4, 1], out_type=np.float64, border="constant",
                  border_value=2.0),
     ["--taps", "1,4,6,4,1", "--out-type", "f64", "--border", "constant", "--border-value", "2"]),
    (".npy", dict(kernel="laplace", border="wrap"), ["--kernel", "laplace", "--border", "wrap"]),
])
def test_convolve_file_matches_oocconv(tmp_path, ext, options, cli):
    oocconv = tool("oocconv")
    x = noise((131, 97))
    src = tmp_path / ("in" + ext)
    if ext == ".tif":
        tifffile = pytest.importorskip("tifffile")
        tifffile.imwrite(src, x)
    else:
        np.save(src, x)
    ours, theirs = tmp_path / ("ours" + ext), tmp_path / ("theirs" + ext)
    stats = ooc.convolve(src, ours, **options, mem_limit="8M")
    cli_stats = json.loads(run_tool(oocconv, src, theirs, *cli, "--mem-limit", "8M",
                                    "--stats", "json", "--no-progress"))
    assert ours.read_bytes() == theirs.read_bytes()
    assert set(stats) == set(cli_stats)
    for k in ("input", "output", "plan", "seconds", "throughput"):
        assert set(stats[k]) == set(cli_stats[k]), k
    assert stats["operation"] == cli_stats["operation"]
    assert stats["plan"] == cli_stats["plan"]
    assert stats["input"]["width"] == 97 and stats["input"]["height"] == 131
    assert sorted(os.listdir(tmp_path)) == sorted(["in" + ext, "ours" + ext, "theirs" + ext])


def test_convolve_file_against_scipy(tmp_path):
    x = noise((80, 120))
    np.save(tmp_path / "in.npy", x)
    ooc.convolve(tmp_path / "in.npy", tmp_path / "out.npy", radius=6, border="reflect",
                 precision="f64")
    ref = ndi.gaussian_filter(x.astype(np.float64), 2.0, radius=6, mode="reflect")
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), ref, rtol=1e-6, atol=1e-7)
    k = np.array([[0, 1, 0], [1, -3, 2], [0, 1, 0.5]])
    ooc.convolve(tmp_path / "in.npy", tmp_path / "k.npy", kernel=k, border="mirror",
                 out_type="f64")
    np.testing.assert_allclose(np.load(tmp_path / "k.npy"),
                               ndi.convolve(x.astype(np.float64), k, mode="mirror"), rtol=1e-6,
                               atol=1e-6)


def test_equalize_file_matches_ooceq(tmp_path):
    ooceq = tool("ooceq")
    x = noise((64, 90), np.uint8) // 3
    np.save(tmp_path / "in.npy", x)
    stats = ooc.equalize(tmp_path / "in.npy", tmp_path / "ours.npy")
    run_tool(ooceq, tmp_path / "in.npy", tmp_path / "theirs.npy", "--no-progress", "-q")
    assert (tmp_path / "ours.npy").read_bytes() == (tmp_path / "theirs.npy").read_bytes()
    assert stats["histogram"]["bins"] == 256
    assert np.array_equal(ooc.equalize(x), np.load(tmp_path / "ours.npy"))


def test_progress_increasing(tmp_path):
    np.save(tmp_path / "in.npy", noise((200, 64)))
    calls = []
    ooc.convolve(tmp_path / "in.npy", tmp_path / "out.npy", radius=2, band_rows=16,
                 progress=lambda d, t: calls.append((d, t)))
    done = [d for d, _ in calls]
    assert len(calls) >= 2 and done == sorted(done) and calls[-1] == (200, 200)
    calls.clear()
    ooc.uniform_filter(noise((50, 20)), 3, band_rows=8, progress=lambda d, t: calls.append(d))
    assert calls == sorted(calls) and calls[-1] == 50



def test_tile_cols_change_no_byte():
    x = noise((40, 301), seed=4)
    chain = "gaussian sigma=2 ! median size=3 ! unsharp sigma=1 amount=0.5"
    whole = ooc.pipeline(x, chain, tile_cols=10**9)
    for tc in (1, 7, 64):
        assert np.array_equal(ooc.pipeline(x, chain, tile_cols=tc), whole)
    assert np.array_equal(ooc.gaussian_filter(x, 1.5, tile_cols=5), ooc.gaussian_filter(x, 1.5))
    with pytest.raises(ooc.Error, match="tile_cols"):
        ooc.gaussian_filter(x, 1, tile_cols=0)


class Stop(Exception):
    pass


def test_progress_raising_stops_and_leaves_nothing(tmp_path):
    np.save(tmp_path / "in.npy", noise((300, 64)))
    seen = []

    def progress(done, total):
        seen.append(done)
        if done >= 40:
            raise Stop("enough")

    for ext in (".npy", ".tif", ".raw"):
        seen.clear()
        with pytest.raises(Stop, match="enough"):
            ooc.convolve(tmp_path / "in.npy", tmp_path / ("out" + ext), radius=3, band_rows=10,
                         threads=1, slots=2, progress=progress)
        assert seen[-1] < 300
        assert os.listdir(tmp_path) == ["in.npy"], ext
    out = np.full((300, 64), np.nan, np.float32)
    with pytest.raises(Stop):
        ooc.gaussian_filter(np.load(tmp_path / "in.npy"), 1.0, output=out, band_rows=10,
                            progress=progress)


def test_errors_carry_ooc_messages(tmp_path):
    with pytest.raises(ooc.Error, match="no filter given: use radius=R") as e:
        ooc.convolve(tmp_path / "missing.npy", tmp_path / "out.npy")
    assert e.value.kind == "usage" and e.value.exit_code == 2
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(ooc.Error, match="missing.npy") as e:
        ooc.convolve(tmp_path / "missing.npy", tmp_path / "out.npy", radius=2)
    assert e.value.kind == "input"
    np.save(tmp_path / "in.npy", noise((10, 10)))
    with pytest.raises(ooc.Error, match="unknown border mode .bogus.: use reflect"):
        ooc.convolve(tmp_path / "in.npy", tmp_path / "out.npy", radius=2, border="bogus")
    with pytest.raises(ooc.Error, match="mem_limit"):
        ooc.gaussian_filter(noise((10, 10)), 1.0, mem_limit="lots")
    with pytest.raises(ooc.Error, match="mode must be one of"):
        ooc.gaussian_filter(noise((10, 10)), 1.0, mode="bogus")
    with pytest.raises(ooc.Error, match="int64 is not supported"):
        ooc.gaussian_filter(np.zeros((4, 4), np.int64), 1.0)
    with pytest.raises(ooc.Error, match="output has shape"):
        ooc.gaussian_filter(noise((10, 10)), 1.0, output=np.zeros((10, 11), np.float32))
    with pytest.raises(ooc.Error, match="channels"):
        ooc.gaussian_filter(noise((10, 10, 3)), 1.0)
    with pytest.raises(ooc.Error, match="invalid origin"):
        ooc.correlate1d(noise((10, 10)), [1, 2, 3], origin=2)
    with pytest.raises(ooc.Error, match="u8 and u16|uint8|u16"):
        ooc.equalize(noise((10, 10)))
    assert os.listdir(tmp_path) == ["in.npy"]


def test_errors_name_python_keywords():
    # The library's messages name its parameters; Python renders them as its keywords.
    with pytest.raises(ooc.Error) as e:
        ooc.gaussian_filter(noise((100, 100)), 2.0, mem_limit=1000)
    msg = str(e.value)
    assert msg.startswith("mem_limit=1000 B is too small"), msg
    assert msg.endswith("raise mem_limit"), msg
    assert "--" not in msg, msg
    with pytest.raises(ooc.Error, match="^device takes auto, cpu or cuda, got 'gpu'$"):
        ooc.gaussian_filter(noise((10, 10)), 1.0, device="gpu")


def test_device_cuda_without_gpu():
    if ooc.cuda_device_count() > 0:
        pytest.skip("a CUDA device is present")
    with pytest.raises(ooc.Error, match="no usable CUDA device") as e:
        ooc.gaussian_filter(noise((10, 10)), 1.0, device="cuda")
    assert e.value.kind == "device"


def test_file_cuda_matches_cpu(tmp_path, needs_cuda):
    np.save(tmp_path / "in.npy", noise((500, 300)))
    ooc.convolve(tmp_path / "in.npy", tmp_path / "cpu.npy", radius=7, device="cpu")
    stats = ooc.convolve(tmp_path / "in.npy", tmp_path / "gpu.npy", radius=7, device="cuda")
    assert "gpu_seconds" in stats
    np.testing.assert_allclose(np.load(tmp_path / "gpu.npy"), np.load(tmp_path / "cpu.npy"),
                               rtol=1e-6, atol=1e-6)


def test_gil_released():
    x = noise((1500, 1500), np.float64)
    counter = [0]
    running = threading.Event()
    stop = threading.Event()

    def spin():
        running.set()
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    running.wait()
    try:
        before = counter[0]
        t0 = time.perf_counter()
        ooc.gaussian_filter(x, 12.0, threads=1)
        elapsed = time.perf_counter() - t0
        during = counter[0] - before
    finally:
        stop.set()
        t.join()
    # With the GIL held through the call the counter would barely move (one switch at most).
    assert elapsed > 0.05 and during > 10000, (elapsed, during)


def test_cog_levels_0_has_no_overviews(tmp_path):
    # levels=0 is told from an absent levels: a COG without overviews, as oocconv --levels 0.
    tifffile = pytest.importorskip("tifffile")
    np.save(tmp_path / "in.npy", noise((555, 700), np.uint16))
    ooc.convolve(tmp_path / "in.npy", tmp_path / "flat.npy", radius=1)
    for name, keywords, pages in (("none.tif", dict(levels=0), 1), ("auto.tif", {}, 3)):
        ooc.convolve(tmp_path / "in.npy", tmp_path / name, radius=1, cog=True,
                     compress="deflate", **keywords)
        with tifffile.TiffFile(tmp_path / name) as tf:
            assert len(tf.pages) == pages, name
            np.testing.assert_array_equal(tf.pages[0].asarray(), np.load(tmp_path / "flat.npy"))


def test_predictor_keyword(tmp_path):
    # predictor= is oocconv's --predictor: auto writes the horizontal one (2), which tifffile
    # decodes without imagecodecs, floats included; the stats name the one that ran.
    tifffile = pytest.importorskip("tifffile")
    x = noise((61, 47)) * 1000 - 500
    np.save(tmp_path / "in.npy", x)
    want = {"auto": 2, "none": 1, "horizontal": 2, "float": 3}
    for predictor, tag in want.items():
        out = tmp_path / f"{predictor}.tif"
        stats = ooc.convolve(tmp_path / "in.npy", out, taps=[1], compress="deflate",
                             predictor=predictor)
        assert stats["output"]["predictor"] == {1: "none", 2: "horizontal", 3: "float"}[tag]
        with tifffile.TiffFile(out) as tf:
            assert tf.pages[0].predictor == tag
            if tag != 3:
                np.testing.assert_array_equal(tf.pages[0].asarray(), x)
    stats = ooc.run(tmp_path / "in.npy", tmp_path / "run.tif", "abs", compress="zstd",
                    predictor="float")
    assert stats["output"]["predictor"] == "float"
    np.save(tmp_path / "u.npy", noise((20, 30), np.uint16))
    with pytest.raises(ooc.Error, match="predictor float applies to f32 and f64") as e:
        ooc.convolve(tmp_path / "u.npy", tmp_path / "u.tif", taps=[1], compress="deflate",
                     predictor="float")
    assert e.value.kind == "usage"
    with pytest.raises(ooc.Error, match="predictor horizontal applies to"):
        ooc.convolve(tmp_path / "in.npy", tmp_path / "n.tif", taps=[1], predictor="horizontal")
    assert not (tmp_path / "u.tif").exists() and not (tmp_path / "n.tif").exists()


@pytest.mark.parametrize("keyword,flag,value", [
    ("threads", "--threads", 0), ("threads", "--threads", 10**12), ("threads", "--threads", -1),
    ("band_rows", "--band-rows", 0), ("band_rows", "--band-rows", 10**30),
    ("slots", "--slots", 0), ("slots", "--slots", 65537)])
def test_counts_refused_in_the_tools_words(tmp_path, keyword, flag, value):
    # threads=, band_rows=, slots= take the tools' ranges, refused in the same words (threads=0
    # and band_rows=0 ran before, threads=10**12 was "must be an integer").
    x = noise((12, 9))
    np.save(tmp_path / "in.npy", x)
    with pytest.raises(ooc.Error) as e:
        ooc.gaussian_filter(x, 1.0, **{keyword: value})
    assert e.value.kind == "usage"
    r = subprocess.run([tool("oocconv"), tmp_path / "in.npy", tmp_path / "o.npy", "--radius", "1",
                        flag, str(value)], capture_output=True, text=True)
    assert r.returncode == 2
    cli = r.stderr.splitlines()[0]
    assert cli.startswith("oocconv: error: %s: must be a whole number from 1 to " % flag), cli
    assert str(e.value) == keyword + " " + cli.split(flag + ": ", 1)[1]
    with pytest.raises(ooc.Error, match="must be a whole number"):
        ooc.pipeline(x, "abs", **{keyword: value})
    assert sorted(os.listdir(tmp_path)) == ["in.npy"]


def test_counts_take_integers_of_any_kind():
    x = noise((40, 30))
    want = ndi.gaussian_filter(x.astype(np.float64), 1.0)
    for kw in (dict(threads=np.int64(2)), dict(band_rows=np.uint8(7), slots=3), dict(threads=None)):
        np.testing.assert_allclose(ooc.gaussian_filter(x, 1.0, **kw), want, rtol=1e-5, atol=1e-6)
    for bad in (True, 2.0, "2"):
        with pytest.raises(ooc.Error, match="threads must be a whole number from 1 to"):
            ooc.gaussian_filter(x, 1.0, threads=bad)


def equalize_u16_reference(u):
    """ooceq's table for u16: cv2.equalizeHist's formula over 65536 bins, in float32 (the sum
    from the smallest value present, i0, times 65535 / (N - h[i0]) rounded to float32 first)."""
    h = np.bincount(u.ravel(), minlength=65536)
    i0 = int(np.flatnonzero(h)[0])
    scale = np.float32(65535) / np.float32(u.size - h[i0])
    sums = (np.cumsum(h) - h[i0]).astype(np.float32)
    lut = np.clip(np.rint(sums * scale), 0, 65535).astype(np.uint16)
    lut[:i0 + 1] = 0
    return lut[u]


def test_equalize_of_other_types_speaks_of_its_input(tmp_path):
    # ooc.equalize on float32 named "stage 1 (equalize)" and a convert stage never written: the
    # message speaks of ooc.equalize's input and gives a call that works.
    x = noise((50, 40)) * 3 + 0.5
    np.save(tmp_path / "in.npy", x)
    for call, what in ((lambda: ooc.equalize(x), "this array is float32"),
                       (lambda: ooc.equalize(tmp_path / "in.npy", tmp_path / "o.npy"),
                        "in.npy' is float32"),
                       (lambda: ooc.equalize(x.astype(np.int16)), "this array is int16")):
        with pytest.raises(ooc.Error) as e:
            call()
        msg = str(e.value)
        assert msg.startswith("ooc.equalize takes uint8 or uint16 images, "), msg
        assert what in msg and "stage" not in msg, msg
        assert e.value.kind == "usage"
    assert sorted(os.listdir(tmp_path)) == ["in.npy"]
    # The advice, followed: scale by S = 65535 / M, convert, equalize.
    s = 65535 / float(x.max())
    got = ooc.pipeline(x, "scale mul=%r ! convert type=u16 ! equalize" % s)
    u = np.clip(np.rint(x.astype(np.float32) * np.float32(s)), 0, 65535).astype(np.uint16)
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, equalize_u16_reference(u))
    ooc.run(tmp_path / "in.npy", tmp_path / "o.npy", "scale mul=%r ! convert type=u16 ! equalize" % s)
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), got)
