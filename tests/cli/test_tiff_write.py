#!/usr/bin/env python3
"""TIFF outputs of oocconv and oocgen read back by tifffile and oocconv: round trips of every
type, channel count, codec and layout, strips, levels, BigTIFF, zeros, NaN, usage errors, and the
predictors (sections 3 and 6 of tiff_support.py).
Usage: test_tiff_write.py --bin-dir DIR [--keep] [-v] [unittest options]"""

import json
import os
import sys

import numpy as np

import cli_cases
from cli_cases import report
from tiff_support import (BIN, COMPRESS, NP, OOCCONV, OOCGEN, RT_SIZES, TYPES, TiffBase,
    check_written, exit_problem, expect_error, main, out_tif, p, random_image, raw_args, rng, run,
    tifffile, tifffile_read, write_raw)


class TiffWrite(TiffBase):
    # Numbered in the order they draw their data (cli_cases.py).

    def round_trips(self, only):
        """raw -> oocconv -> TIFF of one type, every channel count, codec and layout."""
        with cli_cases.cases(self):
            n = TYPES.index(only) * 60  # round trips of the types before
            for t in (only,):
                for c in (1, 2, 3, 4):
                    for compress in COMPRESS:
                        for tile in (0, 16, 64):
                            h, w = RT_SIZES[n % len(RT_SIZES)]
                            n += 1
                            img = random_image(t, h, w, c)
                            src = write_raw(img)
                            layout = f"tile {tile}" if tile else "strips"
                            name = f"round trip {t} x{c} {h}x{w} --compress {compress} {layout}"
                            cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t),
                                   "--compress", compress, "--band-rows", 1 + n % 9]
                            if tile:
                                cmd += ["--tile", tile]
                            rc, _, err = run(cmd)
                            problem = exit_problem(cmd, rc, err)
                            report(name, [problem] if problem else
                                   check_written(out_tif, img, t, compress=compress, tile=tile))

    def test_3b_multi_strip(self):
        with cli_cases.cases(self):
            # Several strips per image (strips are about 1 MiB): wide samples, many rows.
            for t, c, h, w in [("f64", 4, 301, 300), ("i32", 3, 611, 257), ("u16", 1, 2100, 263)]:
                for compress in ("none", "deflate", "packbits"):
                    img = random_image(t, h, w, c)
                    src = write_raw(img)
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t), "--compress", compress,
                           "--band-rows", 50]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    problems = [problem] if problem else check_written(out_tif, img, t, compress=compress)
                    if not problem:
                        with tifffile.TiffFile(out_tif) as tf:
                            strips = len(tf.pages[0].dataoffsets)
                        if strips < 2:
                            problems.append(f"expected several strips, got {strips}")
                        name_strips = f"{strips} strips"
                    else:
                        name_strips = "strips"
                    report(f"multi-strip {t} x{c} {h}x{w} --compress {compress} ({name_strips})", problems)

    def test_3c_compression_levels(self):
        with cli_cases.cases(self):
            # --level: readable, and the top level compresses a smooth image better than level 1.
            yy, xx = np.mgrid[0:300, 0:257]
            smooth = ((yy * 97 + xx * 31) % 4096 + rng.integers(0, 16, yy.shape)).astype("<u2")[..., None]
            src = write_raw(smooth)
            for compress, levels in (("deflate", (1, 6, 9)), ("zstd", (1, 3, 22))):
                sizes = {}
                for level in levels:
                    out = p(f"level_{compress}_{level}.tif")
                    cmd = [OOCCONV, src, out, "--taps", 1, "-q", *raw_args(smooth, "u16"), "--compress",
                           compress, "--level", level]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    report(f"--compress {compress} --level {level}",
                           [problem] if problem else check_written(out, smooth, "u16", compress=compress))
                    if not problem:
                        sizes[level] = os.path.getsize(out)
                if len(sizes) == len(levels):
                    lo, hi = sizes[levels[0]], sizes[levels[-1]]
                    report(f"--compress {compress}: --level {levels[-1]} ({hi} bytes) smaller than "
                           f"--level {levels[0]} ({lo} bytes)",
                           [] if hi < lo else [f"level {levels[-1]} gave {hi} bytes, level {levels[0]} {lo}"])

    def test_3d_bigtiff(self):
        with cli_cases.cases(self):
            # --bigtiff yes / no / auto.
            img = random_image("i16", 45, 77, 2)
            src = write_raw(img)
            for mode, want_big in (("yes", True), ("no", False), ("auto", False)):
                for extra, compress in (([], "none"), (["--tile", 32, "--compress", "zstd"], "zstd")):
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, "i16"), "--bigtiff", mode,
                           *extra]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    report(f"--bigtiff {mode} {' '.join(map(str, extra)) or 'strips'}",
                           [problem] if problem else check_written(out_tif, img, "i16", compress=compress,
                                                                   tile=32 if extra else 0, bigtiff=want_big))

    def test_3e_zero_images(self):
        with cli_cases.cases(self):
            # All-zero images (all-zero blocks may become holes in the file) and zero blocks among data.
            for t, c in (("u8", 1), ("f32", 3), ("u16", 4)):
                for tile in (0, 16):
                    for compress in ("none", "deflate"):
                        img = np.zeros((70, 90, c), NP[t])
                        if t == "u16":
                            img[33:40, 50:60] = 7  # one non-zero patch among zero blocks
                        src = write_raw(img)
                        cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t), "--compress",
                               compress, "--band-rows", 8] + (["--tile", tile] if tile else [])
                        rc, _, err = run(cmd)
                        problem = exit_problem(cmd, rc, err)
                        report(f"zero image {t} x{c} {'tile ' + str(tile) if tile else 'strips'} {compress}",
                               [problem] if problem else check_written(out_tif, img, t, compress=compress,
                                                                       tile=tile))

    def test_3f_nan_and_infinities(self):
        with cli_cases.cases(self):
            # NaN and infinities survive the copy (through TIFF both ways).
            for t in ("f32", "f64"):
                img = random_image(t, 29, 33, 2)
                img[3, 4, 0], img[5, 6, 1], img[7, 8, 0] = np.nan, np.inf, -np.inf
                for compress in ("none", "zstd"):
                    src = write_raw(img)
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t), "--compress", compress]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    report(f"NaN and infinities {t} {compress}",
                           [problem] if problem else check_written(out_tif, img, t, compress=compress))

    def test_3g_output_usage_errors(self):
        with cli_cases.cases(self):
            # Usage errors of the TIFF output options: exit 2, nothing written.
            img = random_image("u8", 20, 30, 1)
            src = write_raw(img)
            base = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, "u8")]
            for opts, keys in [(["--compress", "deflate", "--level", 10], ["level"]),
                               (["--compress", "deflate", "--level", 0], ["level"]),
                               (["--compress", "zstd", "--level", 23], ["level"]),
                               (["--compress", "lzw", "--level", 5], ["level"]),
                               (["--level", 5], ["level"]),
                               (["--tile", 24], ["multiple of 16"]),
                               (["--tile", -16], ["tile"]),
                               (["--compress", "jpeg"], ["--compress"]),
                               (["--bigtiff", "maybe"], ["--bigtiff"])]:
                expect_error(f"usage: {' '.join(map(str, opts))}", base + opts, 2, keys, out_tif)
            raw_out = p("out.raw")
            expect_error("usage: --compress zstd to a .raw output",
                         [*base[:2], raw_out, *base[3:], "--compress", "zstd"], 2, ["TIFF"], raw_out)

    def test_3h_oocgen_tiff_equals_raw(self):
        """oocgen: one seed written as TIFF and as raw gives the same pixels."""
        if not os.access(OOCGEN, os.X_OK):
            self.skipTest(f"no executable oocgen in {BIN}")
        with cli_cases.cases(self):
            for k, (pattern, t, c, opts, compress, tile) in enumerate([
                    ("noise", "f32", 1, [], "none", 0),
                    ("gradient", "u16", 3, ["--compress", "deflate", "--tile", 32], "deflate", 32),
                    ("checker", "u8", 4, ["--compress", "zstd"], "zstd", 0),
                    ("gaussian-spots", "i16", 1, ["--compress", "lzw", "--tile", 16], "lzw", 16),
                    ("noise", "f64", 2, ["--compress", "packbits", "--tile", 48], "packbits", 48),
                    ("gradient", "i32", 3, ["--bigtiff", "yes"], "none", 0)]):
                h, w = 83, 121
                common = ["--width", w, "--height", h, "--type", t, "--channels", c, "--pattern", pattern,
                          "--seed", 11 + k, "-q"]
                raw_gen, tif_gen = p("gen.raw"), p("gen.tif")
                cmds = [[OOCGEN, raw_gen, *common], [OOCGEN, tif_gen, *common, *opts]]
                problems = []
                for cmd in cmds:
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    if problem:
                        problems.append(problem)
                if not problems:
                    want = np.fromfile(raw_gen, NP[t]).reshape(h, w, c)
                    problems = check_written(tif_gen, want, t, compress=compress, tile=tile,
                                             bigtiff="yes" in opts)
                report(f"oocgen {pattern} {t} x{c} {' '.join(map(str, opts)) or 'strips'}: TIFF == raw",
                       problems)

    def test_6_predictors(self):
        """--predictor auto|none|horizontal|float x every --compress x every type (1-3 channels,
        strips and tiles): the Predictor tag (auto: horizontal with lzw, deflate and zstd, floats
        too; none otherwise), the pixels read back exactly by tifffile (through tiffcp where
        tifffile needs imagecodecs: LZW, ZSTD, the float predictor) and by oocconv, --stats json
        and text naming the predictor that ran. float on integer samples and any predictor but
        none without lzw/deflate/zstd are refused (exit 2, nothing left). An auto deflate f32/f64
        output is read by tifffile itself (no imagecodecs needed, as Debian ships it)."""
        tag = {"none": 1, "horizontal": 2, "float": 3}
        with cli_cases.cases(self):
            for i, t in enumerate(TYPES):
                img = random_image(t, 23 + i, 37, 1 + i % 3)
                src = write_raw(img)
                for j, compress in enumerate(("none", "packbits", "lzw", "deflate", "zstd")):
                    takes = compress in ("lzw", "deflate", "zstd")
                    tile = 16 if (i + j) % 2 else 0
                    for pred in ("auto", "none", "horizontal", "float"):
                        label = f"{t} x{img.shape[2]} --compress {compress} --predictor {pred}"
                        cmd = [OOCCONV, src, out_tif, "--taps", 1, "--no-progress", "--stats",
                               "json", *raw_args(img, t), "--compress", compress, "--predictor",
                               pred] + (["--tile", tile] if tile else [])
                        if pred in ("horizontal", "float") and (
                                not takes or (pred == "float" and t not in ("f32", "f64"))):
                            expect_error(f"refused: {label}", cmd, 2, ["--predictor"], out_tif)
                            continue
                        rc, out, err = run(cmd)
                        problem = exit_problem(cmd, rc, err)
                        if problem:
                            report(label, [problem])
                            continue
                        want = pred if pred != "auto" else "horizontal" if takes else "none"
                        problems = check_written(out_tif, img, t, compress=compress, tile=tile)
                        with tifffile.TiffFile(out_tif) as tf:
                            if int(tf.pages[0].predictor) != tag[want]:
                                problems.append(f"Predictor tag {int(tf.pages[0].predictor)}, "
                                                f"want {tag[want]} ({want})")
                        said = json.loads(out)["output"].get("predictor")
                        if said != want:
                            problems.append(f"--stats json says predictor {said!r}, want {want!r}")
                        if compress == "deflate" and want != "float":
                            _, how, problem = tifffile_read(out_tif)
                            if how != "tifffile":
                                problems.append(f"tifffile alone cannot read it: {problem}")
                        report(label, problems)
            img = random_image("f64", 30, 20, 1)
            src = write_raw(img)
            cmd = [OOCCONV, src, out_tif, "--taps", 1, "--no-progress", "--stats", "text",
                   *raw_args(img, "f64"), "--compress", "zstd", "--predictor", "float"]
            rc, out, err = run(cmd)
            report("--stats text names the predictor",
                   [exit_problem(cmd, rc, err) or
                    (None if "zstd, predictor float" in out else f"stats text: {out[:300]!r}")])
            oocrun = os.path.join(BIN, "oocrun")
            cmd = [oocrun, src, out_tif, "abs", *raw_args(img, "f64"), "-q", "--compress", "lzw",
                   "--predictor", "float"]
            rc, _, err = run(cmd)
            problem = exit_problem(cmd, rc, err)
            report("oocrun --predictor float",
                   [problem] if problem else check_written(out_tif, np.abs(img), "f64",
                                                           compress="lzw"))
            expect_error("refused: --predictor horizontal to a .npy output",
                         [OOCCONV, src, p("o.npy"), "--taps", 1, "-q", *raw_args(img, "f64"),
                          "--predictor", "horizontal"], 2, ["--predictor"], p("o.npy"))


# One test per type of the largest sweep (test_3a_N_...), numbered in order.
for _i, _t in enumerate(TYPES):
    setattr(TiffWrite, f"test_3a_{_i}_round_trips_{_t}",
            (lambda t: lambda self: self.round_trips(t))(_t))


if __name__ == "__main__":
    sys.exit(main())
