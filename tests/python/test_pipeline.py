# ooc.pipeline and ooc.run (issue 30 item 4): oocrun's stages over arrays and files. Each stage
# against scipy.ndimage in float64; fused pipelines bit-identical to their stages run one by one
# with float32 intermediates; ooc.run byte-identical to the oocrun binary; equalize against
# cv2.equalizeHist; bad pipelines raise ooc.Error naming the stage. Outputs are poisoned first, so
# that a sample left unwritten shows. Images are small: the file runs in seconds.
import json
import os
import random
import subprocess

import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc
from conftest import tool

BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]
NP = {"u8": np.uint8, "u16": np.uint16, "i16": np.int16, "f32": np.float32}


def image(h, w, c, t, seed=1):
    """Random non-zero samples: a stale or skipped row cannot pass for a right one."""
    rng = np.random.default_rng(seed)
    shape = (h, w) if c == 1 else (h, w, c)
    if t == "f32":
        return rng.uniform(0.5, 200.0, shape).astype(np.float32)
    if t == "u8":
        return rng.integers(1, 256, shape).astype(np.uint8)
    return rng.integers(1 if t == "u16" else -3000, 3001, shape).astype(NP[t])


def poisoned(shape, dtype):
    a = np.empty(shape, dtype)
    a.view(np.uint8)[...] = 0x5A
    return a


# ---- float64 references (as tests/cli/pipeline_check.py) ----

def gauss_taps(sigma, radius=None):
    r = int(np.ceil(3 * sigma - 1e-9)) if radius is None else radius
    k = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-0.5 * (k / sigma) ** 2)
    return w / w.sum()


def per_channel(f, x):
    if x.ndim == 2:
        return f(x)
    return np.stack([f(x[..., c]) for c in range(x.shape[2])], axis=-1)


def reference(name, a, x, mode, cval):
    """float64 result of stage `name` with arguments `a` (a dict of texts) on x."""
    xf = x.astype(np.float64)

    def sep(row, col):
        def f(c):
            y = ndi.convolve1d(c, row, axis=1, mode=mode, cval=cval)
            return ndi.convolve1d(y, col, axis=0, mode=mode, cval=cval)
        return per_channel(f, xf)

    def g(s):
        return sep(gauss_taps(s), gauss_taps(s))

    def taps(text):
        return [float(v) for v in text.split(",")]

    if name == "gaussian":
        t = gauss_taps(float(a["sigma"]), int(a["radius"]) if "radius" in a else None)
        return sep(t, t)
    if name == "uniform":
        return per_channel(lambda c: ndi.uniform_filter(c, int(a["size"]), mode=mode, cval=cval),
                           xf)
    if name == "correlate1d":
        return per_channel(lambda c: ndi.correlate1d(c, taps(a["taps"]), axis=int(a["axis"]),
                                                     mode=mode, cval=cval), xf)
    if name == "separable":
        return sep(taps(a["row"]), taps(a["col"]))
    if name == "convolve":
        k = {"laplace": [[0, 1, 0], [1, -4, 1], [0, 1, 0]],
             "sobel-x": [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]}[a["kernel"]]
        return per_channel(lambda c: ndi.convolve(c, np.array(k, float), mode=mode, cval=cval),
                           xf)
    if name == "gradient-magnitude":
        # The y derivative smooths along x first: sobel(c, 0) but under a constant border other
        # than 0, where it differs on the edge rows and columns (the README says so).
        def smoothed_first(c):
            s = ndi.correlate1d(c, [1, 2, 1], axis=1, mode=mode, cval=cval)
            return ndi.correlate1d(s, [-1, 0, 1], axis=0, mode=mode, cval=cval)
        return per_channel(lambda c: np.hypot(ndi.sobel(c, 1, mode=mode, cval=cval),
                                              smoothed_first(c)), xf)
    if name == "dog":
        return g(float(a["sigma1"])) - g(float(a["sigma2"]))
    if name == "unsharp":
        return xf + float(a["amount"]) * (xf - g(float(a["sigma"])))
    if name == "subtract-background":
        return xf - g(float(a["sigma"]))
    if name == "scale":
        return xf * float(a["mul"]) + float(a["add"])
    if name == "abs":
        return np.abs(xf)
    if name == "clamp":
        return np.clip(xf, float(a["min"]), float(a["max"]))
    if name == "threshold":
        return (xf > float(a["value"])).astype(np.float64)
    if name == "convert":
        info = np.iinfo(NP[a["type"]])
        return np.clip(np.rint(xf), info.min, info.max)
    raise AssertionError(name)


