// Journals, manifests and finishing (journal.hpp): the files that let parts, resumed runs and
// --finish agree on one output, and the check of every part before the rename.
#include "journal.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string_view>
#include <vector>

#include "io/digest.hpp"
#include "io/formats.hpp"
#include "io/output_file.hpp"
#include "io/tiff_parts.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"

namespace fs = std::filesystem;

namespace ooc {
namespace detail {

// Where the temporary of `output` lives: beside the file a link points to, as OutputFile does.
std::string temporary_of(std::string output) {
  while (output.size() > 1 && output.back() == '/') output.pop_back();  // "x.zarr/"
  struct stat st {};
  if (::lstat(output.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(output.c_str(), resolved) != nullptr) return partial_path(resolved);
  }
  return partial_path(output);
}

// What identifies the input's content without reading it: a changed file gets a new mtime and
// ctime (ctime cannot be set back by a user, as `touch -r` sets mtime), a replaced one a new inode.
std::string input_identity(const std::string& input, std::uint64_t seed, int zarr_level) {
  struct stat st {};
  if (input.rfind("synth:", 0) == 0) return input + " seed " + std::to_string(seed);
  if (::stat(input.c_str(), &st) != 0) return input;
  // A Zarr store: its directory's own times miss a chunk replaced inside it.
  if (S_ISDIR(st.st_mode)) return zarr_input_identity(input, zarr_level);
  std::ostringstream o;
  o << input << " size " << st.st_size << " mtime " << st.st_mtim.tv_sec << "."
    << st.st_mtim.tv_nsec << " ctime " << st.st_ctim.tv_sec << "." << st.st_ctim.tv_nsec
    << " inode " << st.st_ino;
  return o.str();
}

// The text with a last line "check DIGEST" over everything before it.
std::string with_check(const std::string& body) {
  return body + "check " + detail::Digest().add(body).hex() + "\n";
}

// A journal or manifest, its checksum verified; throws an input Error naming what is wrong.
std::vector<std::string> read_checked(const std::string& path, const char* magic) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, system_message("cannot read", path, errno));
  std::string text(64 * 1024 + 1, '\0');  // ours are a few hundred bytes
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  const std::size_t check = text.rfind("check ");
  if (text.rfind(magic, 0) != 0) {
    if (text.rfind("ooc-journal ", 0) == 0)
      throw Error(ErrorKind::input, "it was written by another version of ooc");
    throw Error(ErrorKind::input, "not an ooc journal");
  }
  if (check == std::string::npos || (check > 0 && text[check - 1] != '\n') ||
      text.compare(check + 6, std::string::npos,
                   detail::Digest().add(std::string_view(text).substr(0, check)).hex() + "\n") != 0)
    throw Error(ErrorKind::input, "its checksum does not match: it was edited or cut short");
  std::vector<std::string> lines;
  std::istringstream s(text.substr(0, check));
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

std::string line_value(const std::vector<std::string>& lines, std::size_t i,
                       const std::string& key) {
  if (i >= lines.size() || lines[i].rfind(key + " ", 0) != 0)
    throw Error(ErrorKind::input, "no '" + key + "' line");
  return lines[i].substr(key.size() + 1);
}

namespace {

// A fingerprint's fields: its parts between ", " and "; ", a parenthesis kept whole ("taps
// (radius 96, 96)" is one field).
std::vector<std::string> fingerprint_fields(const std::string& text) {
  std::vector<std::string> out;
  std::string field;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    depth += c == '(' ? 1 : c == ')' && depth > 0 ? -1 : 0;
    if (depth == 0 && (c == ',' || c == ';') && i + 1 < text.size() && text[i + 1] == ' ') {
      out.push_back(field);
      field.clear();
      ++i;
      continue;
    }
    field += c;
  }
  out.push_back(field);
  return out;
}

}  // namespace

// What differs between two fingerprints, field by field: "was: border reflect; now: border
// nearest"; the whole texts where no field tells them apart.
std::string options_difference(const std::string& was, const std::string& now) {
  const std::vector<std::string> a = fingerprint_fields(was), b = fingerprint_fields(now);
  const auto only = [](const std::vector<std::string>& x, const std::vector<std::string>& y) {
    std::string out;
    for (const std::string& f : x)
      if (std::find(y.begin(), y.end(), f) == y.end()) out += (out.empty() ? "" : ", ") + f;
    return out;
  };
  std::string from = only(a, b), to = only(b, a);
  if (from.empty() && to.empty()) from = was, to = now;
  return "was: " + (from.empty() ? std::string("-") : from) +
         "; now: " + (to.empty() ? std::string("-") : to);
}

