#!/usr/bin/env python3
# The peers of `ooc_gpu_stages --stages fft` on the GPU machine: the same K x K f32 convolution of
# one band already in device memory (rows x width outputs from rows + K - 1 input rows), timed
# with CUDA events (median of --repeats after a warm-up), as CSV on stdout:
#   peer,K,rows,width,ms,gpixel_per_s,note
# CuPy: cupyx.scipy.signal.fftconvolve and oaconvolve, mode "valid" on an input already padded
# by K - 1 columns (the padding is not timed: the peers get the easier job). NPP: its direct
# nppiFilterBorder_32f_C1R_Ctx (replicate border at the left and right edges), called through
# ctypes since the build machine has no NPP headers; the struct layouts are read from nppdefs.h
# and its result is checked against CuPy's before it is timed.
# Usage: gpu_fft_peers.py [--width 16384] [--rows 1024] [--kernels 63,129,255,511]
#                         [--npp-max 129] [--repeats 5]
import argparse
import ctypes
import os
import re
import statistics
import sys

import cupy as cp
import numpy as np
import cupyx.scipy.signal as csig


def time_ms(f, repeats):
    f()  # warm-up: plans, kernel compilation
    cp.cuda.runtime.deviceSynchronize()
    ms = []
    for _ in range(repeats):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        f()
        b.record()
        b.synchronize()
        ms.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(ms)


def nppdefs():
    for root in (os.environ.get("CUDA_HOME", "/usr/local/cuda"), "/usr/local/cuda"):
        for sub in ("include", "targets/x86_64-linux/include"):
            p = os.path.join(root, sub, "nppdefs.h")
            if os.path.exists(p):
                return open(p).read()
    raise SystemExit("gpu_fft_peers.py: nppdefs.h not found under /usr/local/cuda")


class NppiSize(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int)]


class NppiPoint(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int)]


CTX_FIELDS = [("hStream", ctypes.c_void_p), ("nCudaDeviceId", ctypes.c_int),
              ("nMultiProcessorCount", ctypes.c_int),
              ("nMaxThreadsPerMultiProcessor", ctypes.c_int),
              ("nMaxThreadsPerBlock", ctypes.c_int), ("nSharedMemPerBlock", ctypes.c_size_t),
              ("nCudaDevAttrComputeCapabilityMajor", ctypes.c_int),
              ("nCudaDevAttrComputeCapabilityMinor", ctypes.c_int),
              ("nStreamFlags", ctypes.c_uint), ("nReserved0", ctypes.c_int)]


class NppStreamContext(ctypes.Structure):
    _fields_ = CTX_FIELDS


def check_layout(text):
    """The context's fields in nppdefs.h, in order, must be ours; the replicate border's value."""
    m = re.search(r"typedef\s+struct\s*\{([^}]*)\}\s*NppStreamContext\s*;", text)
    if not m:
        raise SystemExit("gpu_fft_peers.py: NppStreamContext not found in nppdefs.h")
    names = re.findall(r"(\w+)\s*;", re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(1), flags=re.S))
    if names != [f[0] for f in CTX_FIELDS]:
        raise SystemExit("gpu_fft_peers.py: NppStreamContext in nppdefs.h is %s, not ours" % names)
    b = re.search(r"NPP_BORDER_REPLICATE\s*=\s*(\d+)", text)
    return int(b.group(1))


def npp_filter(replicate):
    lib = ctypes.CDLL("libnppif.so")
    f = lib.nppiFilterBorder_32f_C1R_Ctx
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_int, NppiSize, NppiPoint, ctypes.c_void_p,
                  ctypes.c_int, NppiSize, ctypes.c_void_p, NppiSize, NppiPoint, ctypes.c_int,
                  NppStreamContext]
    dev = cp.cuda.Device()
    attrs = dev.attributes
    cc = dev.compute_capability  # "90"
    ctx = NppStreamContext(ctypes.c_void_p(cp.cuda.get_current_stream().ptr), dev.id,
                           attrs["MultiProcessorCount"], attrs["MaxThreadsPerMultiProcessor"],
                           attrs["MaxThreadsPerBlock"], attrs["MaxSharedMemoryPerBlock"],
                           int(cc[:-1]), int(cc[-1]), 0, 0)

    def run(x, k, out):
        """out = x (rows + K - 1 rows) convolved with k, the rows of halo read as real rows."""
        K = k.shape[0]
        r = K // 2
        H, W = x.shape
        step = W * 4
        roi = x.data.ptr + r * step
        st = f(roi, step, NppiSize(W, H), NppiPoint(0, r), out.data.ptr, step,
               NppiSize(W, H - 2 * r), k.data.ptr, NppiSize(K, K), NppiPoint(r, r), replicate, ctx)
        if st != 0:
            raise SystemExit("gpu_fft_peers.py: NPP returned %d" % st)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=16384)
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--kernels", default="63,129,255,511")
    ap.add_argument("--npp-max", type=int, default=129)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    replicate = check_layout(nppdefs())
    npp = npp_filter(replicate)
    rng = np.random.default_rng(3)
    print("peer,K,rows,width,ms,gpixel_per_s,note")
    for K in [int(k) for k in a.kernels.split(",")]:
        r = K // 2
        x = cp.asarray(rng.uniform(1, 200, (a.rows + 2 * r, a.width)).astype(np.float32))
        xp = cp.pad(x, ((0, 0), (r, r)), mode="edge")
        k = cp.asarray(rng.uniform(0.1, 1, (K, K)).astype(np.float32))
        k /= k.sum()
        pix = a.rows * a.width
        ref = None
        for name, fn in (("cupy-fftconvolve", csig.fftconvolve), ("cupy-oaconvolve", csig.oaconvolve)):
            try:
                ms = time_ms(lambda: fn(xp, k, mode="valid"), a.repeats)
            except Exception as e:  # out of memory at the largest shapes: say so
                print("%s,%d,%d,%d,,,failed: %s" % (name, K, a.rows, a.width,
                                                     str(e).replace(",", ";")[:120]))
                continue
            if ref is None:
                ref = fn(xp, k, mode="valid")
            print("%s,%d,%d,%d,%.3f,%.2f,input padded before timing" %
                  (name, K, a.rows, a.width, ms, pix / (ms * 1e-3) / 1e9))
            sys.stdout.flush()
        if K <= a.npp_max:
            out = cp.empty((a.rows, a.width), dtype=cp.float32)
            kk = k  # NPP convolves (the kernel reversed), as fftconvolve does
            npp(x, kk, out)
            cp.cuda.runtime.deviceSynchronize()
            note = "nppiFilterBorder_32f_C1R_Ctx"
            if ref is not None:
                d = float(cp.abs(out[:, r:-r] - ref[:, r:-r]).max())
                note += "; max |npp - cupy| off the edges %.3g" % d
            ms = time_ms(lambda: npp(x, kk, out), min(a.repeats, 3))
            print("npp-direct,%d,%d,%d,%.3f,%.2f,%s" %
                  (K, a.rows, a.width, ms, pix / (ms * 1e-3) / 1e9, note))
            sys.stdout.flush()
        del x, xp
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