def text(name, args):
    return " ".join([name] + ["%s=%s" % kv for kv in args.items()])


STAGES = [
    ("gaussian", {"sigma": "1.5"}),
    ("gaussian", {"sigma": "2", "radius": "3"}),
    ("uniform", {"size": "5"}),
    ("correlate1d", {"taps": "1,-2,4", "axis": "0"}),
    ("correlate1d", {"taps": "1,-2,4", "axis": "1"}),
    ("separable", {"row": "1,2,1", "col": "-1,0,3,0,1"}),
    ("convolve", {"kernel": "laplace"}),
    ("convolve", {"kernel": "sobel-x"}),
    ("gradient-magnitude", {}),
    ("dog", {"sigma1": "1", "sigma2": "2.5"}),
    ("unsharp", {"sigma": "1", "amount": "0.7"}),
    ("subtract-background", {"sigma": "3"}),
    ("scale", {"mul": "-0.5", "add": "7"}),
    ("abs", {}),
    ("clamp", {"min": "40", "max": "120"}),
    ("threshold", {"value": "90"}),
    ("convert", {"type": "u8"}),
]


@pytest.mark.parametrize("i", range(len(STAGES)), ids=[text(*s) for s in STAGES])
def test_each_stage_against_scipy(i):
    name, args = STAGES[i]
    for k, (t, c) in enumerate((("f32", 1), ("u16", 3), ("i16", 2))):
        mode = BORDERS[(i + k) % 5]
        cval = 5.0 if mode == "constant" else 0.0
        x = image(31 + i, 23 + 2 * c, c, t, seed=i)
        if name == "abs":
            x = (x.astype(np.float64) - x.mean()).astype(np.float32)
        out = poisoned(x.shape, np.float32)
        got = ooc.pipeline(x, text(name, args), output=out, mode=mode, cval=cval,
                           band_rows=[1, 4, 7][k])
        assert got is out
        want = reference(name, args, x, mode, cval)
        scale = max(1.0, float(np.abs(want).max()), float(np.abs(x).max()))
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale,
                                   err_msg="%s on %s x%d, %s" % (text(name, args), t, c, mode))



def test_gradient_magnitude_under_a_constant_border():
    # As the README says: hypot(sobel(x, 1), the y derivative of x smoothed along x first), each
    # pass padding with cval; that is not hypot(sobel(x, 1), sobel(x, 0)) at the edges.
    x = image(29, 33, 1, "f32", seed=11)
    for cval in (7.0, -3.5):
        got = ooc.pipeline(x, "gradient-magnitude", mode="constant", cval=cval)
        want = reference("gradient-magnitude", {}, x, "constant", cval)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-4)
        xf = x.astype(np.float64)
        sobels = np.hypot(ndi.sobel(xf, 1, mode="constant", cval=cval),
                          ndi.sobel(xf, 0, mode="constant", cval=cval))
        assert np.abs(got - sobels).max() > 1, "the documented difference is gone: update README"


