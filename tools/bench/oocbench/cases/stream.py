# Case `stream` (GPU): a large image from the page cache to null: on both backends.
from ..common import BYTES, med, rss, stats_json, stats_note, walls


def case_stream(b):
    b.need_gpu("stream")
    conv, rows = b.exe("oocconv"), []
    for W, H in b.images([(65536, 131072)]):
        for t in b.strs("types", "f32"):
            src = b.gen(f"stream_{t}_{W}x{H}.raw", W, H, t)
            nbytes = W * H * BYTES[t]
            b.warm(src)
            for r in b.ints("radii", "3,16"):
                base = [conv, src, "null:", "--width", str(W), "--type", t, "--radius", str(r), "--stats", "json"]
                tools = {"cat": dict(cmd=["cat", src]),
                         "oocconv cuda": dict(cmd=base + ["--device", "cuda"]),
                         "oocconv cuda, cpu-start off": dict(cmd=base + ["--device", "cuda", "--cpu-start", "off"]),
                         "oocconv cpu": dict(cmd=base + ["--device", "cpu"])}
                res = b.measure(tools)
                for n in tools:
                    note = ""
                    js = [j for j in (stats_json(x.out) for x in res[n]) if j]
                    if js:
                        g = js[-1].get("gpu_seconds")
                        note = stats_note(js)
                        if g:
                            note += (f"; summed over slots: pack {g['pack']:.2f} s, H2D {g['h2d']:.2f} s, kernels "
                                     f"{g['kernels']:.2f} s, D2H {g['d2h']:.2f} s")
                    rows.append(b.row("stream", n, f"{t} r{r} {W}x{H}{' cold' if b.a.cold else ''} null:", nbytes,
                                      walls(res[n]),
                                      "" if n == "cat" else "cat", med(res["cat"]), rss(res[n]), note=note))
            b.rm(src)
    b.write("stream", rows, f"a large image {'from the disk (page cache dropped before each run)' if b.a.cold else 'from the page cache'} "
            f"to null:, wall seconds, median of {b.a.repeats}; GB/s = input bytes / wall; ratio = cat's time / this")