JournalRecord read_journal(const std::string& path) {
  try {
    const std::vector<std::string> lines = read_checked(path, kMagic);
    JournalRecord r;
    r.path = path;
    r.input = line_value(lines, 1, "input");
    r.options = line_value(lines, 2, "options");
    std::istringstream part(line_value(lines, 3, "part")), rows(line_value(lines, 4, "rows")),
        done(line_value(lines, 5, "done"));
    if (!(part >> r.part >> r.parts) || !(rows >> r.begin >> r.end >> r.height) ||
        !(done >> r.done) || r.parts < 1 || r.begin < 0 || r.end <= r.begin || r.height < r.end ||
        r.done < r.begin || r.done > r.end)
      throw Error(ErrorKind::input, "bad numbers");
    return r;
  } catch (const Error& e) {
    throw Error(ErrorKind::input,
                "journal '" + path + "' cannot be trusted (" + e.what() +
                    "): remove it and run its rows again (without --resume), or remove '" +
                    path.substr(0, path.rfind(".partial") + 8) + "*' to start over");
  }
}

std::string journal_name(const std::string& temporary, int part, int parts, std::int64_t begin,
                         std::int64_t end, bool explicit_rows) {
  if (explicit_rows)
    return temporary + ".rows-" + std::to_string(begin) + "-" + std::to_string(end) + ".journal";
  if (parts > 1)
    return temporary + ".part-" + std::to_string(part) + "-of-" + std::to_string(parts) +
           ".journal";
  return temporary + ".journal";
}

// The journals beside `temporary` (TEMP.journal, TEMP.part-I-of-N.journal, TEMP.rows-A-B.journal).
std::vector<std::string> journal_paths(const std::string& temporary) {
  const fs::path tp(temporary);
  const fs::path dir = tp.has_parent_path() ? tp.parent_path() : fs::path(".");
  const std::string stem = tp.filename().string() + ".";
  std::vector<std::string> paths;
  std::error_code ec;
  // A directory that does not exist holds no journals; creating the output then says why.
  if (!fs::is_directory(dir, ec)) return {};
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) == 0 && name.size() >= stem.size() + 7 &&
        name.compare(name.size() - 8, 8, ".journal") == 0)
      // Named as the temporary is ("x.partial.journal", not "./x.partial.journal"), so that
      // a job finds its own journal among them.
      paths.push_back(tp.has_parent_path() ? entry.path().string() : name);
  }
  if (ec) throw Error(ErrorKind::io, system_message("cannot list", dir.string(), ec.value()));
  std::sort(paths.begin(), paths.end());
  return paths;
}

// TEMP.pass-I, a part's TEMP.pass-I.rows-A, and what a stage saved beside them (label's table).
void remove_states(const std::string& temporary) {
  const fs::path tp(temporary);
  const fs::path dir = tp.has_parent_path() ? tp.parent_path() : fs::path(".");
  const std::string stem = tp.filename().string() + ".pass-";
  std::error_code ec;
  std::vector<fs::path> states;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().rfind(stem, 0) == 0) states.push_back(entry.path());
  for (const fs::path& p : states) fs::remove(p, ec);
}

std::string manifest_path(const std::string& temporary) {
  return temporary + ".job";
}

// Binds the temporary to one job (input, options, height): the first run of a job creates the
// manifest, atomically (link() fails when another made it first); every later part, resumed
// run or finish compares with it. Parts of another input or other options are refused before
// they touch the file. True when this call made it.
bool claim_manifest(const std::string& temporary, const std::string& output,
                    const std::string& input, const std::string& options, std::int64_t height) {
  const std::string path = manifest_path(temporary);
  std::ostringstream o;
  o << kManifestMagic << "\ninput " << input << "\noptions " << options << "\nheight " << height
    << "\n";
  const std::string text = with_check(o.str());
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<std::string> lines;
    // Present (another part made it, whole: link() is atomic), or to be made. Asked before the
    // read: a part that finds none, then reads one another part made meanwhile, must not take
    // the failed read for damage.
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      try {
        lines = read_checked(path, kManifestMagic);
      } catch (const Error&) {
        throw Error(ErrorKind::input, "'" + path + "', which says which job '" + output +
                                          "' belongs to, is damaged: remove '" + temporary +
                                          "*' to start over");
      }
    }
    if (!lines.empty()) {
      const std::string was_input = lines.size() > 1 ? line_value(lines, 1, "input") : "";
      const std::string was_options = lines.size() > 2 ? line_value(lines, 2, "options") : "";
      const std::string was_height = lines.size() > 3 ? line_value(lines, 3, "height") : "";
      std::string differs;
      if (was_input != input)
        differs = "another input (was: " + was_input + "; now: " + input + ")";
      else if (was_options != options)
        differs = "options";
      else if (was_height != std::to_string(height))
        differs = "another height (was: " + was_height + "; now: " + std::to_string(height) + ")";
      // A manifest without a temporary or journals is what an ended job left: not a job.
      if (!differs.empty() && attempt == 0 && ::lstat(temporary.c_str(), &st) != 0 &&
          journal_paths(temporary).empty()) {
        ::unlink(path.c_str());
        continue;
      }
      // Other options: the job's, named field by field, as a resumed run's journal says them.
      if (differs == "options")
        throw Error(ErrorKind::usage,
                    "output '" + output + "' is being made by another job whose options differ (" +
                        options_difference(was_options, options) +
                        "): run with that job's options (every part alike; --resume goes on "
                        "only with them), finish that job (oocconv --finish " +
                        output + "), remove '" + temporary +
                        "*' to start over, or name another output");
      if (!differs.empty())
        throw Error(ErrorKind::usage,
                    "output '" + output + "' is being made by another job, with " + differs +
                        ": finish that job (oocconv --finish " + output + "), remove '" +
                        temporary + "*' to start over, or name another output");
      return false;
    }
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) throw Error(ErrorKind::io, system_message("cannot write", tmp, errno));
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    const int err = errno;
    ::close(fd);
    const int rc = ok ? ::link(tmp.c_str(), path.c_str()) : -1;
    const int link_err = errno;
    ::unlink(tmp.c_str());
    if (!ok) throw Error(ErrorKind::io, system_message("cannot write", tmp, err));
    if (rc == 0) return true;
    if (link_err != EEXIST)
      throw Error(ErrorKind::io, system_message("cannot create", path, link_err));
    // Another part made it first: compare with it.
  }
  return false;
}

}  // namespace detail

