# Case `write`: oocconv's write path against cp of the same file.
import itertools, os
from ..common import BYTES, med, rss, walls


def case_write(b):
    conv, rows = b.exe("oocconv"), []
    for (W, H), t in itertools.product(b.images([(16384, 16384)]), b.strs("types", "f32")):
        src = b.gen(f"write_{W}x{H}_{t}.raw", W, H, t)
        o = os.path.join(b.work, "write_out.raw")
        if not b.a.cold:
            b.warm(src)
        nbytes = W * H * BYTES[t]
        for r in b.ints("radii", "1,3"):
            for s in (False, True):
                tools = {"cp": dict(cmd=["cp", src, o], out=o, sync=s)}
                for d, why in b.devices():
                    tools[f"oocconv {d}"] = (dict(cmd=[conv, src, o, "--width", str(W), "--radius", str(r),
                                                       "--device", d, "-q"], out=o, sync=s) if not why
                                             else dict(note=why))
                if b.a.old:
                    tools["oocconv old"] = dict(cmd=[os.path.abspath(b.a.old), src, o, "--width", str(W), "--radius",
                                                     str(r), "-q"], out=o, sync=s, note=f"--old {b.a.old}")
                res = b.measure(tools)
                b.rm(o)
                p = f"{t} r{r} {W}x{H}{' cold' if b.a.cold else ''} {'sync' if s else 'no sync'}"
                for n, spec in tools.items():
                    rows.append(b.row("write", n, p, nbytes, walls(res.get(n, [])), "" if n == "cp" else "cp",
                                      med(res["cp"]), rss(res.get(n)), note=spec.get("note", "")))
        b.rm(src)
    b.write("write", rows, f"file to file against cp of the same file, with and without a trailing sync, "
            f"{'cold (page cache dropped before each run)' if b.a.cold else 'input in the page cache'}, "
            f"median of {b.a.repeats}")
