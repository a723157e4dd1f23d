// Private to the TIFF writer: the writers' files of an output made in parts or resumed
// (tiff_parts.hpp says what they are for; tiff_parts.cpp makes and reads them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc::detail {

// ---- Writers' files, for outputs made in parts or resumed (see tiff_parts.hpp) ----------------
// Beside the temporary TEMP (OUT.partial): TEMP.tiff-parts (the settings every writer shares,
// which the assembly rebuilds the writer from), TEMP.rows-A-B.tiff-blocks (one writer's
// compressed blocks, appended) with TEMP.rows-A-B.tiff-index (what each block is and where it
// lies, a record per block, appended after the block: a record never names bytes not written),
// and TEMP.tiff-edge-L<level>-<first>-<end> (raw rows of a row of blocks no writer made whole).

std::int64_t tile_side(const SinkOptions& o);

std::int64_t strip_rows(const ImageSpec& spec);

constexpr std::uint32_t kIndexMagic = 0x6b6c426f;  // "oBlk"
struct IndexRecord {
  std::uint32_t magic = kIndexMagic, level = 0;
  std::uint64_t index = 0, offset = 0, size = 0;
};

static_assert(sizeof(IndexRecord) == 32);

// Where the temporary of `output` lives: beside the file a link points to (as OutputFile and
// the job's journals have it).
std::string temporary_for(const std::string& output);

std::string settings_path(const std::string& temp);

std::string range_stem(const std::string& temp, std::int64_t lo, std::int64_t hi);

constexpr const char* kBlocksSuffix = ".tiff-blocks";

constexpr const char* kIndexSuffix = ".tiff-index";

std::string edge_path(const std::string& temp, int k, std::int64_t lo, std::int64_t hi);

// What every writer of one output must agree on, and all the assembly needs to write the file as
// one process would: the image, the layout options and the tags carried over from the input.
std::string settings_text(const ImageSpec& s, const SinkOptions& o);

// Writes all of `data` at offset `at` (pwrite, retried on EINTR); an io Error naming `name`.
void write_all(int fd, const void* data, std::size_t len, std::uint64_t at,
               const std::string& name);

// Written beside and renamed: a file of rows appears whole or not at all.
void write_file_atomic(const std::string& path, const void* data, std::size_t len);

void remove_part_files(const std::string& temp);

// Records `text` as the settings of the writers of `temp`, or checks it against the settings
// another writer recorded first (made aside and linked: a reader never sees half of it).
void claim_settings(const std::string& temp, const std::string& text);

}  // namespace ooc::detail
