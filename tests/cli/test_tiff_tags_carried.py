#!/usr/bin/env python3
"""TIFF metadata carried from a TIFF input to the output (photometric, resolution,
ExtraSamples, ImageDescription) and the SampleFormat and BitsPerSample of --out-type (section 4 of
tiff_support.py).
Usage: test_tiff_tags_carried.py --bin-dir DIR [--keep] [-v] [unittest options]"""

import sys

import cli_cases
from cli_cases import report
from tiff_support import (META_TAGS, OOCCONV, TiffBase, compare, exit_problem, main, out_tif, p,
    random_image, ratio, rng, run, tag_value, tifffile, tifffile_read)


class TiffTagsCarried(TiffBase):
    # Numbered in the order they draw their data (cli_cases.py).

    def test_4a_metadata_carried_over(self):
        with cli_cases.cases(self):
            META_CASES = [
                # label, image, tifffile.imwrite arguments, oocconv output options
                ("RGB u16", random_image("u16", 31, 47, 3),
                 dict(photometric="rgb", resolution=(300, 150), resolutionunit="CENTIMETER",
                      description="hello ooc"), []),
                ("RGB u16 to tiled zstd", random_image("u16", 31, 47, 3),
                 dict(photometric="rgb", resolution=(300, 150), resolutionunit="CENTIMETER",
                      description="hello ooc"), ["--compress", "zstd", "--tile", 16]),
                ("RGBA u8 unassociated alpha", random_image("u8", 33, 41, 4),
                 dict(photometric="rgb", extrasamples=["UNASSALPHA"], resolution=(72, 96),
                      resolutionunit="INCH", description="rgba image"), []),
                ("RGBA f32 associated alpha, deflate", random_image("f32", 19, 23, 4),
                 dict(photometric="rgb", extrasamples=["ASSOCALPHA"], description="premultiplied"),
                 ["--compress", "deflate"]),
                ("grey + alpha u16", random_image("u16", 21, 35, 2),
                 dict(photometric="minisblack", planarconfig="contig", extrasamples=["UNASSALPHA"],
                      resolution=(10, 20), resolutionunit="CENTIMETER"), ["--tile", 32]),
                ("min-is-black, 3 samples", random_image("u8", 21, 35, 3),
                 dict(photometric="minisblack", planarconfig="contig", description="three bands"), []),
                ("min-is-white u16", random_image("u16", 21, 35, 1),
                 dict(photometric="miniswhite", description="inverted"), ["--compress", "lzw"]),
                ("CMYK u8", random_image("u8", 21, 35, 4),
                 dict(photometric="separated", description="cmyk"), []),
            ]
            for label, img, kw, opts in META_CASES:
                src = p("meta_in.tif")
                data = img if img.shape[2] > 1 else img[..., 0]
                tifffile.imwrite(src, data, metadata=None, software=False, **kw)
                t = {"u1": "u8", "u2": "u16", "f4": "f32"}[img.dtype.str[1:]]
                cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *opts]
                rc, _, err = run(cmd)
                problem = exit_problem(cmd, rc, err)
                if problem:
                    report(f"metadata {label}", [problem])
                    continue
                problems = []
                with tifffile.TiffFile(src) as a, tifffile.TiffFile(out_tif) as b:
                    pa, pb = a.pages[0], b.pages[0]
                    for tag in META_TAGS:
                        va, vb = tag_value(pa, tag), tag_value(pb, tag)
                        if tag in ("XResolution", "YResolution"):
                            va, vb = ratio(va), ratio(vb)
                        if isinstance(va, (tuple, list)):
                            va, vb = tuple(int(x) for x in va), tuple(int(x) for x in vb or ())
                        elif va is not None and not isinstance(va, (str, float)):
                            va, vb = int(va), None if vb is None else int(vb)
                        if va != vb:
                            problems.append(f"{tag}: input {va!r}, output {vb!r}")
                if kw.get("resolution"):  # what the brief asked for, spelled out
                    with tifffile.TiffFile(out_tif) as b:
                        pb = b.pages[0]
                        want_res = (kw["resolution"][0], kw["resolution"][1])
                        got_res = (ratio(tag_value(pb, "XResolution")), ratio(tag_value(pb, "YResolution")))
                        if got_res != want_res:
                            problems.append(f"resolution {got_res}, want {want_res}")
                got, how, problem = tifffile_read(out_tif)
                problems += [x for x in (problem, compare(f"{how} read", got, img)) if x]
                report(f"metadata {label} {' '.join(map(str, opts))}".rstrip(), problems)

    def test_4b_out_type_tags(self):
        with cli_cases.cases(self):
            # --out-type: the sample format and bits follow the output type; the tags still carry over.
            img = rng.integers(1, 30000, (25, 39, 3), dtype="<u2")
            src = p("meta_in.tif")
            tifffile.imwrite(src, img, photometric="rgb", resolution=(300, 150), resolutionunit="CENTIMETER",
                             description="hello ooc", metadata=None)
            for out_type, fmt, bits, dt in (("f32", 3, 32, "<f4"), ("i16", 2, 16, "<i2"), ("f64", 3, 64, "<f8"),
                                            ("u32", 1, 32, "<u4")):
                for opts in ([], ["--compress", "deflate", "--tile", 16]):
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", "--out-type", out_type, *opts]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    name = f"--out-type {out_type} {' '.join(map(str, opts))}".rstrip()
                    if problem:
                        report(name, [problem])
                        continue
                    problems = []
                    with tifffile.TiffFile(out_tif) as b:
                        pb = b.pages[0]
                        sf, bps = tag_value(pb, "SampleFormat"), tag_value(pb, "BitsPerSample")
                        sf = tuple(int(x) for x in sf) if isinstance(sf, tuple) else (int(sf or 1),) * 3
                        bps = tuple(bps) if isinstance(bps, tuple) else (bps,) * 3
                        if sf != (fmt,) * 3:
                            problems.append(f"SampleFormat {sf}, want {(fmt,) * 3}")
                        if bps != (bits,) * 3:
                            problems.append(f"BitsPerSample {bps}, want {(bits,) * 3}")
                        if int(tag_value(pb, "PhotometricInterpretation")) != 2:
                            problems.append("photometric is no longer RGB")
                        if tag_value(pb, "ImageDescription") != "hello ooc":
                            problems.append(f"ImageDescription {tag_value(pb, 'ImageDescription')!r}")
                        unit = tag_value(pb, "ResolutionUnit")
                        if ratio(tag_value(pb, "XResolution")) != 300 or unit is None or int(unit) != 3:
                            problems.append("resolution not carried over")
                    got, how, problem = tifffile_read(out_tif)
                    problems += [x for x in (problem, compare(f"{how} read", got, img.astype(dt))) if x]
                    report(name, problems)


if __name__ == "__main__":
    sys.exit(main())
