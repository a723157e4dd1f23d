// Sources and sinks of image rows: raw, .npy and TIFF files, synthetic images, the null sink.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/image.hpp"

namespace ooc {

// Memory that rows handed out by a Source live in, owned by one pipeline slot and released when the
// slot's band is done: mapped windows of a file, or a reused buffer for rows made on the fly.
class RowArena {
 public:
  RowArena();
  ~RowArena();
  RowArena(RowArena&&) noexcept;
  RowArena& operator=(RowArena&&) noexcept;

  std::byte* take(std::size_t bytes);  // from the reused buffer; valid until release()
  // Holds a mapped window (or anything the rows live in) until release().
  void keep(std::shared_ptr<const void> mapping);
  void release();  // unmaps windows and recycles the buffer

 private:
  struct State;  // the buffers and kept mappings (arena.cpp), made at first use
  State& state();
  std::unique_ptr<State> state_;
};

// GeoTIFF's and GDAL's georeferencing tags, as stored (empty: none given). They stay true of an
// output on the same pixel grid: same size, same orientation, rows in the same order.
struct GeoTags {
  std::vector<double> model_pixel_scale;         // 33550 ModelPixelScale, 3 values
  std::vector<double> model_tiepoint;            // 33922 ModelTiepoint, 6 per point
  std::vector<double> model_transformation;      // 34264 ModelTransformation, 16 values
  std::vector<std::uint16_t> geo_key_directory;  // 34735 GeoKeyDirectory, 4 per key + header
  std::vector<double> geo_double_params;         // 34736 GeoDoubleParams
  std::string geo_ascii_params;                  // 34737 GeoAsciiParams
  std::string gdal_metadata;                     // 42112 GDAL_METADATA (XML)
  std::string gdal_nodata;                       // 42113 GDAL_NODATA (a number as text)

  bool empty() const noexcept {
    return model_pixel_scale.empty() && model_tiepoint.empty() && model_transformation.empty() &&
           geo_key_directory.empty() && geo_double_params.empty() && geo_ascii_params.empty() &&
           gdal_metadata.empty() && gdal_nodata.empty();
  }
};

// Descriptive tags an output carries over from its input (TIFF), each optional.
struct Metadata {
  int photometric = -1;                       // TIFF PhotometricInterpretation; -1: none given
  std::vector<std::uint16_t> extra_samples;   // TIFF ExtraSamples (alpha kinds)
  double x_resolution = 0, y_resolution = 0;  // 0: none given
  int resolution_unit = 0;                    // TIFF ResolutionUnit; 0: none given
  std::string description;                    // TIFF ImageDescription
  int orientation = 0;  // TIFF Orientation (filtering runs in stored order); 0: none given
  GeoTags geo;
  // Where the input says it: OME-Zarr's scale of the level read, OME-XML's PhysicalSize, an
  // ImageJ description's spacing with the resolution tags.
  VoxelSize voxel;
};

class Source {
 public:
  virtual ~Source() = default;
  virtual const ImageSpec& spec() const noexcept = 0;
  virtual std::string describe() const = 0;
  // How the file stores the image (TIFF: strips or tiles, compression, BigTIFF), for oocinfo.
  virtual std::string layout() const { return {}; }
  virtual const Metadata& metadata() const noexcept;
  // Rows [y0, y0 + n) of the image (all inside it), contiguous at spec().row_bytes() apart, valid
  // until arena.release(). Called from the serial read stage; may use threads inside.
  virtual const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) = 0;
  // Copies rows [y0, y0 + n) into dst (contiguous). Safe to call from several threads at once:
  // backends that stage rows themselves (pinned memory for a GPU) read in parallel through it.
  virtual void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst);
  // False where rows come from a decoder that works ahead in order on its own threads
  // (compressed TIFF): such a source is read one band at a time, in order, in one call.
  virtual bool parallel_reads() const { return true; }
  // The rows from y0 down will be read soon: start reading or decoding them now, holding at most
  // max_bytes for it, so that the work overlaps the job's setup (a GPU context, pinned memory).
  // A hint; it may do nothing.
  virtual void prefetch(std::int64_t /*y0*/, std::size_t /*max_bytes*/) {}
  // Memory the source holds besides the rows it hands out (decoded blocks read ahead), at most,
  // while `readers` threads read bands of `band_rows` rows; the planner counts it.
  virtual std::size_t buffer_bytes(std::int64_t /*band_rows*/, int /*readers*/) const { return 0; }
  // How the bytes are read, for --stats: "mmap" (mapped or pread, through the page cache),
  // "direct" (O_DIRECT), "decoded" (a decoder's reads) or "generated".
  virtual std::string io_method() const { return "decoded"; }
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual const ImageSpec& spec() const noexcept = 0;
  virtual std::string describe() const = 0;
  // Rows [y0, y0 + n), `stride` bytes apart. Called from the serial write stage, rows in order.
  virtual void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                          std::size_t stride) = 0;
  // Makes the output visible under its final name. Without commit() the destructor removes it.
  virtual void commit() = 0;
  // A resumable stop: flushes what was written to the disk and leaves the temporary (and its
  // journal, the job's business) for --resume. Outputs that cannot resume throw a usage Error.
  virtual void keep() { throw Error(ErrorKind::usage, describe() + " cannot be resumed"); }
  // After keep(): the file that holds what was kept, where that is not the output's temporary
  // (a TIFF keeps its blocks in a file of their own); empty otherwise.
  virtual std::string kept_path() const { return {}; }
  // Memory the sink holds besides the rows handed to it (rows gathered for compression), at
  // most; the planner counts it.
  virtual std::size_t buffer_bytes() const { return 0; }
  // Of the rows handed over so far ([first, written_end)), the end of those a rerun need not
  // redo were the process killed now: a journal records it. Sinks that gather rows into larger
  // units (Zarr chunk rows) say less than written_end.
  virtual std::int64_t durable_end(std::int64_t first, std::int64_t written_end) const {
    (void)first;
    return written_end;
  }
  // How the bytes are written, for --stats: "buffered" (through the page cache), "direct"
  // (O_DIRECT) or "none".
  virtual std::string io_method() const { return "buffered"; }
  // The TIFF predictor the blocks are encoded with, for --stats: "none", "horizontal" or
  // "float"; empty for formats without one.
  virtual std::string predictor() const { return {}; }
  // The sink's own memory for rows [y0, y0 + n), spec().row_bytes() apart, where the CPU's kernels
  // may write a band's rows directly (no copy through a slot), or null. write_rows is still called
  // for the band, with this pointer. Called from the parallel compute stage.
  virtual std::byte* rows_in_place(std::int64_t y0, std::int64_t n) {
    (void)y0;
    (void)n;
    return nullptr;
  }
  // Whether write_rows may take rows in any order, each row once (written at its offset, or
  // discarded): a volume's slabs then hand each band over as it is done instead of gathering the
  // slab's planes in memory. durable_end is still asked only at the ends of slabs.
  virtual bool any_order() const { return false; }
};

