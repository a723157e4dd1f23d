"""Whether an output array shares bytes with the input: the same memory, or the same bytes of
one file through two mappings, which a band pipeline writing the output would overwrite before
later bands read them (the caller copies the input first)."""

import numpy as np

from . import _device


def _byte_bounds(a):
    """[lo, hi): the addresses a's samples span, whatever the signs of its strides."""
    lo = hi = a.__array_interface__["data"][0]
    for n, stride in zip(a.shape, a.strides):
        if stride < 0:
            lo += (n - 1) * stride
        else:
            hi += (n - 1) * stride
    return lo, hi + a.itemsize


def _owns_memory(a):
    """Whether a's memory was allocated by NumPy (not a file's mapping, nor anyone else's)."""
    while isinstance(a, np.ndarray):
        if a.flags.owndata:
            return True
        a = a.base
    return False


def _mapped_files(*ranges):
    """For each address range [lo, hi), the files mapped over it, from /proc/self/maps: a list of
    ((device, inode), path, first byte, end byte) in the file. Empty where nothing is mapped from
    a file, or on a system without /proc."""
    found = [[] for _ in ranges]
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                # start-end perms offset major:minor inode [path]
                fields = line.split(None, 5)
                start, end = (int(x, 16) for x in fields[0].split("-"))
                for (lo, hi), files in zip(ranges, found):
                    if end <= lo or start >= hi or fields[4] == "0":
                        continue
                    offset = int(fields[2], 16)
                    path = fields[5].strip() if len(fields) > 5 else "?"
                    files.append(((fields[3], int(fields[4])), path,
                                  offset + max(lo, start) - start, offset + min(hi, end) - start))
    except (OSError, ValueError, IndexError):
        return [[] for _ in ranges]
    return found


def _shared(a, out):
    """How `out` shares bytes with `a`, or None: the same memory (out is a, or a view of it), or
    the same bytes of one file through two mappings (np.load(p, mmap_mode="r") and
    np.load(p, mmap_mode="r+") are one array: same device and inode, overlapping file ranges).
    Writing such an output would overwrite rows that later bands still read."""
    if _device.is_device(a) or _device.is_device(out):
        return _device.shared(a, out)
    if np.may_share_memory(a, out):
        try:
            if np.shares_memory(a, out, max_work=100000):
                return "both use the same addresses"
        except np.TooHardError:
            return "both may use the same addresses, as far as numpy can tell"
    # Memory NumPy allocated is nobody's mapping: the scan of the maps is for the others.
    if _owns_memory(a) or _owns_memory(out):
        return None
    ins, outs = _mapped_files(_byte_bounds(a), _byte_bounds(out))
    for key, path, lo, hi in outs:
        for key2, _, lo2, hi2 in ins:
            if key == key2 and lo < hi2 and lo2 < hi:
                return "both map bytes %d to %d of %s" % (max(lo, lo2), min(hi, hi2), path)
    return None
