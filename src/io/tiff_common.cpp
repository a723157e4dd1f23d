// libtiff glue shared by the TIFF reader and writer: error capture, opening, names.
#include "tiff_common.hpp"

#include <cerrno>

#include "formats.hpp"

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "ooc/error.hpp"

namespace ooc {
namespace {

// libtiff reports through a process-wide handler; each thread keeps its own last message, so the
// call that failed can say why even while other workers decode.
thread_local std::string t_last_error;

void on_error(const char* module, const char* fmt, va_list ap) {
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, ap);
  t_last_error = (module && *module ? std::string(module) + ": " : std::string()) + text;
}

}  // namespace

std::string take_tiff_error() {
  std::string e = t_last_error.empty() ? "libtiff gave no reason" : t_last_error;
  t_last_error.clear();
  return e;
}

void install_tiff_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(on_error);
    TIFFSetWarningHandler(nullptr);
  });
}

TIFF* open_tiff(const std::string& path, int page) {
  install_tiff_handlers();
  t_last_error.clear();
  errno = 0;
  TIFF* tif = TIFFOpen(path.c_str(), "rm");
  if (!tif && read_error_kind(errno) == ErrorKind::io)
    throw Error(ErrorKind::io, system_message("cannot open input", path, errno));
  if (!tif) {
    // libtiff opens a header whose first directory offset is 0 as "no images" without a word.
    const std::string why =
        t_last_error.empty() ? "it holds no image directory" : take_tiff_error();
    t_last_error.clear();
    throw Error(ErrorKind::input, "cannot read TIFF '" + path + "': " + why +
                                      " (the file is truncated or damaged, or not a TIFF file)");
  }
  if (page >= 0 && !TIFFSetDirectory(tif, static_cast<tdir_t>(page))) {
    TIFFClose(tif);
    throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page " + std::to_string(page) +
                                      ": " + take_tiff_error());
  }
  return tif;
}

const char* compression_name(int compression) {
  switch (compression) {
    case COMPRESSION_NONE:
      return "uncompressed";
    case COMPRESSION_LZW:
      return "LZW";
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      return "Deflate";
    case COMPRESSION_ZSTD:
      return "ZSTD";
    case COMPRESSION_PACKBITS:
      return "PackBits";
    case COMPRESSION_JPEG:
      return "JPEG";
    case COMPRESSION_LZMA:
      return "LZMA";
    case COMPRESSION_WEBP:
      return "WebP";
    case COMPRESSION_CCITTFAX4:
      return "CCITT G4";
    default:
      return "compressed (other codec)";
  }
}

}  // namespace ooc
