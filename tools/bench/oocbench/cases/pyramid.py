# Case `pyramid`: pyramidal TIFF output against level 0 alone, libvips and GDAL.
import math, os, re, statistics
from ..common import BYTES, VIPS_FMT, have, med, rss, walls

ENVI_TYPE = {"u8": 1, "i16": 2, "i32": 3, "f32": 4, "f64": 5, "u16": 12, "u32": 13}


def case_pyramid(b):
    conv, rows = b.exe("oocconv"), []
    for W, H in b.images([(16384, 16384)]):
        # The levels libvips and GDAL make with 512 tiles (down to one tile): 5 for 16384^2.
        levels = max(0, int(math.log2(min(W, H) / 512)))
        t = (b.strs("types", "u16"))[0]
        nbytes = W * H * BYTES[t]
        src = b.gen("pyr_in.raw", W, H, t, "gradient")
        out = lambda n: os.path.join(b.work, n)
        # Every tool runs under /usr/bin/time: its CPU seconds (user + sys) go in the note, a
        # figure that other processes on a small shared machine disturb less than the wall time.
        timer = ["/usr/bin/time", "-f", "cpu %U %S"] if os.path.exists("/usr/bin/time") else []
        common = [*timer, conv, src, None, "--width", str(W), "--type", t, "--radius", "2", "--tile", "512",
                  "-q"]
        def ooc(o, codec, *extra):
            cmd = list(common)
            cmd[len(timer) + 2] = o
            return dict(cmd=cmd + ["--compress", codec, *extra], out=o, sync=True)
        tools = {"oocconv level 0 only": ooc(out("pyr_flat.tif"), "deflate"),
                 "oocconv --pyramid (SubIFDs)": ooc(out("pyr_subifd.tif"), "deflate", "--levels", str(levels)),
                 "oocconv --cog": ooc(out("pyr_cog.tif"), "deflate", "--cog", "--levels", str(levels)),
                 "oocconv level 0 only zstd": ooc(out("pyr_flatz.tif"), "zstd"),
                 "oocconv --pyramid (SubIFDs) zstd": ooc(out("pyr_subifdz.tif"), "zstd", "--levels", str(levels))}
        if have("vips"):
            v = out("pyr_in.v")
            if not os.path.exists(v) or os.path.getsize(v) < nbytes:  # made for another size
                b.sh(["vips", "rawload", src, v, str(W), str(H), "1", "--format", VIPS_FMT[t]])
            tools["vips tiffsave --pyramid --subifd"] = dict(
                cmd=[*timer, "vips", "tiffsave", v, out("pyr_vips.tif"), "--tile", "--tile-width", "512",
                     "--tile-height", "512", "--pyramid", "--subifd", "--compression", "deflate",
                     "--predictor", "horizontal"],
                out=out("pyr_vips.tif"), sync=True, note="no filter; from its own .v file")
        else:
            tools["vips tiffsave --pyramid --subifd"] = dict(note="libvips-tools not installed")
        if have("gdal_translate"):
            with open(src[:-4] + ".hdr", "w") as f:  # ENVI header: GDAL reads the raw file as it is
                f.write(f"ENVI\nsamples = {W}\nlines = {H}\nbands = 1\nheader offset = 0\n"
                        f"file type = ENVI Standard\ndata type = {ENVI_TYPE[t]}\ninterleave = bsq\n"
                        f"byte order = 0\n")
            tools["gdal_translate -of COG"] = dict(
                cmd=[*timer, "gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "BLOCKSIZE=512",
                     "-co", "PREDICTOR=YES", "-co", "RESAMPLING=AVERAGE", "-co", f"NUM_THREADS={b.a.threads}",
                     src, out("pyr_gdal.tif")],
                out=out("pyr_gdal.tif"), sync=True, note="no filter; raw input through an ENVI header")
        else:
            tools["gdal_translate -of COG"] = dict(note="gdal-bin not installed")
        b.warm(src)
        res = b.measure(tools)
        facts = {}
        for n, spec in tools.items():
            cpu = [sum(map(float, m.group(1, 2))) for x in res.get(n, [])
                   for m in [re.search(r"cpu ([0-9.]+) ([0-9.]+)", x.err)] if m]
            o = spec.get("out")
            if cpu:
                facts[n] = f"CPU {statistics.median(cpu):.2f} s"
            if o and os.path.exists(o):
                facts[n] = ", ".join(x for x in (facts.get(n), f"{os.path.getsize(o) / 1e6:.1f} MB") if x)
                try:
                    import tifffile
                    with tifffile.TiffFile(o) as tf:
                        facts[n] += f", {len(tf.series[0].levels)} levels"
                except Exception:  # noqa: BLE001 - a note only
                    pass
        check = ""
        flat, pyr = out("pyr_flat.tif"), out("pyr_subifd.tif")
        if os.path.exists(flat) and os.path.exists(pyr):
            try:
                import tifffile
                import numpy as np
                same = np.array_equal(tifffile.imread(flat), tifffile.imread(pyr, series=0, level=0))
                check = "level 0 = flat output" if same else "LEVEL 0 DIFFERS from the flat output"
            except Exception as e:  # noqa: BLE001
                check = f"not compared: {e}"
        for n, spec in tools.items():
            flat = "oocconv level 0 only" + (" zstd" if n.endswith("zstd") else "")
            base = flat if n != flat and n in res else ""
            note = "; ".join(x for x in (facts.get(n, ""), spec.get("note", "")) if x)
            codec = "zstd" if n.endswith("zstd") else "deflate"
            rows.append(b.row("pyramid", n, f"{t} {W}x{H} {codec} tile 512" +
                              (f" r2 levels {levels}" if n.startswith("oocconv --") else
                               " r2" if n.startswith("oocconv") else ""),
                              nbytes, walls(res.get(n, [])), base, med(res.get(base)), rss(res.get(n)),
                              check if n == "oocconv --pyramid (SubIFDs)" else "", note))
        b.rm_prefixed("pyr_", but="pyr_in")
    b.write("pyramid", rows, f"pyramidal TIFF in the same pass against level 0 alone and the peers' "
            f"pyramids (no filter for the peers); page cache warm, median of {b.a.repeats}; ratio = "
            f"level 0 alone's time / this")