using namespace detail;

std::string finish_output(const std::string& output) {
  const std::string temporary = temporary_of(output);
  std::vector<JournalRecord> journals;
  for (const std::string& path : journal_paths(temporary)) journals.push_back(read_journal(path));
  if (journals.empty())
    throw Error(ErrorKind::input, "output '" + output + "' has no parts to finish (no '" +
                                      temporary + ".*.journal'): run the parts first");
  // A part still writing holds a lock on its rows: say so, rather than that it stopped.
  if (const pid_t pid = temporary_writer(temporary); pid > 0)
    throw Error(ErrorKind::io,
                "output '" + output + "' is still being written: a part is running (pid " +
                    std::to_string(pid) + " holds '" + temporary +
                    "'); wait for every part to end, then --finish again",
                true);
  const JournalRecord& first = journals.front();
  for (const JournalRecord& r : journals)
    if (r.input != first.input || r.options != first.options || r.height != first.height)
      throw Error(ErrorKind::input, "the parts of '" + output +
                                        "' come from different inputs or options ('" + first.path +
                                        "' and '" + r.path + "'): run them again alike");
  claim_manifest(temporary, output, first.input, first.options, first.height);
  // The rows on disk are the union of what every journal says is done, whichever split (parts,
  // --rows, MPI ranks of an earlier run with another count) wrote them.
  std::vector<std::pair<std::int64_t, std::int64_t>> done;
  for (const JournalRecord& r : journals)
    if (r.done > r.begin) done.emplace_back(r.begin, r.done);
  std::sort(done.begin(), done.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> gaps;
  std::int64_t covered = 0;
  for (const auto& [a, b] : done) {
    if (a > covered) gaps.emplace_back(covered, a);
    covered = std::max(covered, b);
  }
  if (covered < first.height) gaps.emplace_back(covered, first.height);
  if (!gaps.empty()) {
    std::string missing;
    auto add = [&](const std::string& what) { missing += (missing.empty() ? "" : "; ") + what; };
    std::sort(journals.begin(), journals.end(),
              [](const auto& x, const auto& y) { return x.begin < y.begin; });
    for (const auto& [a, b] : gaps) {
      bool named = false;
      for (const JournalRecord& r : journals)
        if (r.done < r.end && r.begin < b && r.end > a) {
          add(r.what() + " stopped at row " + std::to_string(r.done));
          named = true;
        }
      if (named) continue;
      std::string which;
      // Parts of the first journal's split that never started are named by their number.
      if (first.parts > 1)
        for (int i = 0; i < first.parts; ++i) {
          const auto cut = [&](int k) {
            return static_cast<std::int64_t>(static_cast<__int128>(first.height) * k / first.parts);
          };
          if (cut(i) < b && cut(i + 1) > a)
            which += (which.empty() ? " (part " : ", part ") + std::to_string(i) + "/" +
                     std::to_string(first.parts);
        }
      add("rows " + std::to_string(a) + ":" + std::to_string(b) + " have no part" +
          (which.empty() ? "" : which + " has not run)"));
    }
    throw Error(ErrorKind::input,
                "output '" + output + "' is not complete: " + missing +
                    ". Run those parts (with --resume), then --finish again",
                true);
  }
  if (is_zarr_temporary(temporary)) {
    finish_zarr_store(output, temporary);
  } else if (is_tiff_parts_temporary(temporary)) {
    finish_tiff_parts(output, temporary);
  } else {
    // Locking the whole temporary waits for no one: a part starting now makes this fail.
    OutputFile file(output, "", OutputMode::resume, 0, 0, true);
    file.commit();
  }
  for (const JournalRecord& r : journals) ::unlink(r.path.c_str());
  ::unlink(manifest_path(temporary).c_str());
  remove_states(temporary);
  return "finished '" + output + "' from " + std::to_string(journals.size()) + " part(s), " +
         std::to_string(first.height) + " rows";
}

}  // namespace ooc