def random_stage(rng, current):
    """A random stage valid on samples of type `current`, and the type it makes."""
    choices = [
        ("gaussian", {"sigma": rng.choice(["0.8", "1.5", "2"])}),
        ("uniform", {"size": rng.choice(["3", "5"])}),
        ("correlate1d", {"taps": "1,-2,4", "axis": rng.choice("01")}),
        ("convolve", {"kernel": rng.choice(["laplace", "sobel-x"])}),
        ("gradient-magnitude", {}),
        ("dog", {"sigma1": "1", "sigma2": "2"}),
        ("unsharp", {"sigma": "1", "amount": "0.7"}),
        ("subtract-background", {"sigma": "2.5"}),
        ("scale", {"mul": "0.5", "add": "3"}),
        ("abs", {}),
        ("clamp", {"min": "10", "max": "150"}),
        ("threshold", {"value": "60"}),
        ("convert", {"type": rng.choice(["u8", "u16", "i16"])}),
    ]
    if current in ("u8", "u16"):
        choices.append(("equalize", {}))
    name, args = rng.choice(choices)
    return (name, args), {"convert": args.get("type"), "equalize": current}.get(name, "f32")


def stage_by_stage(x, stages, types, **kw):
    """The stages one by one, each output of its own type (float32 for the filters), then the
    fused pipeline's output type (the input's unless the last stage converts)."""
    cur = x
    for (name, args), t in zip(stages, types[1:]):
        cur = ooc.pipeline(cur, text(name, args), out_type=t, **kw)
    final = types[-1] if stages[-1][0] == "convert" else types[0]
    if types[-1] != final:
        cur = ooc.pipeline(cur, "convert type=" + final, **kw)
    return cur


def test_fused_equals_stage_by_stage():
    rng = random.Random(30)
    for case in range(24):
        t = rng.choice(["u8", "u16", "f32"])
        c = rng.choice([1, 1, 3])
        x = image(rng.randint(5, 40), rng.randint(3, 37), c, t, seed=case)
        stages, types = [], [t]
        for _ in range(rng.randint(2, 4)):
            s, o = random_stage(rng, types[-1])
            stages.append(s)
            types.append(o)
        pipeline = " ! ".join(text(*s) for s in stages)
        kw = dict(mode=rng.choice(BORDERS), cval=3)
        out = poisoned(x.shape, NP[types[-1] if stages[-1][0] == "convert" else t])
        fused = ooc.pipeline(x, pipeline, output=out, band_rows=rng.choice([1, 3, 8, 64]), **kw)
        want = stage_by_stage(x, stages, types, **kw)
        assert fused.dtype == want.dtype
        assert fused.tobytes() == want.tobytes(), "case %d: %s, %s" % (case, pipeline, kw)


def test_a_long_chain_on_every_border():
    x = image(45, 38, 1, "u16", seed=3)
    stages = [("gaussian", {"sigma": "1.5"}), ("unsharp", {"sigma": "1", "amount": "0.7"}),
              ("gradient-magnitude", {}), ("scale", {"mul": "0.5", "add": "3"}),
              ("clamp", {"min": "0", "max": "200"}), ("convert", {"type": "u8"})]
    types = ["u16", "f32", "f32", "f32", "f32", "f32", "u8"]
    pipeline = " ! ".join(text(*s) for s in stages)
    for mode in BORDERS:
        fused = ooc.pipeline(x, pipeline, mode=mode, cval=7, band_rows=6)
        assert fused.dtype == np.uint8
        want = stage_by_stage(x, stages, types, mode=mode, cval=7)
        assert fused.tobytes() == want.tobytes(), mode
        assert len(np.unique(fused)) > 10


def test_output_types():
    x = image(20, 17, 1, "u16")
    assert ooc.pipeline(x, "gaussian sigma=1").dtype == np.uint16  # the input's
    assert ooc.pipeline(x, "gaussian sigma=1 ! convert type=u8").dtype == np.uint8
    f64 = ooc.pipeline(x, "gaussian sigma=1", out_type=np.float64)
    assert f64.dtype == np.float64
    assert ooc.pipeline(x, "gaussian sigma=1", output="f64").tobytes() == f64.tobytes()
    out = poisoned(x.shape, np.float64)
    assert ooc.pipeline(x, "gaussian sigma=1", output=out) is out
    assert out.tobytes() == f64.tobytes()
    # precision="f64" keeps the intermediates in float64: closer to scipy than float32's.
    want = reference("dog", {"sigma1": "1", "sigma2": "2"}, x, "reflect", 0)
    hi = ooc.pipeline(x, "dog sigma1=1 sigma2=2", out_type="f64", precision="f64")
    np.testing.assert_allclose(hi, want, rtol=0, atol=1e-9 * float(np.abs(want).max()))
    with pytest.raises(ooc.Error, match="output is float64, out_type float32"):
        ooc.pipeline(x, "abs", output=out, out_type=np.float32)


