#!/usr/bin/env python3
"""oocconv on .npy files written by NumPy: every dtype and byte order, 2-D and 3-D shapes, against
the same data filtered as raw; outputs must load in NumPy; bad .npy files give clear errors.
Usage: npy_check.py --oocconv PATH"""
import argparse, os, subprocess, sys, tempfile
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--oocconv", required=True)
a = ap.parse_args()
failures = []
tmp = tempfile.mkdtemp(prefix="ooc_npy_")
rng = np.random.default_rng(5)
TYPE = {"u1": "u8", "u2": "u16", "i2": "i16", "u4": "u32", "i4": "i32", "f4": "f32", "f8": "f64"}


def run(*args):
    return subprocess.run([a.oocconv, *map(str, args), "-q"], capture_output=True, text=True)


def fail(what):
    failures.append(what)
    print("FAIL:", what)


for kind in TYPE:
    for order in ("<", ">") if kind != "u1" else ("|",):
        for shape in ((23, 37), (23, 37, 3), (5, 7, 4)):
            dt = np.dtype(order + kind)
            if dt.kind == "f":
                img = (rng.random(shape) * 2000 - 1000).astype(dt)
            else:
                info = np.iinfo(dt)
                img = rng.integers(max(info.min, -30000), min(info.max, 60000), shape).astype(dt)
            img[img == 0] = 1
            src, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
            raw, rout = os.path.join(tmp, "in.raw"), os.path.join(tmp, "out.raw")
            np.save(src, img)
            img.astype(dt.newbyteorder("<")).tofile(raw)
            ch = shape[2] if len(shape) == 3 else 1
            case = f"{dt.str} {shape}"
            r1 = run(src, out, "--radius", 2)
            r2 = run(raw, rout, "--radius", 2, "--width", shape[1], "--channels", ch, "--type", TYPE[kind])
            if r1.returncode or r2.returncode:
                fail(f"{case}: exit {r1.returncode}/{r2.returncode}: {r1.stderr}{r2.stderr}")
                continue
            got = np.load(out)
            want = np.fromfile(rout, dtype=dt.newbyteorder("<")).reshape(shape)
            if got.shape != shape or got.dtype != want.dtype or not np.array_equal(got, want, equal_nan=True):
                fail(f"{case}: .npy result differs from the raw one ({got.dtype} {got.shape})")

# Explicit formats, and the header's data offset (a multiple of 64, as NumPy writes it).
img = rng.random((9, 11)).astype("<f4") + 1
src = os.path.join(tmp, "in.npy")
np.save(src, img)
named_raw = os.path.join(tmp, "as_npy.raw")
if run(src, named_raw, "--radius", 1, "--format", "npy").returncode or np.load(named_raw).shape != (9, 11):
    fail("--format npy did not write .npy to a .raw name")
named_npy = os.path.join(tmp, "as_raw.npy")
if run(src, named_npy, "--radius", 1, "--format", "raw").returncode or os.path.getsize(named_npy) != 9 * 11 * 4:
    fail("--format raw did not write raw to a .npy name")
with open(os.path.join(tmp, "out.npy"), "rb") as f:
    major = f.read(8)[6]
    hlen = int.from_bytes(f.read(2), "little")
    if (10 + hlen) % 64:
        fail(f"header of {10 + hlen} bytes: data not 64-byte aligned")

# Bad files and contradictions: exit code and message.
bad = os.path.join(tmp, "bad.npy")
def expect(args, code, phrase, what):
    r = run(*args)
    if r.returncode != code or phrase not in r.stderr:
        fail(f"{what}: exit {r.returncode} (want {code}), stderr {r.stderr.strip()!r} (want {phrase!r})")
np.save(bad, np.asfortranarray(rng.random((6, 5))))
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1], 3, "Fortran order", "Fortran order")
np.save(bad, rng.random((6, 5)).astype(np.complex64))
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1], 3, "not supported", "complex dtype")
np.save(bad, rng.random((2, 3, 4, 5)))
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1], 3, "not an image", "4-D shape")
np.save(bad, rng.random((6, 5)))
with open(bad, "r+b") as f:
    f.truncate(os.path.getsize(bad) - 8)
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1], 3, "truncated", "truncated data")
np.save(bad, rng.random((6, 5)))
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1, "--width", 6], 2, "contradicts", "--width conflict")
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1, "--type", "f32"], 2, "contradicts", "--type conflict")
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1, "--in-format", "bogus"], 2, "--in-format", "bad --in-format")
with open(bad, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00\xff\x00{'descr'")
expect([bad, os.path.join(tmp, "o.npy"), "--radius", 1], 3, "truncated", "truncated header")

for f in os.listdir(tmp):
    os.remove(os.path.join(tmp, f))
os.rmdir(tmp)
if failures:
    sys.exit(f"{len(failures)} failure(s)")
print("npy check: all cases passed")
