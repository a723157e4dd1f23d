# Case `startup`: --device auto against both fixed backends, with oocinfo's estimate.
from ..common import BYTES, med, rss, stats_json, stats_note, walls


def case_startup(b):
    conv, info, rows = b.exe("oocconv"), b.exe("oocinfo"), []
    for W, H in b.images([(64, 64), (16384, 16384)]):
        for t in b.strs("types", "f32"):
            src = b.gen(f"startup_{t}_{W}x{H}.raw", W, H, t)
            b.warm(src)
            for r in b.ints("radii", "3,16"):
                est = [l.strip() for l in b.capture([info, src, "--width", str(W), "--type", t, "--radius", str(r)])
                       .splitlines() if "backend:" in l]
                tools = {}
                for d, why in b.devices(show_cuda=True) + ([("auto", None)] if b.a.devices is None else []):
                    cmd = [conv, src, "null:", "--width", str(W), "--type", t, "--radius", str(r), "--device", d,
                           "--stats", "json"]
                    tools[f"oocconv {d}"] = dict(cmd=cmd) if not why else dict(note=why)
                    if d == "cuda" and not why:  # the GPU alone, without the CPU's bands while CUDA starts
                        tools["oocconv cuda, cpu-start off"] = dict(cmd=cmd + ["--cpu-start", "off"])
                res = b.measure(tools)
                fixed = {n: med(ts) for n, ts in res.items() if n in ("oocconv cpu", "oocconv cuda")}
                best = min(fixed, key=fixed.get) if fixed else ""
                for n, spec in tools.items():
                    note = spec.get("note", "")
                    if n in res:
                        js = [j for j in (stats_json(x.out) for x in res[n]) if j]
                        if js:
                            j = js[-1]
                            note = f"{j['backend']}; {j.get('backend_choice', '')}; {stats_note(js)}"
                        if n == "oocconv auto" and est:
                            note += "; oocinfo: " + " ".join(est)
                    rows.append(b.row("startup", n, f"{t} r{r} {W}x{H} null:", W * H * BYTES[t], walls(res.get(n, [])),
                                      f"best backend ({best})" if best and n != best else "", fixed.get(best),
                                      rss(res.get(n)), note=note))
            b.rm(src)
    b.write("startup", rows, f"--device auto against both backends, page cache to null:, wall seconds, "
            f"median of {b.a.repeats}; ratio = the best fixed backend's time / this")
