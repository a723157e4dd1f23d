# The NumPy functions within mem_limit whatever the arrays are (issue 29): an output sharing the
# input's bytes (output=input, or two mappings of one file) is copied within the budget or refused
# with the memory it needs, never written over the rows still to be read; strided and byte-swapped
# views stream band by band (a full copy of one would break a tight address-space limit); and
# bad mem_limit / mode values raise ooc.Error echoing what the user gave.
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc


def noise(shape, dtype=np.float32, seed=0):
    """Random data away from zero, so that a stale or skipped row cannot pass for a right one."""
    return (np.random.default_rng(seed).random(shape) + 0.5).astype(dtype)


def check(got, ref64):
    """got against scipy's float64 result, to float32's precision (f64 sums, one f32 rounding)."""
    assert not np.isnan(got).any()
    scale = float(np.abs(ref64).max())
    np.testing.assert_allclose(got, ref64, rtol=1e-6, atol=1e-6 * scale)


def test_two_mappings_of_one_file_are_one_array(tmp_path):
    # Issue 29 #3: np.load(p, "r") in, np.load(p, "r+") out: two addresses, one file. Filtering
    # through them without a copy returned normally with 5-7% errors.
    x = noise((4096, 2048))
    ref = ndi.gaussian_filter(x.astype(np.float64), 4.0)
    p = tmp_path / "img.npy"
    for source in ("memmap", "path"):
        np.save(p, x)
        out = np.load(p, mmap_mode="r+")
        src = np.load(p, mmap_mode="r") if source == "memmap" else str(p)
        assert ooc.gaussian_filter(src, 4.0, output=out) is out
        out.flush()
        check(np.load(p), ref)
    # Where the copy does not fit, a refusal naming the file, the need and the way out; the file
    # is untouched.
    np.save(p, x)
    message = (r"shares memory with the input \(both map bytes .* of " + re.escape(str(p))
               + r"\).*32\.0 MiB.*mem_limit 8\.0 MiB.*separate output")
    with pytest.raises(ooc.Error, match=message) as e:
        ooc.gaussian_filter(np.load(p, mmap_mode="r"), 4.0, output=np.load(p, mmap_mode="r+"),
                            mem_limit="8M")
    assert e.value.kind == "usage"
    assert np.array_equal(np.load(p), x)


def test_disjoint_parts_of_one_file_need_no_copy(tmp_path):
    # The top half of a file filtered into its bottom half through a second mapping: the same
    # file, other bytes, so it streams under a limit far below the image.
    x = noise((512, 1024), seed=1)
    p = tmp_path / "two.npy"
    np.save(p, x)
    top = np.load(p, mmap_mode="r")[:256]
    bottom = np.load(p, mmap_mode="r+")[256:]
    ooc.gaussian_filter(top, 2.0, output=bottom, mem_limit="512K")
    bottom.flush()
    got = np.load(p)
    assert np.array_equal(got[:256], x[:256])
    check(got[256:], ndi.gaussian_filter(x[:256].astype(np.float64), 2.0))


def test_output_is_input(tmp_path):
    # Issue 29 #7, output=input: a copy where it fits mem_limit, else ooc.Error with the memory it
    # would need (not a silent copy of the whole image beyond the limit).
    x = noise((1024, 2048), seed=2)
    mm = np.lib.format.open_memmap(tmp_path / "mm.npy", "w+", np.float32, x.shape)
    mm[...] = x
    with pytest.raises(ooc.Error, match=r"needs a copy of the input, 8\.0 MiB.*more than "
                       r"mem_limit 4\.0 MiB.*or mem_limit='(\d+M)' or more") as e:
        ooc.gaussian_filter(mm, 4.0, output=mm, mem_limit="4M")
    assert np.array_equal(mm, x)
    # The limit it names is enough.
    enough = re.search(r"mem_limit='(\d+M)'", str(e.value)).group(1)
    ref = ndi.gaussian_filter(x.astype(np.float64), 4.0)
    assert ooc.gaussian_filter(mm, 4.0, output=mm, mem_limit=enough) is mm
    check(np.asarray(mm), ref)
    # A view of the input as output (rows shifted by one) overlaps as well.
    y = x.copy()
    ooc.uniform_filter(y[1:], 3, output=y[:-1])
    check(y[:-1], ndi.uniform_filter(x[1:].astype(np.float64), 3))
    with pytest.raises(ooc.Error, match="shares memory with the input"):
        ooc.convolve(y, np.ones((3, 3)), output=y, mem_limit="1M")
    # A pointwise pass in place reads each band before writing it: no copy, any limit.
    u = (x * 100).astype(np.uint8)
    want = ooc.equalize(u)
    ooc.equalize(u, output=u, mem_limit="64K")
    assert np.array_equal(u, want)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    ooc.cuda_device_count() == 0, reason="no CUDA device on this machine"))])
