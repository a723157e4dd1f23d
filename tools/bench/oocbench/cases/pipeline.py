# Case `pipeline`: oocrun chains in one pass against separate commands and a libvips chain.
import os, re, shlex, subprocess
from ..common import have, med, rss, walls

# libvips doing `gaussian sigma=S1 ! unsharp sigma=S2 amount=A ! convert type=u8` as one lazy
# pipeline in one process: gaussblur (min_ampl exp(-4.5): radius 3 sigma, as ooc), the unsharp
# arithmetic with linear/subtract/add, round and cast. Borders differ (libvips copies edges).
VIPS_CHAIN_C = r"""
#include <stdlib.h>
#include <vips/vips.h>
int main(int argc, char **argv) {
  if (argc != 8 || VIPS_INIT(argv[0])) return 2;
  int w = atoi(argv[3]), h = atoi(argv[4]);
  double s1 = atof(argv[5]), s2 = atof(argv[6]), amount = atof(argv[7]);
  VipsImage *in, *g, *g2, *d, *s, *u, *r, *o;
  if (vips_rawload(argv[1], &in, w, h, 1, "format", VIPS_FORMAT_FLOAT, NULL) ||
      vips_gaussblur(in, &g, s1, "precision", VIPS_PRECISION_FLOAT, "min_ampl", 0.0111, NULL) ||
      vips_gaussblur(g, &g2, s2, "precision", VIPS_PRECISION_FLOAT, "min_ampl", 0.0111, NULL) ||
      vips_subtract(g, g2, &d, NULL) || vips_linear1(d, &s, amount, 0.0, NULL) ||
      vips_add(g, s, &u, NULL) || vips_rint(u, &r, NULL) ||
      vips_cast(r, &o, VIPS_FORMAT_UCHAR, NULL) || vips_rawsave(o, argv[2], NULL))
    vips_error_exit(NULL);
  return 0;
}
"""


def case_pipeline(b):
    run, conv, rows = b.exe("oocrun"), b.exe("oocconv"), []
    s1, s2, amount = 2.0, 1.0, 0.7
    chain = b.a.chain or f"gaussian sigma={s1:g} ! unsharp sigma={s2:g} amount={amount:g} ! convert type=u8"
    stages = [st.strip() for st in chain.split("!")]
    null = b.a.null
    vips_exe = None
    if not null and not b.a.chain and have("pkg-config") and \
            subprocess.run(["pkg-config", "--exists", "vips"]).returncode == 0:
        src_c = os.path.join(b.work, "vips_chain.c")
        open(src_c, "w").write(VIPS_CHAIN_C)
        vips_exe = os.path.join(b.work, "vips_chain")
        flags = b.capture(["pkg-config", "--cflags", "--libs", "vips"]).split()
        b.sh(["cc", "-O2", "-o", vips_exe, src_c] + flags)
    o = lambda n: "null:" if null else os.path.join(b.work, "pipe_out_" + re.sub(r"[^a-z0-9]+", "_", n) + ".raw")
    out = lambda n: None if null else o(n)
    for W, H in b.images([(16384, 16384)]):
        src = b.gen(f"pipe_f32_{W}x{H}.raw", W, H, "f32", "noise")
        if not b.a.cold:
            b.warm(src)
        nbytes = W * H * 4
        common = ["--width", str(W), "-q"]
        first = stages[0]
        sigma = re.search(r"sigma=([0-9.]+)", first)
        tools = {}
        for d, why in b.devices():
            if why:
                tools[f"oocrun {d} fused"] = dict(note=why)
                continue
            dev = ["--device", d, "--threads", str(b.a.threads)]
            tools[f"oocrun {d} fused"] = dict(cmd=[run, src, o("fused" + d), chain] + common + dev,
                                              out=out("fused" + d), sync=not null)
            if sigma and first.startswith("gaussian"):
                tools[f"oocconv {d} {first} alone"] = dict(
                    cmd=[conv, src, o("alone" + d), "--sigma", sigma.group(1)] + common + dev,
                    out=out("alone" + d), sync=not null, note="f32 output")
            if null:
                continue
            # The same stages as separate commands, each writing its f32 (or last type) file.
            steps, cur = [], src
            for i, st in enumerate(stages):
                nxt = o(f"step{i}{d}")
                last = i + 1 == len(stages)
                steps.append(shlex.join([run, cur, nxt, st, "--width", str(W), "-q", "--type",
                                         "f32" if i == 0 or not stages[i - 1].startswith("convert") else
                                         re.search(r"type=(\w+)", stages[i - 1]).group(1)] + dev +
                                        ([] if last else ["--out-type", "f32"])))
                cur = nxt
            tools[f"oocrun {d} stage by stage"] = dict(
                cmd=" && ".join(steps) + " && rm -f " + " ".join(shlex.quote(o(f"step{i}{d}"))
                                                                  for i in range(len(stages) - 1)),
                shell=True, out=cur, sync=True, note="intermediate files on the same disk")
        if not null:
            tools["cp"] = dict(cmd=["cp", src, o("cp")], out=o("cp"), sync=True)
        if vips_exe:
            tools["libvips chain (one process)"] = dict(
                cmd=[vips_exe, src, o("vips"), str(W), str(H), str(s1), str(s2), str(amount)],
                out=o("vips"), sync=True, env=dict(b.env, VIPS_CONCURRENCY=str(b.a.threads)),
                note="not checked: its borders and rounding differ")
        elif not null:
            tools["libvips chain (one process)"] = dict(note="libvips-dev (pkg-config vips) not "
                                                             "installed, or --chain given")
        res = b.measure(tools)
        base_name = "oocrun cpu fused" if "oocrun cpu fused" in res else next(iter(res), None)
        for n, spec in tools.items():
            chk = ""
            if n.endswith("stage by stage") and n in res:
                fused = o("fused" + n.split()[1])
                b.sh(["sh", "-c", spec["cmd"]])  # leave its output for the comparison
                b.sh([run, src, fused, chain] + common + ["--device", n.split()[1]])
                same = open(spec["out"], "rb").read() == open(fused, "rb").read()
                chk = "ok identical to fused" if same else "MISMATCH with fused"
            rows.append(b.row("pipeline", n, f"{chain} {W}x{H} f32{' to null:' if null else ''}"
                              f"{' cold' if b.a.cold else ''}", nbytes, walls(res.get(n, [])),
                              base_name if n != base_name and base_name else "",
                              med(res[base_name]) if base_name in res else None, rss(res.get(n)),
                              chk, spec.get("note", "")))
        b.rm_prefixed("pipe_out_")
    b.write("pipeline", rows, f"a pipeline {'to null:' if null else 'file to file (outputs in ' + b.work + ', each run through a sync)'}, "
            f"{'cold' if b.a.cold else 'page cache warm'}, median of {b.a.repeats}; ratio = the fused oocrun cpu's "
            f"time / this tool's (> 1: faster than it)")
