// The files beside an output's temporary that let the runs of one job agree (journal.cpp): a
// journal per part (which rows are on disk, and the fingerprint of the input and the options), the
// manifest that binds the temporary to one job, and the checks of --finish.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ooc::detail {

// Version 2 added the checksum and the input's ctime.
inline constexpr const char* kMagic = "ooc-journal 2";
inline constexpr const char* kManifestMagic = "ooc-job 1";

struct JournalRecord {
  std::string path, input, options;
  int part = 0, parts = 1;
  // Rows [begin, done) of this job's rows [begin, end) are on disk, from this run or others of
  // the same job (every run of one job writes the same bytes to a row).
  std::int64_t begin = 0, end = 0, done = 0, height = 0;
  std::string what() const {
    return (parts > 1 ? "part " + std::to_string(part) + "/" + std::to_string(parts)
                      : std::string("the run")) +
           " (rows " + std::to_string(begin) + ":" + std::to_string(end) + ")";
  }
};

// Where the temporary of `output` lives: beside the file a link points to, as OutputFile does.
std::string temporary_of(std::string output);
// What identifies the input's content without reading it (size, mtime, ctime, inode; a synth:
// pattern's seed, a Zarr level).
std::string input_identity(const std::string& input, std::uint64_t seed, int zarr_level);
// The text with a last line "check DIGEST" over everything before it.
std::string with_check(const std::string& body);
// A journal or manifest, its checksum verified; throws an input Error naming what is wrong.
std::vector<std::string> read_checked(const std::string& path, const char* magic);
std::string line_value(const std::vector<std::string>& lines, std::size_t i,
                       const std::string& key);
// What differs between two fingerprints, field by field.
std::string options_difference(const std::string& was, const std::string& now);
JournalRecord read_journal(const std::string& path);
std::string journal_name(const std::string& temporary, int part, int parts, std::int64_t begin,
                         std::int64_t end, bool explicit_rows);
// The journals beside `temporary` (TEMP.journal, TEMP.part-I-of-N.journal, TEMP.rows-A-B.journal).
std::vector<std::string> journal_paths(const std::string& temporary);
std::string manifest_path(const std::string& temporary);
// Removes the state files a job may leave beside its temporary (pipeline passes before the last).
void remove_states(const std::string& temporary);
// Binds the temporary to one job (input, options, height); true when this call made the
// manifest.
bool claim_manifest(const std::string& temporary, const std::string& output,
                    const std::string& input, const std::string& options, std::int64_t height);

}  // namespace ooc::detail