// What the command line says about an input that has no header (raw files, synthetic images).
struct RawHints {
  std::int64_t width = 0;   // required for raw files
  std::int64_t height = 0;  // 0: inferred from the file size
  int channels = 1;
  SampleType type = SampleType::f32;
  // Whether --type / --channels were given: a file header then must agree with them.
  bool type_given = false;
  bool channels_given = false;
  // Planes of a volume (raw: --width and --height given, the planes the file holds; .npy and TIFF:
  // checked against the header). 0: 1 unless inferred.
  std::int64_t depth = 0;
  // .npy: a 3-D array is (z, y, x), not (y, x, c), even where its last axis has 1 to 4 entries.
  bool volume = false;
  std::string format = "auto";  // auto (magic bytes, or a Zarr directory), raw, npy, tiff or zarr
  int page = 0;                 // TIFF: the image (directory) to read, from 0
  bool page_given = false;      // --page given: that page alone, a plane, even in a z-stack
  // TIFF: the planes of a z-stack to read, "A:B" as a Python slice (half open, either end
  // optional, negative from the end); empty: every plane.
  std::string pages = {};
  int zarr_level = -1;  // OME-Zarr: the level (dataset) to read; -1: level 0
  int threads = 0;      // TIFF: threads that decode strips and tiles (0: all cores)
  // Raw, .npy and uncompressed contiguous TIFF: "mmap" (the page cache), "direct" (O_DIRECT,
  // bypassing it) or "auto" (direct for a file mostly not cached and larger than io_auto_bytes).
  std::string io = "auto";
  std::uint64_t io_auto_bytes = 0;  // 0: half the memory the process may use (RAM or cgroup)
};

// Opens `path` for reading: .npy and TIFF are recognized by their magic bytes (hints.format
// overrides), a directory holding .zarray or .zgroup is a Zarr v2 array or OME-Zarr group, any
// other file is raw. Header fields beat the hints; a hint that contradicts the
// header is an error naming both. "synth:PATTERN" (noise, gradient, checker, gaussian-spots,
// low-contrast, low-rank[:R[:S]]) makes a deterministic image of the hinted size instead of reading
// a file.
std::unique_ptr<Source> open_source(const std::string& path, const RawHints& hints,
                                    std::uint64_t seed = 1);
// "npy", "tiff" or "raw", from a file's first bytes ("raw" when it cannot be read); "zarr" for a
// Zarr store's directory.
std::string detect_format(const std::string& path);

// How to write an output.
// How an output's temporary is opened. fresh: created (a leftover of an interrupted run is
// replaced); resume: the leftover is continued (its journal was checked); shared: the parts of a
// multi-process run write their rows into one temporary, created by whichever comes first.
enum class OutputMode { fresh, resume, shared };

