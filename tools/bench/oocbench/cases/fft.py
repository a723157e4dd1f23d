# Case `fft`: 2-D kernels by FFT against the direct sum, scipy.signal, OpenCV and CuPy.
import os, sys
from ..common import med, python_has, rss, walls
from ..cupy_peer import CUPY_PEERS_PY, cupy_rows
from .ops import CV_FILTER, OPS_PY

FFT_PEERS_PY = r"""
import sys, numpy as np, scipy.signal as sig
path, W, H, kfile, peer = sys.argv[1:6]
W, H = int(W), int(H)
x = np.fromfile(path, dtype=np.float32).reshape(H, W)
k = np.load(kfile).astype(np.float32)
r = k.shape[0] // 2
xp = np.pad(x, r, mode="symmetric")        # scipy.ndimage's 'reflect', as oocconv's default border
f = sig.fftconvolve if peer == "fftconvolve" else sig.oaconvolve
y = f(xp, k, mode="valid")
assert y.shape == x.shape and y.dtype == np.float32
"""


def case_fft(b):
    conv, rows = b.exe("oocconv"), []
    ks = b.ints("kernels", "31,63,129,255")
    sp, cv = python_has("scipy"), python_has("cv2")
    for name, text in (("ops_kernels.py", OPS_PY), ("cv_filter.py", CV_FILTER), ("fft_peers.py", FFT_PEERS_PY),
                       ("cupy_peers.py", CUPY_PEERS_PY)):
        open(os.path.join(b.work, name), "w").write(text)
    b.sh([sys.executable, os.path.join(b.work, "ops_kernels.py"), b.work, ",".join(map(str, ks))])
    for W, H in b.images([(8192, 8192)]):
        src = b.gen(f"fft_f32_{W}x{H}.raw", W, H, "f32", "noise")
        part_rows = max(H // 8, 1)
        part = b.gen(f"fft_part_f32_{W}x{part_rows}.raw", W, part_rows, "f32", "noise")
        b.warm(src, part)
        nbytes = W * H * 4
        o = os.path.join(b.work, "fft_out_cv.raw")
        for ki, k in enumerate(ks):
            kern = os.path.join(b.work, f"k{k}.npy")
            common = ["--kernel", kern, "--threads", str(b.a.threads), "--device", "cpu", "-q"]
            tools = {"oocconv cpu fft": dict(cmd=[conv, src, "null:", "--width", str(W)] + common +
                                              ["--method", "fft"]),
                     "oocconv cpu auto": dict(cmd=[conv, src, "null:", "--width", str(W)] + common)}
            # The direct sum is K^2 multiply-adds a sample: an eighth of the image for large K.
            scale = 1 if k < 129 else H / part_rows
            direct = f"oocconv cpu direct" + ("" if scale == 1 else f" (1/{H // part_rows} of the image, scaled)")
            tools[direct] = dict(cmd=[conv, part if scale != 1 else src, "null:", "--width", str(W)] + common +
                                 ["--method", "direct"])
            if b.gpu and "cuda" in b.strs("devices", "cpu,cuda"):
                gcommon = [c if c != "cpu" else "cuda" for c in common] + ["--cpu-start", "off"]
                tools["oocconv cuda fft"] = dict(cmd=[conv, src, "null:", "--width", str(W)] + gcommon +
                                                 ["--method", "fft"])
                if k <= 129:  # 255^2 taps a sample would take minutes
                    tools["oocconv cuda direct"] = dict(cmd=[conv, src, "null:", "--width", str(W)] + gcommon +
                                                        ["--method", "direct"])
                if python_has("cupy"):
                    tools["cupyx fftconvolve"] = dict(
                        cmd=[sys.executable, os.path.join(b.work, "cupy_peers.py"), src, str(W), str(H), "float32",
                             "fft", kern], capture=True,
                        note="whole process (CUDA start, file read); border padded with cp.pad")
            for peer in ("fftconvolve", "oaconvolve"):
                tools[f"scipy.signal.{peer}"] = (
                    dict(cmd=[sys.executable, os.path.join(b.work, "fft_peers.py"), src, str(W), str(H), kern, peer],
                         note="whole process, in memory, border padded with np.pad first; 1 thread (scipy.fft)")
                    if sp else dict(note="python3-scipy not installed"))
            tools["opencv filter2D"] = (dict(cmd=[sys.executable, os.path.join(b.work, "cv_filter.py"), src, o,
                                                  str(W), str(H), "float32", kern], out=o,
                                             note="whole process, in memory, to /dev/shm; BORDER_REFLECT")
                                        if cv else dict(note="python3-opencv not installed"))
            res = b.measure(tools, offset=ki)
            cupy_rows(b, res, tools, "cupyx fftconvolve")
            base = med(res["oocconv cpu fft"]) if "oocconv cpu fft" in res else None
            for n, spec in tools.items():
                times = walls(res.get(n, []))
                if n == direct and scale != 1:
                    times = [scale * x for x in times]
                rows.append(b.row("fft", n, f"f32 K{k} {W}x{H} to null:", nbytes, times,
                                  "oocconv cpu fft" if base else "", base, rss(res.get(n)), "",
                                  spec.get("note", "")))
            b.rm(o)
        b.rm(src, part)
    b.write("fft", rows, f"random K x K kernels (rank > 1), f32, page cache to null: (peers in memory, process "
            f"start included), median of {b.a.repeats}; ratio = oocconv cpu --method fft's time / this row's "
            f"(below 1: slower than ooc's FFT); accuracy is tests/cli/test_fft_convolve.py's")