def test_strided_big_endian_and_reversed_views(device):
    # Views of every kind, in and out, against scipy on the same values (a GPU gathers its bands
    # on several threads at once).
    base = noise((90, 150, 3), seed=3)
    big_endian = base.astype(">f4")
    views = [base[:, ::2, 1], base[::-3, 5:120:4], big_endian[10:80:2, ::-1],
             base.transpose(1, 0, 2)]
    for v in views:
        sigma = (2.0, 1.5, 0)[:v.ndim]
        ref = ndi.gaussian_filter(np.asarray(v, np.float64), sigma, mode="mirror")
        # A big-endian float64 output, itself a transposed view.
        out = np.full((v.shape[1], v.shape[0]) + v.shape[2:], np.nan, ">f8").swapaxes(0, 1)
        got = ooc.gaussian_filter(v, sigma, output=out, mode="mirror", band_rows=7,
                                  mem_limit="1M", device=device)
        assert got is out
        check(got, ref)
    signal = noise((401,), seed=4)[::-2]
    check(ooc.gaussian_filter1d(signal, 3.0, device=device),
          ndi.gaussian_filter1d(signal.astype(np.float64), 3.0))


CHILD = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import ooc

    def address_space():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

    big = np.load(sys.argv[1], mmap_mode="r")
    out = np.load(sys.argv[2], mmap_mode="r+")
    # Room for the run (16M of bands, threads' stacks) but not for a copy of the 128 MiB view.
    # On the CPU: a CUDA driver would reserve far more address space than that.
    limit = address_space() + (64 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    ooc.gaussian_filter(big[:, ::2], 4.0, output=out, mem_limit="16M", threads=2, device="cpu")
    out.flush()
""")


def test_strided_memmap_streams_in_bands(tmp_path):
    # Issue 29 #7, mm[:, ::2] of a memmap: it was copied whole into RAM (np.ascontiguousarray),
    # which under a memory limit is the OOM killer. Here the limit is the child's address space:
    # both mappings and 64 MiB more, half of what a copy of the 128 MiB view would take.
    H, W = 4096, 16384
    block = noise((256, W), seed=5)
    big = np.lib.format.open_memmap(tmp_path / "big.npy", "w+", np.float32, (H, W))
    for y in range(0, H, 256):
        big[y:y + 256] = block
    big.flush()
    del big
    np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float32, (H, W // 2)).flush()
    env = dict(os.environ, MALLOC_ARENA_MAX="1",  # no 64 MiB reservation per thread's arena
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(ooc.__file__)),
                                           os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "big.npy"),
                        str(tmp_path / "out.npy")], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    # Rows near the top, the middle and the bottom against scipy on a band with 16 rows (the
    # radius) of context, or the image's edge.
    x = np.load(tmp_path / "big.npy", mmap_mode="r")[:, ::2]
    out = np.load(tmp_path / "out.npy", mmap_mode="r")
    for y0, y1 in ((0, 40), (2000, 2040), (H - 40, H)):
        c0, c1 = max(y0 - 16, 0), min(y1 + 16, H)
        ref = ndi.gaussian_filter(np.asarray(x[c0:c1], np.float64), 4.0)
        check(out[y0:y1], ref[y0 - c0:y1 - c0])


def test_bad_mem_limit_says_what_is_valid():
    # Issue 29: mem_limit=-5 raised pybind11's bare "Unable to cast" RuntimeError.
    x = noise((10, 10))
    for bad in (-5, 0, 2.5, [1], 2**70):
        with pytest.raises(ooc.Error, match=r"mem_limit %s is not a memory size: give a positive "
                           r"number of bytes .* or a string such as '512M'" % (
                               re.escape(repr(bad)),)) as e:
            ooc.gaussian_filter(x, 1.0, mem_limit=bad)
        assert e.value.kind == "usage"
    assert np.array_equal(ooc.gaussian_filter(x, 1.0, mem_limit=2e6), ooc.gaussian_filter(x, 1.0))
    with pytest.raises(ooc.Error, match=r"threads must be a whole number from 1 to \d+, got 'two'"):
        ooc.gaussian_filter(x, 1.0, threads="two")


def test_bad_mode_echoes_what_was_given():
    # Issue 29: gaussian_filter(x, 3, mode="grid-reflect") said "got ['grid-reflect',
    # 'grid-reflect']", the list it made of the string.
    x = noise((10, 10))
    for f in (ooc.gaussian_filter, ooc.uniform_filter, ooc.gaussian_filter1d):
        with pytest.raises(ooc.Error, match=r"mode must be one of reflect.*, got 'grid-reflect'$"):
            f(x, 3, mode="grid-reflect")
    with pytest.raises(ooc.Error, match=r"got \['reflect', 'bogus'\]$"):
        ooc.gaussian_filter(x, 1.0, mode=["reflect", "bogus"])
