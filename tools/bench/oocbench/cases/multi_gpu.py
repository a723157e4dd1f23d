# Case `multi-gpu` (GPU): one GPU against several and MPI ranks against one.
import os, shlex, statistics, subprocess, sys
from ..common import have, med, rss, stats_json, walls

MULTI_JOBS = {
    # name: (tool, arguments after IN OUT, kind) -- the kinds the issue asks about.
    "separable": ("oocconv", ["--radius", "16"], "copy-bound"),
    "2-D 31x31": ("oocconv", ["--kernel", "{k31}"], "2-D kernel"),
    "pipeline 6 stages": ("oocrun", ["gaussian sigma=2 ! dog sigma1=1 sigma2=2 ! gradient-magnitude ! scale mul=4 "
                                     "! clamp min=0 max=255 ! convert type=u8"], "pipeline"),
    "median 7x7": ("oocrun", ["median size=7"], "kernel-bound"),
}


def case_multi_gpu(b):
    b.need_gpu("multi-gpu")
    a, conv, rows = b.a, b.exe("oocconv"), []
    n = b.gpus
    all_ = ",".join(map(str, range(n)))
    configs = a.configs.split(";") if a.configs else (
        ["--devices 0"] + ([f"--devices {all_}", "--devices all"] if n > 1 else []) + ["--device cpu"])
    r = b.ints("radii", "16")[0]
    jobs = b.strs("jobs", ",".join(MULTI_JOBS)) if getattr(a, "jobs", None) else list(MULTI_JOBS)
    k31 = os.path.join(b.work, "multi_k31.npy")
    b.sh([sys.executable, "-c", "import numpy as np, sys; g = np.random.default_rng(1); "
          "k = g.uniform(-1, 1, (31, 31)); k[15, 15] += 2; np.save(sys.argv[1], k)", k31])
    for W, H in b.images([(65536, 32768)]):
        src = b.gen(f"multi_{W}x{H}.raw", W, H, "f32")
        nbytes = W * H * 4
        b.warm(src)
        for job in jobs:
            tool, args, kind = MULTI_JOBS[job]
            args = [x.format(k31=k31) for x in args]
            if job == "separable":
                args = ["--radius", str(r)]
            tools = {}
            for c in configs:
                if kind == "kernel-bound" and "cpu" in c:
                    continue  # minutes on the CPU: the question is one GPU against several
                words = shlex.split(c)  # "--devices 0" names GPUs: the backend is still cuda
                dev = words if "--device" in words else ["--device", "cuda", *words]
                tools[f"{tool} {' '.join(dev)}"] = dict(cmd=[b.exe(tool), src, "null:", *args, "--width", str(W),
                                                            *dev, "--stats", "json", "-q"],
                                                       env=dict(b.env, OOC_CPU_START="auto"))
            res = b.measure(tools)
            first = med(res[next(iter(tools))])
            for i, (name, ts) in enumerate(res.items()):
                js = [j for j in (stats_json(t.out) for t in ts) if j]
                note = (f"streaming {statistics.median(j['throughput']['streaming_input_mb_per_s'] for j in js) / 1e3:.2f} "
                        f"GB/s; setup {statistics.median(j['seconds']['setup'] for j in js):.2f} s; "
                        f"{js[-1]['plan']['slots']} slots x {js[-1]['plan']['band_rows']} rows; "
                        f"CPU bands {js[-1].get('cpu_bands', 0)}; {js[-1]['backend']}"
                        if js else "")
                rows.append(b.row("multi-gpu", name, f"{job} ({kind}) f32 {W}x{H} page cache -> null:", nbytes, walls(ts),
                                  "" if i == 0 else next(iter(tools)), first, rss(ts), note=note + (
                                      f"; {n} GPU(s) here" if i == 0 else "")))
        if a.synth_gib < 0:  # the rank comparison is its own question: --synth-gib -1 skips it
            b.rm(src)
            continue
        # MPI: one rank per GPU against one rank, --bind-to none (mpirun binds a rank to a core otherwise).
        if not have("mpirun"):
            rows.append(b.row("multi-gpu", "mpirun oocconv", "", note="mpirun not installed"))
        elif n < 2:
            rows.append(b.row("multi-gpu", "mpirun oocconv", "", note="one GPU: no rank comparison"))
        else:
            env = dict(b.env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", NCCL_NVLS_ENABLE="0",
                       OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none")
            mpi = lambda k, *args: dict(cmd=["mpirun", "--bind-to", "none", "-np", str(k), conv, *args, "--width", str(W),
                                             "--radius", str(r), "--stats", "json", "-q"], env=env)
            outs = {k: os.path.join(b.work, f"multi_out{k}.raw") for k in (1, n)}
            groups = []
            if a.synth_gib:
                hs = int(a.synth_gib * 2**30 / (W * 4))
                groups.append((f"synth:noise f32 r{r} {W}x{hs} -> null:", W * hs * 4, None,
                               {f"mpirun -np {k}": mpi(k, "synth:noise", "null:", "--height", str(hs)) for k in (1, n)}))
            groups.append((f"f32 r{r} {W}x{H} page cache -> null:", nbytes, "cat",
                           dict({"cat": dict(cmd=["cat", src])}, **{f"mpirun -np {k}": mpi(k, src, "null:") for k in (1, n)})))
            groups.append((f"f32 r{r} {W}x{H} file -> file", nbytes, "cp + sync",
                           dict({"cp + sync": dict(cmd=["cp", src, outs[1] + ".cp"], out=outs[1] + ".cp", sync=True)},
                                **{f"mpirun -np {k}": dict(mpi(k, src, outs[k]), out=outs[k], sync=True) for k in (1, n)})))
            for params, nb, base, tl in groups:
                if not a.cold:
                    b.warm(src)
                res = b.measure(tl)
                chk = ""
                if base == "cp + sync":
                    same = subprocess.run(["cmp", outs[1], outs[n]]).returncode == 0
                    chk = f"cmp 1 rank vs {n} ranks: {'identical' if same else 'MISMATCH'}"
                for name, ts in res.items():
                    rows.append(b.row("multi-gpu", name, params, nb, walls(ts), base if base and name != base else "",
                                      med(res[base]) if base else None, rss(ts), chk if name.startswith("mpirun") else ""))
            b.rm(outs[1], outs[n], outs[1] + ".cp")
        b.rm(src)
    b.write("multi-gpu", rows, f"one GPU against several (--devices) and MPI ranks (one per GPU, --bind-to none), "
            f"median of {a.repeats}; ratio = the first configuration's (or the floor's) time / this")
