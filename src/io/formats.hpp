// What the file readers and writers share inside the library: where an image lies in a file, the
// mapped reader every headerless or uncompressed layout ends up in, and the output path checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc {

// Where an image lies in a file: geometry, first byte, byte order.
struct FileLayout {
  ImageSpec spec;
  std::uint64_t offset = 0;
  bool swap = false;  // big-endian samples
  std::string format = "raw";
  std::string layout;  // for Source::layout()
  Metadata metadata;
};

// Rows mapped (or pread) at layout.offset; takes ownership of fd.
std::unique_ptr<Source> make_mapped_source(const std::string& path, int fd, FileLayout layout);

// The --io choice of the input open_source is opening, for make_mapped_source: tiff_read.cpp
// hands its uncompressed contiguous strips to make_mapped_source without the hints. open_source
// (open.cpp) sets it for the time of the open; make_mapped_source (raw_source.cpp) reads it.
struct InputHintsScope {
  explicit InputHintsScope(const RawHints& h);
  ~InputHintsScope();
  InputHintsScope(const InputHintsScope&) = delete;
  InputHintsScope& operator=(const InputHintsScope&) = delete;
  const RawHints* saved;
};

// Raw and .npy outputs (file_sink.cpp): `header` (a .npy header, or empty), then the rows, written
// into OUT.partial and renamed into place at the end. null: discards the rows.
std::unique_ptr<Sink> create_file_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, std::string header,
                                       const SinkOptions& options);
std::unique_ptr<Sink> create_null_sink(const ImageSpec& spec);

// The rows a part of this output must begin at a multiple of (a Zarr chunk row; 1 otherwise).
std::int64_t output_row_alignment(const std::string& path, const SinkOptions& options);

// Reverses the bytes of each of `samples` samples of `width` bytes (big endian <-> little).
void reverse_bytes(std::byte* p, std::size_t samples, std::size_t width);

// Throws a usage Error naming both values when a --width/--height/--type/--channels hint given
// for a file contradicts what its header says; `authority` names the header ("the TIFF tags of
// 'x.tif', which say").
void check_hints(const RawHints& hints, const ImageSpec& spec, const std::string& authority);

// An input that cannot be opened or read because of the machine (out of file descriptors or
// memory, an I/O error) is an I/O error, exit 4; otherwise the input itself is at fault, exit 3.
ErrorKind read_error_kind(int err) noexcept;

// ": free some space or write elsewhere" and the like, for a write that failed with `err`.
std::string full_hint(int err);

// TIFF and BigTIFF (tiff_read.cpp, tiff_sink.cpp). `fd` is open on `path` and owned by the callee.
std::unique_ptr<Source> open_tiff_source(const std::string& path, int fd, const RawHints& hints,
                                         std::uintmax_t file_size);
std::unique_ptr<Sink> create_tiff_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, const SinkOptions& options);

// Zarr v2 / OME-Zarr 0.4 stores (zarr_write.cpp). A store is made in a directory beside its
// final name (OUT.partial) by one writer or by several parts, and joined by finish_zarr_store.
std::unique_ptr<Sink> create_zarr_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, const SinkOptions& options);
// Whether `temporary` is a Zarr store under construction (a directory of ours).
bool is_zarr_temporary(const std::string& temporary);
// Writes what the parts left at their boundaries (rows of chunks and levels that straddle
// them), checks that every chunk of every level is there, writes the metadata and renames the
// store into place. Throws an input Error naming what is missing.
void finish_zarr_store(const std::string& output, const std::string& temporary);

// Zarr v2 (zarr_read.cpp): a directory holding .zarray (an array) or .zgroup (a group; OME-Zarr
// multiscales give its levels).
bool is_zarr_store(const std::string& path);
std::unique_ptr<Source> open_zarr_source(const std::string& path, const RawHints& hints);
// For oocinfo: one line per array of the store (shape, dtype, chunks, codec, and an OME-Zarr
// level's path and scale), after a line describing the group.
std::vector<std::string> describe_zarr_store(const std::string& path);
// What a resumed run checks its Zarr input against (the journal's "input" line): the store, the
// level, and the names, sizes, times and inodes of every file of the array read.
std::string zarr_input_identity(const std::string& path, int level);

}  // namespace ooc
