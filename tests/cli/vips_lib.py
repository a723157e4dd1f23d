"""libvips in this process (ctypes on libvips.so.42) for the TIFF checks: tiffsave of an array and
the pixels of a file, the same operations as `vips rawload` + `vips tiffsave` and `vipsheader` +
`vips rawsave` (cmp-identical files, the same arrays), without starting vips for each file: its
start is most of a small case's time. LIB is None where the library or a symbol is missing; the
checks then run the commands."""
import ctypes
import ctypes.util

import numpy as np

# VipsBandFormat by NumPy's type code, and back.
FORMAT = {"u1": 0, "i1": 1, "u2": 2, "i2": 3, "u4": 4, "i4": 5, "f4": 6, "f8": 8}
DTYPE = {v: "<" + k for k, v in FORMAT.items()}


class _Vips:
    def __init__(self):
        lib = ctypes.CDLL("libvips.so.42")
        glib = ctypes.CDLL(ctypes.util.find_library("glib-2.0") or "libglib-2.0.so.0")
        gobject = ctypes.CDLL(ctypes.util.find_library("gobject-2.0") or "libgobject-2.0.so.0")
        vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        lib.vips_init.argtypes = [cp]
        lib.vips_image_new_from_memory_copy.restype = vp
        lib.vips_image_new_from_memory_copy.argtypes = [vp, ctypes.c_size_t, i, i, i, i]
        # Variadic (name, value, ..., NULL): only the NULL is passed.
        lib.vips_image_write_to_file.argtypes = [vp, cp, vp]
        lib.vips_image_new_from_file.restype = vp
        lib.vips_image_new_from_file.argtypes = [cp, vp]
        lib.vips_image_write_to_memory.restype = vp
        lib.vips_image_write_to_memory.argtypes = [vp, ctypes.POINTER(ctypes.c_size_t)]
        for f in ("width", "height", "bands", "format"):
            getattr(lib, "vips_image_get_" + f).argtypes = [vp]
        lib.vips_error_buffer.restype = cp
        gobject.g_object_unref.argtypes = [vp]
        glib.g_free.argtypes = [vp]
        if lib.vips_init(b"ooc-tiff-test") != 0:
            raise OSError("vips_init failed")
        # No operation cache: the checks rewrite files under the same names, which a cached
        # load would answer with the old pixels (each vips command started with an empty one).
        lib.vips_cache_set_max.argtypes = [i]
        lib.vips_cache_set_max(0)
        self.lib, self.glib, self.gobject = lib, glib, gobject

    def _error(self, what):
        why = (self.lib.vips_error_buffer() or b"").decode(errors="replace")
        self.lib.vips_error_clear()
        return f"{what}: {why.strip()}"

    def save(self, img, target):
        """tiffsave of img (H, W, C) to `target` ("file.tif[option,...]"); None, or why not."""
        buf = np.ascontiguousarray(img)
        h, w, c = buf.shape
        image = self.lib.vips_image_new_from_memory_copy(buf.ctypes.data, buf.nbytes, w, h, c,
                                                         FORMAT[buf.dtype.str[1:]])
        if not image:
            return self._error("vips_image_new_from_memory_copy")
        rc = self.lib.vips_image_write_to_file(image, target.encode(), None)
        self.gobject.g_object_unref(image)
        return self._error(f"tiffsave {target}") if rc != 0 else None

    def load(self, path):
        """(array (H, W, bands) as libvips decodes the file, None) or (None, why not)."""
        image = self.lib.vips_image_new_from_file(path.encode(), None)
        if not image:
            return None, self._error(f"vips load {path}")
        try:
            h, w = self.lib.vips_image_get_height(image), self.lib.vips_image_get_width(image)
            c, fmt = self.lib.vips_image_get_bands(image), self.lib.vips_image_get_format(image)
            if fmt not in DTYPE:
                return None, f"libvips reads band format {fmt}"
            size = ctypes.c_size_t()
            mem = self.lib.vips_image_write_to_memory(image, ctypes.byref(size))
            if not mem:
                return None, self._error(f"vips decode {path}")
            try:
                data = ctypes.string_at(mem, size.value)
            finally:
                self.glib.g_free(mem)
            return np.frombuffer(data, DTYPE[fmt]).reshape(h, w, c).copy(), None
        finally:
            self.gobject.g_object_unref(image)


def option_string(opts):
    """tiffsave's command-line options (["--tile", "--tile-width", 64, ...]) as libvips'
    filename options ("tile,tile_width=64,...")."""
    parts, k = [], 0
    while k < len(opts):
        key = str(opts[k])[2:].replace("-", "_")
        if k + 1 < len(opts) and not str(opts[k + 1]).startswith("--"):
            parts.append(f"{key}={opts[k + 1]}")
            k += 2
        else:
            parts.append(key)
            k += 1
    return ",".join(parts)


def target(path, opts):
    return f"{path}[{option_string(opts)}]" if opts else str(path)


try:
    LIB = _Vips()
except (OSError, AttributeError):
    LIB = None
