"""Byte comparison of two directory trees (Zarr stores: thousands of small chunk files), what
filecmp.dircmp + cmpfiles(shallow=False) decide (the same names at every level, each file's
bytes equal, names in `ignore` skipped at every level), in one walk of each tree: filecmp stats
each file four times and reads it in 8 KiB pieces, which was most of the Zarr checks' time."""
import os


def tree(root, ignore=()):
    """({relative directory}, {relative file: bytes}) under root, names in `ignore` left out."""
    dirs, files = set(), {}
    for here, subdirs, names in os.walk(root):
        rel = os.path.relpath(here, root)
        subdirs[:] = [d for d in subdirs if d not in ignore]
        dirs.update(os.path.join(rel, d) for d in subdirs)
        for n in names:
            if n not in ignore:
                with open(os.path.join(here, n), "rb") as f:
                    files[os.path.join(rel, n)] = f.read()
    return dirs, files


def same(x, y, ignore=(), y_tree=None):
    """Whether trees x and y have the same directories and files, byte for byte (y_tree: y's
    tree() already read)."""
    a = tree(x, ignore)
    b = y_tree if y_tree is not None else tree(y, ignore)
    return a == b