struct SinkOptions {
  std::string format = "auto";  // auto (from the extension: .tif/.tiff, .npy, .zarr, else raw)
  std::int64_t tile = 0;        // TIFF: tile side (a multiple of 16); 0: strips
  // TIFF: none, lzw, deflate, zstd or packbits; Zarr: blosc, blosc-zstd, zstd, zlib, gzip or
  // none. Empty: the format's default (TIFF none, Zarr blosc).
  std::string compress;
  int level = -1;          // deflate/zlib 1-9, zstd 1-22, blosc 0-9; -1: the codec's default
  std::int64_t chunk = 0;  // Zarr: chunk side (rows and columns); 0: 512
  int zarr_version = 2;    // Zarr 2 (OME-Zarr 0.4) or 3 (OME-Zarr 0.5, sharded)
  std::int64_t shard = 0;  // Zarr 3: shard side, a multiple of chunk; 0: 4 chunks
  // Zarr volumes: planes of a chunk (and of a shard); levels halving z too (2 x 2 x 2 means).
  std::int64_t chunk_z = 1;
  bool pyramid_z = false;
  // TIFF with lzw, deflate or zstd: auto (horizontal), none, horizontal (2) or float (3, floating
  // point samples only). Other codecs take no predictor (auto: none).
  std::string predictor = "auto";
  // Reduced-resolution levels below level 0 (Zarr: datasets 1..n; TIFF: SubIFDs or COG
  // overviews): 0 none, -1 until the smaller side is under 256.
  int pyramid_levels = 0;
  // TIFF: a Cloud-Optimized GeoTIFF (overviews as reduced-resolution IFDs after the first, IFDs
  // at the front, smallest overview's tiles first) instead of levels as SubIFDs.
  bool cog = false;
  std::string bigtiff = "auto";  // TIFF: auto (when the file could pass 4 GiB), yes or no
  Metadata metadata;             // TIFF: tags carried over from the input
  // --nodata given: recorded as TIFF's GDAL_NODATA (every level) and Zarr's fill_value, beating
  // metadata's (NaN: nan). None: the input's tag where it has one.
  std::optional<double> nodata;
  bool nodata_given = false;  // --nodata given (none included): the input's tag is not taken
  // --voxel-size: recorded in OME-Zarr and OME-TIFF outputs instead of metadata.voxel.
  VoxelSize voxel;
  std::size_t mem_limit = 0;  // the job's --mem-limit (0: the default): buffers stay within it
  int threads = 0;            // threads that compress (0: all cores)
  OutputMode mode = OutputMode::fresh;
  // The rows this process writes (shared mode locks only those); row_end 0: to the bottom.
  std::int64_t row_begin = 0, row_end = 0;
  // Whether the temporary outlives a signal (a journaled, resumable run): then only an error
  // removes it, and a killed run leaves it for --resume.
  bool keep_on_signal = false;
  // Whether to go on where the file system cannot lock (--no-locks): by default such a file
  // system is refused, since two writers of one output would then go unnoticed.
  bool no_locks = false;
  // Raw and .npy: "mmap" (buffered writes through the page cache; the name is --io's), "direct"
  // (O_DIRECT) or "auto" (direct for an output larger than io_auto_bytes). TIFF and Zarr outputs
  // are written buffered.
  std::string io = "auto";
  std::uint64_t io_auto_bytes = 0;  // 0: half the memory the process may use (RAM or cgroup)
};

// "raw", "npy", "tiff", "zarr" (by --format, else the extension) or "null" (null:); throws a
// usage Error for an unknown --format.
std::string output_format(const std::string& path, const SinkOptions& options);

// Creates `path` for writing under a temporary name beside it; "null:" discards the rows.
// Refuses an output that is the input (same file, also through links). Checks the free space up
// front (raw, .npy) so that a full disk is reported before any work is done.
std::unique_ptr<Sink> create_sink(const std::string& path, const ImageSpec& spec,
                                  const std::string& input_path, const SinkOptions& options = {});

// The temporary name an output is written under until it is complete.
std::string partial_path(const std::string& output);

// "z,y,x" or "y,x" micrometres (each finite and above 0) as `what` (the option's name) takes
// it; a usage Error otherwise.
VoxelSize parse_voxel_size(const std::string& text, const std::string& what);
// Micrometres in one `unit` (NGFF's names, OME's and ImageJ's symbols: "micrometer", "um",
// "micron", "nm", ...); 0 for a unit that is not a length ("pixel", empty).
double micrometres_per(const std::string& unit);
// "2 x 0.5 x 0.5 um (z, y, x), from OME-XML" for oocinfo and messages.
std::string describe_voxel(const VoxelSize& v);
// The voxel size an output records: --voxel-size where given, else the input's.
inline const VoxelSize& output_voxel(const SinkOptions& o) {
  return o.voxel.known() ? o.voxel : o.metadata.voxel;
}

// `type` and `channels` as given (none: not given). A type not given is the tool's default; what
// was not given yields to a file's header, what was given must agree with it.
inline void set_sample_hints(RawHints& hints, const std::optional<std::string>& type,
                             const std::string& default_type, std::optional<int> channels) {
  hints.type = parse_sample_type(type.value_or(default_type));
  hints.type_given = type.has_value();
  if (channels) hints.channels = *channels;
  hints.channels_given = channels.has_value();
}

}  // namespace ooc