def test_working_type_as_oocconv(tmp_path):
    """32-bit integers and f64 outputs are computed in f64, as oocconv computes them (issue 43)."""
    rng = np.random.default_rng(0)
    for dtype in (np.uint32, np.int32):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, int(info.max), (40, 37), dtype=np.int64).astype(dtype)
        src = tmp_path / "w.npy"
        np.save(src, x)
        want = np.clip(np.rint(ndi.gaussian_filter(x.astype(np.float64), 2, mode="reflect",
                                                   truncate=3)), info.min, info.max)
        got = ooc.pipeline(x, "gaussian sigma=2 method=direct")
        assert got.dtype == dtype
        assert np.abs(got.astype(np.float64) - want).max() <= 1
        ooc.run(str(src), str(tmp_path / "a.npy"), "gaussian sigma=2 method=direct")
        subprocess.run([tool("oocconv"), str(src), str(tmp_path / "b.npy"), "--sigma", "2",
                        "--method", "direct", "-q"], check=True)
        assert np.load(tmp_path / "a.npy").tobytes() == np.load(tmp_path / "b.npy").tobytes()
        assert np.load(tmp_path / "a.npy").tobytes() == got.tobytes()
    f = image(30, 21, 1, "f32")
    hi = ooc.pipeline(f, "gaussian sigma=1.5", out_type=np.float64)
    want = ndi.gaussian_filter(f.astype(np.float64), 1.5, mode="reflect", truncate=3)
    assert np.abs(hi - want).max() < 1e-12 * np.abs(want).max()
    # An equalize at the end writes the equalized type.
    assert ooc.pipeline(f, "gaussian sigma=1 ! convert type=u8 ! equalize").dtype == np.uint8


def test_arrays_strided_byte_swapped_memmaps_and_aliases(tmp_path):
    x = image(96, 80, 1, "f32", seed=5)
    pipe = "gaussian sigma=2 ! unsharp sigma=1 amount=0.5"
    for view in (x[::2, ::3], x[::-1], x.astype(">f4")):
        want = ooc.pipeline(np.ascontiguousarray(view, np.float32), pipe)
        assert ooc.pipeline(view, pipe, band_rows=5).tobytes() == want.tobytes()
    want = ooc.pipeline(x, pipe)
    # A memmap in and out, and an .npy path, within a limit well below the image.
    np.save(tmp_path / "in.npy", x)
    out = np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float32, x.shape)
    ooc.pipeline(str(tmp_path / "in.npy"), pipe, output=out, mem_limit="64K")
    assert np.asarray(out).tobytes() == want.tobytes()
    # output=input: copied first (a halo), or in place (pointwise stages); the copy that does not
    # fit mem_limit is refused, the array untouched.
    y = x.copy()
    assert ooc.pipeline(y, pipe, output=y) is y
    assert y.tobytes() == want.tobytes()
    y = x.copy()
    ooc.pipeline(y, "scale mul=-2 add=1 ! abs", output=y, mem_limit="64K")
    assert y.tobytes() == ooc.pipeline(x, "scale mul=-2 add=1 ! abs").tobytes()
    y = x.copy()
    with pytest.raises(ooc.Error, match="shares memory with the input.*mem_limit"):
        ooc.pipeline(y, pipe, output=y, mem_limit="32K")
    assert y.tobytes() == x.tobytes()


