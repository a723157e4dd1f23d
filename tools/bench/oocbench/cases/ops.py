# Case `ops`: 2-D kernels and equalization against libvips and OpenCV. Its kernel generator and
# OpenCV filter2D peer serve the fft case too.
import os, re, sys
from ..common import BYTES, NP_DT, VIPS_FMT, compare, have, med, python_has, rss, walls

OPS_PY = """import sys, numpy as np
t = sys.argv[1]
rng = np.random.default_rng(1)
for k in map(int, sys.argv[2].split(",")):
    m = rng.uniform(-1, 1, (k, k)); m /= np.abs(m).sum()
    np.savetxt(f"{t}/k{k}.txt", m)
    with open(f"{t}/k{k}.mat", "w") as f:  # libvips matrix: width height scale offset, rows
        f.write(f"{k} {k} 1 0\\n" + "\\n".join(" ".join(repr(v) for v in r) for r in m) + "\\n")
    np.save(f"{t}/k{k}.npy", m)
"""
CV_FILTER = """import sys, numpy as np, cv2
src, dst, w, h, dt, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
a = np.fromfile(src, dt).reshape(h, w)
cv2.filter2D(a, -1, np.load(k)[::-1, ::-1].astype(np.float32), borderType=cv2.BORDER_REFLECT).tofile(dst)
"""
CV_EQ = """import sys, numpy as np, cv2
w, h = int(sys.argv[3]), int(sys.argv[4])
cv2.equalizeHist(np.fromfile(sys.argv[1], np.uint8).reshape(h, w)).tofile(sys.argv[2])
"""


def case_ops(b):
    conv, eq, rows = b.exe("oocconv"), b.exe("ooceq"), []
    ks = b.ints("kernels", "3,7,15,31")
    vips, cv = have("vips"), python_has("cv2")
    for name, text in (("ops_kernels.py", OPS_PY), ("cv_filter.py", CV_FILTER), ("cv_eq.py", CV_EQ)):
        open(os.path.join(b.work, name), "w").write(text)
    b.sh([sys.executable, os.path.join(b.work, "ops_kernels.py"), b.work, ",".join(map(str, ks))])
    o = lambda n: os.path.join(b.work, "ops_out_" + re.sub(r"[^a-z0-9]+", "_", n) + ".raw")
    for W, H in b.images([(8192, 8192)]):
        for ci, t in enumerate(b.strs("types", "f32,u8")):
            src = b.gen(f"ops_{t}_{W}x{H}.raw", W, H, t, "noise" if t == "f32" else "gaussian-spots")
            v = src[:-4] + ".v"
            if vips:
                b.sh(["vips", "rawload", src, v, str(W), str(H), "1", "--format", VIPS_FMT[t]])
            b.warm(src)
            nbytes = W * H * BYTES[t]
            for ki, k in enumerate(ks):
                kern = os.path.join(b.work, f"k{k}")
                tools = {f"oocconv {d}": (dict(cmd=[conv, src, o(d), "--width", str(W), "--type", t, "--kernel",
                                                    kern + ".txt", "--device", d, "-q"], sync=True, out=o(d))
                                          if not why else dict(note=why)) for d, why in b.devices()}
                tools["vips conv"] = (dict(cmd=["vips", "conv", v, o("vips") + ".v", kern + ".mat", "--precision",
                                                "float"], sync=True, out=o("vips") + ".v", note="not checked: its border")
                                      if vips else dict(note="libvips-tools not installed"))
                tools["opencv filter2D"] = (dict(cmd=[sys.executable, os.path.join(b.work, "cv_filter.py"), src,
                                                      o("cv"), str(W), str(H), NP_DT[t], kern + ".npy"], sync=True,
                                                 out=o("cv"), note="whole process; BORDER_REFLECT")
                                            if cv else dict(note="python3-opencv not installed"))
                tools["cp"] = dict(cmd=["cp", src, o("cp")], sync=True, out=o("cp"))
                res = b.measure(tools, offset=ci + ki)
                for n, spec in tools.items():
                    chk = ""
                    if n in res and n not in ("oocconv cpu", "cp", "vips conv") and "oocconv cpu" in res:
                        chk = compare(b, o("cpu"), spec["out"], W, t, tolerance=1 if t == "u8" else 1e-4)
                    rows.append(b.row("ops", n, f"{t} K{k} {W}x{H}", nbytes, walls(res.get(n, [])),
                                      "" if n == "cp" else "cp", med(res["cp"]), rss(res.get(n)), chk,
                                      spec.get("note", "")))
                b.rm_prefixed("ops_out_")
            b.rm(src, v)
        # Equalization of an u8 image.
        src = b.gen(f"ops_eq_{W}x{H}.raw", W, H, "u8", "gaussian-spots")
        v = src[:-4] + ".v"
        if vips:
            b.sh(["vips", "rawload", src, v, str(W), str(H), "1", "--format", "uchar"])
        b.warm(src)
        tools = {f"ooceq {d}": (dict(cmd=[eq, src, o("eq" + d), "--width", str(W), "--device", d, "-q"], sync=True,
                                     out=o("eq" + d)) if not why else dict(note=why)) for d, why in b.devices()}
        tools["vips hist_equal"] = (dict(cmd=["vips", "hist_equal", v, o("veq") + ".v"], sync=True, out=o("veq") + ".v")
                                    if vips else dict(note="libvips-tools not installed"))
        tools["opencv equalizeHist"] = (dict(cmd=[sys.executable, os.path.join(b.work, "cv_eq.py"), src, o("cveq"),
                                                  str(W), str(H)], sync=True, out=o("cveq"), note="whole process")
                                        if cv else dict(note="python3-opencv not installed"))
        tools["cp"] = dict(cmd=["cp", src, o("cp")], sync=True, out=o("cp"))
        tools["cat > /dev/null"] = dict(cmd=["cat", src])
        res = b.measure(tools)
        for n, spec in tools.items():
            chk = ""
            if n.startswith("ooceq") and n in res and "opencv equalizeHist" in res:
                same = open(spec["out"], "rb").read() == open(o("cveq"), "rb").read()
                chk = "ok equals cv2.equalizeHist" if same else "MISMATCH with cv2.equalizeHist"
            rows.append(b.row("ops", n, f"u8 equalize {W}x{H}", W * H, walls(res.get(n, [])),
                              "" if n == "cp" else "cp", med(res["cp"]), rss(res.get(n)), chk, spec.get("note", "")))
        b.rm_prefixed("ops_out_")
        b.rm(src, v)
    b.write("ops", rows, f"random K x K kernels (rank > 1) and equalization, file to file, every run through a "
            f"sync, median of {b.a.repeats}; peers' outputs compared with oocconv cpu's")
