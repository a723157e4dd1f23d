// Opening inputs and creating outputs: the format detected (magic bytes, a Zarr directory, the
// name's extension), a raw or .npy file's geometry checked, and the reader or writer of that
// format made (open_source, create_sink).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "formats.hpp"
#include "npy.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "synthetic.hpp"

namespace fs = std::filesystem;

namespace ooc {
namespace {

// Up to `count` widths near `width` whose rows tile `samples` exactly, for the error message.
std::string widths_that_fit(std::uint64_t samples, std::int64_t width, int count) {
  std::vector<std::uint64_t> divisors;
  for (std::uint64_t d = 1; d * d <= samples; ++d) {
    if (samples % d != 0) continue;
    divisors.push_back(d);
    if (d != samples / d) divisors.push_back(samples / d);
  }
  std::sort(divisors.begin(), divisors.end(), [&](std::uint64_t a, std::uint64_t b) {
    const auto da = a > std::uint64_t(width) ? a - width : width - a;
    const auto db = b > std::uint64_t(width) ? b - width : width - b;
    return da < db;
  });
  if (static_cast<int>(divisors.size()) > count) divisors.resize(count);
  std::sort(divisors.begin(), divisors.end());
  std::string out;
  for (auto d : divisors) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

}  // namespace

void check_hints(const RawHints& hints, const ImageSpec& spec, const std::string& authority) {
  auto conflict = [&](const std::string& option, const std::string& given,
                      const std::string& header) {
    return Error(ErrorKind::usage, option + " " + given + " contradicts " + authority + " " +
                                       header + ": drop " + option);
  };
  if (hints.width > 0 && hints.width != spec.width)
    throw conflict("--width", std::to_string(hints.width), std::to_string(spec.width));
  if (hints.height > 0 && hints.height != spec.height)
    throw conflict("--height", std::to_string(hints.height), std::to_string(spec.height));
  if (hints.depth > 0 && hints.depth != spec.depth)
    throw conflict("--depth", std::to_string(hints.depth), std::to_string(spec.depth));
  if (hints.type_given && hints.type != spec.type)
    throw conflict("--type", std::string(name(hints.type)), std::string(name(spec.type)));
  if (hints.channels_given && hints.channels != spec.channels)
    throw conflict("--channels", std::to_string(hints.channels), std::to_string(spec.channels));
}

std::string partial_path(const std::string& output) {
  return output + ".partial";
}

namespace {

// Whether `path` ends in one of `extensions` (lower case), ignoring case.
bool has_extension(const std::string& path, std::initializer_list<const char*> extensions) {
  for (const char* e : extensions) {
    const std::string x(e);
    if (path.size() >= x.size() &&
        std::equal(x.rbegin(), x.rend(), path.rbegin(),
                   [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }))
      return true;
  }
  return false;
}

std::string format_of(int fd) {
  unsigned char m[8] = {};
  const ssize_t got = ::pread(fd, m, sizeof m, 0);
  if (got >= 6 && std::memcmp(m, "\x93NUMPY", 6) == 0) return "npy";
  if (got >= 4 && (std::memcmp(m, "II*\0", 4) == 0 || std::memcmp(m, "MM\0*", 4) == 0 ||
                   std::memcmp(m, "II+\0", 4) == 0 || std::memcmp(m, "MM\0+", 4) == 0))
    return "tiff";
  return "raw";
}

// The geometry of a headerless file: --width, --type, --channels given, height from the size.
FileLayout raw_layout(const std::string& path, const RawHints& hints, std::uintmax_t size) {
  if (hints.width <= 0)
    throw Error(ErrorKind::usage,
                "raw input '" + path + "' needs --width (samples per row, a positive number)");
  FileLayout l;
  l.spec = ImageSpec{hints.width, 1, hints.channels, hints.type};
  validate(l.spec);
  const std::uintmax_t row = l.spec.row_bytes();
  if (size == 0) throw Error(ErrorKind::input, "input '" + path + "' is empty");
  if (size % row != 0) {
    std::string msg = "input '" + path + "' is " + std::to_string(size) +
                      " bytes, not a multiple of the row size " + std::to_string(row) +
                      " bytes (width " + std::to_string(hints.width) + " x " +
                      std::to_string(hints.channels) + " channel(s) x " +
                      std::to_string(sample_bytes(hints.type)) + " bytes of " +
                      std::string(name(hints.type)) + ")";
    const std::uintmax_t pixel = l.spec.pixel_bytes();
    if (size % pixel == 0)
      msg += "; widths that fit: " + widths_that_fit(size / pixel, hints.width, 6);
    msg += "; check --width, --type and --channels";
    throw Error(ErrorKind::input, msg);
  }
  const auto rows = static_cast<std::int64_t>(size / row);
  const std::string holds = "input '" + path + "' holds " + std::to_string(rows) +
                            " rows of width " + std::to_string(hints.width);
  if (hints.height > 0 && hints.depth > 0) {
    if (rows / hints.depth != hints.height || rows % hints.depth != 0)
      throw Error(ErrorKind::input, holds + ", but --height " + std::to_string(hints.height) +
                                        " x --depth " + std::to_string(hints.depth) + " says " +
                                        std::to_string(hints.height * hints.depth));
    l.spec.height = hints.height, l.spec.depth = hints.depth;
  } else if (hints.height > 0) {
    // Whole planes of --height rows: a volume of that many planes.
    if (rows % hints.height != 0)
      throw Error(ErrorKind::input,
                  holds + ", but --height says " + std::to_string(hints.height) +
                      (rows > hints.height ? ", and " + std::to_string(rows) +
                                                 " is not a whole number of planes of " +
                                                 std::to_string(hints.height) + " rows"
                                           : std::string()));
    l.spec.height = hints.height, l.spec.depth = rows / hints.height;
  } else if (hints.depth > 0) {
    if (rows % hints.depth != 0)
      throw Error(ErrorKind::input, holds + ", not a whole number of planes: --depth " +
                                        std::to_string(hints.depth) + " does not divide " +
                                        std::to_string(rows) + "; check --depth and --width");
    l.spec.height = rows / hints.depth, l.spec.depth = hints.depth;
  } else {
    l.spec.height = rows;
  }
  validate(l.spec);
  return l;
}

// The geometry of a .npy file from its header; options that contradict it are errors.
FileLayout npy_layout(const std::string& path, int fd, const RawHints& hints, std::uintmax_t size) {
  std::vector<unsigned char> head(std::min<std::uintmax_t>(size, 1 << 20));
  const ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  if (got < 0)
    throw Error(read_error_kind(errno), system_message("cannot read input", path, errno));
  const NpyLayout n =
      parse_npy_header(head.data(), static_cast<std::size_t>(got), path, hints.volume);
  check_hints(hints, n.spec, "the header of '" + path + "', which says");
  const std::uintmax_t need = n.data_offset + n.spec.total_bytes();
  if (size < need)
    throw Error(ErrorKind::input, "input '" + path + "' is truncated: its header describes " +
                                      n.spec.describe() + " (" + std::to_string(need) +
                                      " bytes with the header), the file has " +
                                      std::to_string(size));
  FileLayout l;
  l.spec = n.spec;
  l.offset = n.data_offset;
  l.swap = n.big_endian;
  l.format = "npy";
  return l;
}

}  // namespace

std::string detect_format(const std::string& path) {
  if (is_zarr_store(path)) return "zarr";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "raw";
  const std::string f = format_of(fd);
  ::close(fd);
  return f;
}

std::unique_ptr<Source> open_source(const std::string& path, const RawHints& hints,
                                    std::uint64_t seed) {
  const InputHintsScope scope(hints);
  if (path.rfind("synth:", 0) == 0) {
    if (hints.page != 0 || !hints.pages.empty())
      throw Error(ErrorKind::usage, std::string(hints.page != 0 ? "--page" : "--pages") +
                                        " applies to TIFF input; '" + path + "' is synthetic");
    if (hints.format != "auto")
      throw Error(ErrorKind::usage, "--in-format applies to files; '" + path + "' is synthetic");
    return make_synthetic_source(path.substr(6), hints, seed);
  }
  if (path.empty()) throw Error(ErrorKind::usage, "the input path is empty: name an image file");
  if (hints.format != "auto" && hints.format != "raw" && hints.format != "npy" &&
      hints.format != "tiff" && hints.format != "zarr")
    throw Error(ErrorKind::usage,
                "--in-format takes auto, raw, npy, tiff or zarr, got '" + hints.format + "'");
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw Error(ErrorKind::input, "input '" + path + "' does not exist");
  if (hints.format == "zarr" || (hints.format == "auto" && is_zarr_store(path)))
    return open_zarr_source(path, hints);
  if (hints.zarr_level >= 0 && hints.format != "tiff" &&
      (hints.format != "auto" || !fs::is_regular_file(status) || detect_format(path) != "tiff"))
    throw Error(ErrorKind::usage, "--input-level applies to OME-Zarr and pyramidal TIFF input; '" +
                                      path + "' is neither");
  if (fs::is_directory(status))
    throw Error(ErrorKind::input, "input '" + path +
                                      "' is a directory, not an image file (nor a Zarr store: "
                                      "it holds no .zarray or .zgroup)");
  // Opening a FIFO would wait for a writer, and neither it nor a device has a size to plan with.
  if (!fs::is_regular_file(status))
    throw Error(ErrorKind::input, "input '" + path +
                                      "' is not a regular file (a device, FIFO or socket): ooc "
                                      "reads image files; save the data to a file first");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(read_error_kind(errno), system_message("cannot open input", path, errno));
  FileLayout layout;
  std::uintmax_t size = 0;
  std::string format = hints.format;
  try {
    size = fs::file_size(path, ec);
    if (ec) throw Error(ErrorKind::input, "cannot read the size of input '" + path + "'");
    const std::string magic = format_of(fd);
    if (format == "auto") {
      format = magic;
      if (magic == "raw" && has_extension(path, {".tif", ".tiff", ".btf", ".tf8"}))
        throw Error(ErrorKind::input, "input '" + path +
                                          "' is named like a TIFF file but does not start with "
                                          "TIFF magic bytes (II*, MM*): it is not a TIFF file, or "
                                          "it is damaged; give --in-format raw if it is raw data");
    }
    if (format == "tiff" && magic != "tiff")
      throw Error(ErrorKind::input,
                  "input '" + path + "' is not a TIFF file (it does not start with II* or MM*)");
    if (format == "npy") layout = npy_layout(path, fd, hints, size);
    if (format == "raw") layout = raw_layout(path, hints, size);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (format == "tiff") return open_tiff_source(path, fd, hints, size);
  if (hints.page != 0 || !hints.pages.empty()) {
    ::close(fd);
    throw Error(ErrorKind::usage, std::string(hints.page != 0 ? "--page" : "--pages") +
                                      " applies to TIFF input; '" + path + "' is " + format);
  }
  return make_mapped_source(path, fd, std::move(layout));
}

namespace {
// "x.zarr" or "x.zarr/": a Zarr store.
bool zarr_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return has_extension(path, {".zarr"});
}
}  // namespace

std::string output_format(const std::string& path, const SinkOptions& options) {
  if (path == "null:") return "null";
  std::string f = options.format;
  // .btf and .tf8 are the customary names of BigTIFF files.
  if (f == "auto")
    f = has_extension(path, {".tif", ".tiff", ".btf", ".tf8"}) ? "tiff"
        : has_extension(path, {".npy"})                        ? "npy"
        : zarr_name(path)                                      ? "zarr"
                                                               : "raw";
  if (f != "raw" && f != "npy" && f != "tiff" && f != "zarr")
    throw Error(ErrorKind::usage,
                "--format takes auto, raw, npy, tiff or zarr, got '" + options.format + "'");
  return f;
}

std::int64_t output_row_alignment(const std::string& path, const SinkOptions& options) {
  if (path.empty()) return 1;
  if (output_format(path, options) == "tiff") {
    // A tiled TIFF's tile side; a striped one's strip height depends on the row size: the job
    // asks tiff_row_alignment(spec, options), which knows it.
    if (options.tile > 0) return options.tile;
    return options.pyramid_levels != 0 || options.cog ? 512 : 1;
  }
  if (output_format(path, options) != "zarr") return 1;
  const std::int64_t chunk = options.chunk > 0 ? options.chunk : 512;
  if (options.zarr_version == 3) return options.shard > 0 ? options.shard : 4 * chunk;
  return chunk;
}

std::unique_ptr<Sink> create_sink(const std::string& path, const ImageSpec& spec,
                                  const std::string& input_path, const SinkOptions& options) {
  validate(spec);
  if (path == "null:") return create_null_sink(spec);
  if (path.empty())
    throw Error(ErrorKind::usage, "the output path is empty: name a file (or null: to discard)");
  const std::string f = output_format(path, options);
  const bool big_name = has_extension(path, {".btf", ".tf8"});
  if (f != "zarr" && (options.chunk != 0 || options.shard != 0 || options.zarr_version != 2 ||
                      options.chunk_z != 1 || options.pyramid_z))
    throw Error(ErrorKind::usage,
                "--chunk, --chunk-z, --shard, --zarr-version and --pyramid-z apply to Zarr outputs "
                "(a TIFF output takes "
                "--tile): name the output "
                ".zarr or give --format zarr");
  // Before --pyramid's: a --cog alone asks for levels (-1) too, and must be named.
  if (f != "tiff" && options.cog)
    throw Error(ErrorKind::usage,
                "--cog makes a Cloud-Optimized GeoTIFF: name the output .tif or give --format "
                "tiff");
  if (f != "zarr" && f != "tiff" && options.pyramid_levels != 0)
    throw Error(ErrorKind::usage,
                "--pyramid and --levels apply to Zarr and TIFF outputs: name the output .zarr or "
                ".tif, or give --format");
  if (f != "tiff" && options.predictor != "auto" && !options.predictor.empty())
    throw Error(ErrorKind::usage,
                "--predictor applies to TIFF outputs (with --compress lzw, deflate or zstd): name "
                "the output .tif or give --format tiff");
  if (f == "zarr") {
    if (options.tile != 0 || options.bigtiff != "auto")
      throw Error(ErrorKind::usage,
                  "--tile and --bigtiff apply to TIFF outputs; a Zarr output takes --chunk");
    return create_zarr_sink(path, spec, input_path, options);
  }
  const bool tiff_options = options.tile != 0 ||
                            (!options.compress.empty() && options.compress != "none") ||
                            options.level != -1 || options.bigtiff != "auto";
  if (f != "tiff" && tiff_options)
    throw Error(ErrorKind::usage,
                "--tile, --compress, --level and --bigtiff apply to TIFF and Zarr outputs only: "
                "name the output .tif or .zarr, or give --format");
  if (f == "tiff") {
    // In parts or resumed, each writer keeps its compressed blocks in files of its own beside the
    // temporary, and the finishing step assembles the file (tiff_parts.hpp).
    SinkOptions o = options;
    if (big_name && o.bigtiff == "auto") o.bigtiff = "yes";
    return create_tiff_sink(path, spec, input_path, o);
  }
  return create_file_sink(path, spec, input_path, f == "npy" ? npy_header(spec) : "", options);
}

}  // namespace ooc