def test_equalize_two_passes_and_progress():
    x = image(53, 47, 2, "u8", seed=5) // 3 + 40
    calls = []
    got = ooc.pipeline(x, "equalize", output=poisoned(x.shape, np.uint8), band_rows=7,
                       progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (2 * 53, 2 * 53)  # both passes counted
    assert got.tobytes() == ooc.equalize(x).tobytes()
    cv2 = pytest.importorskip("cv2")
    want = np.stack([cv2.equalizeHist(np.ascontiguousarray(x[..., c])) for c in range(2)], -1)
    np.testing.assert_array_equal(got, want)
    # After a filter and a convert: the histogram of the converted image, recomputed in pass 2.
    g = ooc.pipeline(x, "gaussian sigma=1 ! convert type=u8")
    want = np.stack([cv2.equalizeHist(np.ascontiguousarray(g[..., c])) for c in range(2)], -1)
    got = ooc.pipeline(x, "gaussian sigma=1 ! convert type=u8 ! equalize", band_rows=5)
    np.testing.assert_array_equal(got, want)


def oocrun(*args):
    r = subprocess.run([tool("oocrun")] + [str(a) for a in args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_run_matches_oocrun(tmp_path):
    # A raw input with hints, and an .npy one through two passes; the stats of oocrun --stats.
    x = image(61, 45, 3, "u16", seed=9)
    raw = tmp_path / "in.raw"
    x.tofile(raw)
    pipe = "gaussian sigma=1.5 ! unsharp sigma=1 amount=0.7 ! gradient-magnitude ! convert type=u8"
    ours, theirs = tmp_path / "ours.raw", tmp_path / "theirs.raw"
    stats = ooc.run(raw, ours, pipe, width=45, type="u16", channels=3, mode="mirror",
                    band_rows=5, mem_limit="8M")
    cli = json.loads(oocrun(raw, theirs, pipe, "--width", 45, "--type", "u16", "--channels", 3,
                            "--border", "mirror", "--band-rows", 5, "--mem-limit", "8M",
                            "--stats", "json", "--no-progress"))
    assert ours.read_bytes() == theirs.read_bytes()
    assert ours.read_bytes() == ooc.pipeline(x, pipe, mode="mirror").tobytes()
    assert set(stats) == set(cli)
    for k in ("operation", "plan", "input"):
        assert stats[k] == cli[k], k
    assert stats["output"] == dict(cli["output"], path=str(ours))
    # One pipeline as separate words; two passes.
    y = (x[..., 0] // 16).astype(np.uint16)
    np.save(tmp_path / "in.npy", y)
    pipe = ["scale", "mul=0.5", "!", "convert", "type=u8", "!", "equalize"]
    calls = []
    stats = ooc.run(tmp_path / "in.npy", tmp_path / "ours.npy", pipe, mode="constant", cval=2,
                    progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (2 * 61, 2 * 61)  # both passes counted
    cli = json.loads(oocrun(tmp_path / "in.npy", tmp_path / "theirs.npy", " ".join(pipe),
                            "--border", "constant", "--border-value", 2, "--stats", "json",
                            "--no-progress"))
    assert (tmp_path / "ours.npy").read_bytes() == (tmp_path / "theirs.npy").read_bytes()
    assert len(stats["passes"]) == len(cli["passes"]) == 2
    assert stats["operation"] == cli["operation"] == "scale mul=0.5 ! convert type=u8 ! equalize"


BAD = [
    ("gausian sigma=2", ["stage 1", "gausian", "gaussian"]),
    ("gaussian sigma=2 ! scale mul=x", ["stage 2 (scale)", "mul"]),
    ("gaussian sgma=2", ["stage 1 (gaussian)", "sgma"]),
    ("gaussian", ["stage 1 (gaussian)", "sigma", "required"]),
    ("gaussian sigma=-1", ["stage 1 (gaussian)", "sigma", "above 0"]),
    ("equalize", ["stage 1 (equalize)", "f32", "convert"]),
    ("gaussian sigma=1 ! ! abs", ["stage 2", "empty"]),
    ("gaussian sigma=1 !", ["stage 2", "empty"]),
    ("uniform size=0", ["stage 1 (uniform)", "size"]),
    ("clamp min=5 max=1", ["stage 1 (clamp)", "min"]),
    ("convert type=u9", ["stage 1 (convert)", "type"]),
]


@pytest.mark.parametrize("pipeline,words", BAD, ids=[b[0] for b in BAD])
def test_bad_pipelines(tmp_path, pipeline, words):
    x = image(20, 20, 1, "f32")
    out = poisoned(x.shape, np.float32)
    with pytest.raises(ooc.Error) as e:
        ooc.pipeline(x, pipeline, output=out)
    assert e.value.kind == "usage" and e.value.exit_code == 2
    for w in words:
        assert w in str(e.value)
    assert out.tobytes() == poisoned(x.shape, np.float32).tobytes()  # untouched
    np.save(tmp_path / "in.npy", x)
    with pytest.raises(ooc.Error) as e:
        ooc.run(tmp_path / "in.npy", tmp_path / "out.npy", pipeline)
    for w in words:
        assert w in str(e.value)
    assert os.listdir(tmp_path) == ["in.npy"]  # no output, no temporary


def test_bad_arguments():
    x = image(8, 9, 1, "f32")
    for call, message in (
            (lambda: ooc.pipeline(x, 42), "pipeline must be a string"),
            (lambda: ooc.pipeline(x[0], "abs"), "2-D"),
            (lambda: ooc.pipeline(x, "abs", cval="x"), "cval must be a number"),
            (lambda: ooc.pipeline(x, "abs", precision="f16"), "precision takes auto, f32 or f64"),
            (lambda: ooc.pipeline(x, "abs", mode="bogus"), "mode must be one of"),
            (lambda: ooc.pipeline(x, "abs", out_type="float16"), "float16"),
            (lambda: ooc.pipeline(x, "abs", output=np.zeros((8, 8), np.float32)), "shape"),
            (lambda: ooc.pipeline(x, "abs", mem_limit=-1), "mem_limit")):
        with pytest.raises(ooc.Error, match=message):
            call()
    with pytest.raises(TypeError, match="sigma"):
        ooc.pipeline(x, "abs", sigma=2)


def test_stages_are_declared():
    decls = {d["name"]: d for d in ooc.stages()}
    assert set(decls) >= {"gaussian", "uniform", "correlate1d", "separable", "convolve",
                          "gradient-magnitude", "dog", "unsharp", "subtract-background", "scale",
                          "abs", "clamp", "threshold", "convert", "equalize"}
    params = {p["name"]: p for p in decls["gaussian"]["params"]}
    sigma, radius, method = params["sigma"], params["radius"], params["method"]
    # volumes, per axis, physical units; holes (--nodata)
    assert {"sigma-z", "radius-z", "sigmas", "sigma-um", "min-weight", "fill"} <= set(params)
    # One of sigma, sigmas and sigma-um is required (the stage says so when none is given).
    assert sigma["name"] == "sigma" and sigma["default"] == "sigmas or sigma-um"
    assert sigma["min"] == 0 and sigma["min_exclusive"] and sigma["max"] == (1 << 20) / 3
    assert radius["default"] == "auto" and radius["kind"] == "integer"
    assert method["name"] == "method" and method["default"] == "auto"
    assert decls["equalize"]["reduction"] and not decls["gaussian"]["reduction"]
    assert all(d["help"] and all(p["help"] for p in d["params"]) for d in decls.values())


def test_cuda_equals_cpu(needs_cuda):
    rng = random.Random(11)
    for case in range(8):
        t = rng.choice(["u8", "u16", "f32"])
        x = image(rng.randint(30, 300), rng.randint(20, 257), rng.choice([1, 3]), t, seed=case)
        stages, types = [], [t]
        for _ in range(rng.randint(1, 5)):
            s, o = random_stage(rng, types[-1])
            stages.append(s)
            types.append(o)
        pipeline = " ! ".join(text(*s) for s in stages)
        mode = rng.choice(BORDERS)
        cpu = ooc.pipeline(x, pipeline, mode=mode, device="cpu")
        gpu = ooc.pipeline(x, pipeline, mode=mode, device="cuda")
        assert cpu.tobytes() == gpu.tobytes(), "case %d: %s, %s" % (case, pipeline, mode)
