# Case `tiff`: raw against the TIFF layouts, oocconv and oocgen beside vips tiffsave.
import os
from ..common import BYTES, VIPS_FMT, compare, have, med, rss, walls

LAYOUTS = [("raw", []), ("tiff-strips", []), ("tiff-tiles512", ["--tile", "512"]),
           ("tiff-lzw", ["--compress", "lzw"]), ("tiff-deflate", ["--compress", "deflate"]),
           ("tiff-zstd", ["--compress", "zstd"]), ("tiff-zstd-tiles512", ["--compress", "zstd", "--tile", "512"])]


def case_tiff(b):
    conv, rows = b.exe("oocconv"), []
    r = b.ints("radii", "8")[0]
    for W, H in b.images([(16384, 8192)]):
        for t in b.strs("types", "u16"):
            nbytes, tools, ins = W * H * BYTES[t], {}, {}
            for name, opts in LAYOUTS:
                ext = "raw" if name == "raw" else "tif"
                ins[name] = b.gen(f"tiff_in.{name}.{ext}", W, H, t, "gradient", opts)
                for d, why in b.devices():
                    o = os.path.join(b.work, f"tiff_out.{d}.{name}.{ext}")
                    tools[f"oocconv {d} {name}"] = (dict(cmd=[conv, ins[name], o, "--width", str(W), "--type", t,
                                                              "--radius", str(r), "--device", d, "-q", *opts],
                                                         out=o, sync=True) if not why else dict(note=why))
                o = os.path.join(b.work, f"tiff_gen.{name}.{ext}")
                tools[f"oocgen {name}"] = dict(cmd=[b.exe("oocgen"), o, "--width", str(W), "--height", str(H),
                                                    "--type", t, "--pattern", "gradient", "-q", *opts], out=o, sync=True)
            if have("vips"):
                v = os.path.join(b.work, "tiff_in.v")
                b.sh(["vips", "rawload", ins["raw"], v, str(W), str(H), "1", "--format", VIPS_FMT[t]])
                for c in ("none", "lzw", "deflate", "zstd"):
                    o = os.path.join(b.work, f"tiff_vips.{c}.tif")
                    tools[f"vips tiffsave {c}"] = dict(cmd=["vips", "tiffsave", v, o, "--compression", c], out=o,
                                                       sync=True, note="from its own .v file")
            else:
                tools["vips tiffsave"] = dict(note="libvips-tools not installed")
            b.warm(*ins.values())
            res = b.measure(tools)
            vips_of = {"tiff-strips": "none", "tiff-lzw": "lzw", "tiff-deflate": "deflate", "tiff-zstd": "zstd"}
            for n, spec in tools.items():
                parts, base, check = n.split(), "", ""
                if n.startswith("oocconv") and n in res and parts[2] != "raw":
                    base = f"oocconv {parts[1]} raw"
                    raw_out = tools[base]["cmd"][2]
                    if os.path.exists(raw_out) and os.path.exists(spec["out"]):
                        check = compare(b, raw_out, spec["out"], W, t, tolerance=0)
                elif n.startswith("oocgen") and parts[1] in vips_of and f"vips tiffsave {vips_of[parts[1]]}" in res:
                    base = f"vips tiffsave {vips_of[parts[1]]}"
                elif n.startswith("oocgen") and parts[1] != "raw":
                    base = "oocgen raw"
                rows.append(b.row("tiff", n, f"{t} r{r} {W}x{H}" if n.startswith("oocconv") else f"{t} {W}x{H}",
                                  nbytes, walls(res.get(n, [])), base, med(res.get(base)), rss(res.get(n)), check,
                                  spec.get("note", "")))
            b.rm_prefixed("tiff_")
    b.write("tiff", rows, f"the same image raw and in TIFF layouts, written back in the same layout; page cache "
            f"warm, outputs synced, median of {b.a.repeats}; oocconv ratio = raw's time / this, TIFF output "
            f"compared with the raw output")
