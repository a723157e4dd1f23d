// The job driver shared by the tools (see job.hpp): parts, journals, resume and finishing.
#include "ooc/job.hpp"

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
#include <sstream>

#include "io/output_file.hpp"
#include "ooc/error.hpp"

namespace fs = std::filesystem;

namespace ooc {
namespace {

constexpr const char* kMagic = "ooc-journal 1";

// Where the temporary of `output` lives: beside the file a link points to, as OutputFile does.
std::string temporary_of(const std::string& output) {
  struct stat st {};
  if (::lstat(output.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(output.c_str(), resolved) != nullptr) return partial_path(resolved);
  }
  return partial_path(output);
}

// What identifies the input's content without reading it: a changed file gets a new mtime, a
// replaced one a new inode.
std::string input_identity(const std::string& input, std::uint64_t seed) {
  struct stat st {};
  if (input.rfind("synth:", 0) == 0) return input + " seed " + std::to_string(seed);
  if (::stat(input.c_str(), &st) != 0) return input;
  std::ostringstream o;
  o << input << " size " << st.st_size << " mtime " << st.st_mtim.tv_sec << "."
    << st.st_mtim.tv_nsec << " inode " << st.st_ino;
  return o.str();
}

struct JournalRecord {
  std::string input, options;
  int part = 0, parts = 1;
  std::int64_t begin = 0, end = 0, done = 0, height = 0;
};

std::string read_line_value(std::istream& in, const std::string& key) {
  std::string line;
  if (!std::getline(in, line) || line.rfind(key + " ", 0) != 0)
    throw Error(ErrorKind::input, "no '" + key + "' line");
  return line.substr(key.size() + 1);
}

JournalRecord read_journal(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::io, system_message("cannot read journal", path, errno));
  try {
    std::string magic;
    std::getline(in, magic);
    if (magic != kMagic) throw Error(ErrorKind::input, "not an ooc journal");
    JournalRecord r;
    r.input = read_line_value(in, "input");
    r.options = read_line_value(in, "options");
    std::istringstream part(read_line_value(in, "part")), rows(read_line_value(in, "rows")),
        done(read_line_value(in, "done"));
    if (!(part >> r.part >> r.parts) || !(rows >> r.begin >> r.end >> r.height) ||
        !(done >> r.done) || r.parts < 1 || r.begin < 0 || r.end <= r.begin || r.height < r.end ||
        r.done < r.begin || r.done > r.end)
      throw Error(ErrorKind::input, "bad numbers");
    return r;
  } catch (const Error& e) {
    throw Error(ErrorKind::input, "journal '" + path + "' is damaged (" + e.what() +
                                      "): remove it and its temporary, and run again");
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

}  // namespace

Job::Job(JobOptions options) : options_(std::move(options)) {
  // A TIFF input decodes with as many threads as the job runs (--threads), not one per core.
  if (options_.hints.threads == 0) options_.hints.threads = options_.pipeline.threads;
  source_ = open_source(options_.input, options_.hints, options_.seed);
}

Job::~Job() {
  unregister_temporary(journal_slot_);
  // An error ended the job: its output is gone (the sink removed it), so is its journal. A
  // part's journal stays: the shared temporary holds its rows, and --resume goes on from it.
  if (!journal_.empty() && !kept_ && !shared_) ::unlink(journal_.c_str());
}

void Job::write_journal(std::int64_t done) const {
  if (journal_.empty()) return;
  std::ostringstream o;
  o << kMagic << "\ninput " << identity_ << "\noptions " << options_.fingerprint << "\npart "
    << options_.part_index << " " << options_.part_count << "\nrows " << begin_ << " " << end_
    << " " << source_->spec().height << "\ndone " << done << "\n";
  const std::string text = o.str(), tmp = journal_ + ".tmp";
  // Written beside and renamed over: a journal is always whole, whenever the process dies.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(ErrorKind::io, system_message("cannot write journal", tmp, errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), journal_.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::io, system_message("cannot write journal", journal_, ok ? errno : err));
  }
}

void Job::start(const std::vector<const Operation*>& ops) {
  if (engine_) throw Error(ErrorKind::usage, "a job starts once");
  // --device auto weighs this job's share of the image.
  const ImageSpec& spec = source_->spec();
  const std::int64_t share_rows = options_.rows_end > 0 ? options_.rows_end - options_.rows_begin
                                                        : (spec.height + options_.part_count - 1) /
                                                              std::max(options_.part_count, 1);
  const Operation* writer = nullptr;
  for (const Operation* op : ops)
    if (op->output()) writer = op;
  if (writer && options_.output.empty())
    throw Error(ErrorKind::usage, "operation '" + writer->describe() + "' needs an output");

  // The rows of this job.
  const std::int64_t H = source_->spec().height;
  const bool explicit_rows = options_.rows_end > 0;
  if (options_.part_count < 1 || options_.part_index < 0 ||
      options_.part_index >= options_.part_count)
    throw Error(ErrorKind::usage, "--part " + std::to_string(options_.part_index) + "/" +
                                      std::to_string(options_.part_count) +
                                      ": I must be from 0 to N-1");
  if (explicit_rows) {
    if (options_.rows_begin < 0 || options_.rows_end > H ||
        options_.rows_begin >= options_.rows_end)
      throw Error(ErrorKind::usage, "--rows " + std::to_string(options_.rows_begin) + ":" +
                                        std::to_string(options_.rows_end) +
                                        " is not a range of the image's " + std::to_string(H) +
                                        " rows (A:B, 0 <= A < B <= height)");
    begin_ = options_.rows_begin;
    end_ = options_.rows_end;
  } else {
    if (options_.part_count > H)
      throw Error(ErrorKind::usage, std::to_string(options_.part_count) +
                                        " parts is more than the image's " + std::to_string(H) +
                                        " rows: use fewer parts");
    const auto cut = [&](int i) {
      return static_cast<std::int64_t>(static_cast<__int128>(H) * i / options_.part_count);
    };
    begin_ = cut(options_.part_index);
    end_ = cut(options_.part_index + 1);
  }
  shared_ = explicit_rows || options_.part_count > 1;
  start_ = begin_;

  SinkOptions so = options_.sink;
  std::string format = "null";
  if (writer) format = output_format(options_.output, so);
  const bool journaled =
      writer && (format == "raw" || format == "npy") && (options_.journal || shared_);
  if (shared_ && writer && !journaled && format != "null")
    throw Error(ErrorKind::usage,
                "--part and --rows write raw or .npy outputs (TIFF parts are "
                "not supported yet): name the output .raw or .npy");
  if (options_.resume && writer && !journaled && format != "null")
    throw Error(ErrorKind::usage,
                "--resume continues raw or .npy outputs only (a TIFF is "
                "written in one go): drop --resume, or write raw or .npy");
  so.mode = shared_ ? OutputMode::shared : OutputMode::fresh;
  if (journaled) {
    identity_ = input_identity(options_.input, options_.seed);
    journal_ = journal_name(temporary_of(options_.output), options_.part_index, options_.part_count,
                            begin_, end_, explicit_rows);
    so.keep_on_signal = true;
    journal_slot_ = register_temporary(journal_, 0, 0, true);
    struct stat st {};
    if (options_.resume && ::stat(journal_.c_str(), &st) == 0) {
      const JournalRecord r = read_journal(journal_);
      auto differs = [&](const std::string& what, const std::string& was, const std::string& now) {
        return Error(ErrorKind::usage,
                     "cannot resume: the " + what + " differ from the interrupted run's (was: " +
                         was + "; now: " + now + "); run without --resume to start over");
      };
      if (r.input != identity_) throw differs("input", r.input, identity_);
      if (r.options != options_.fingerprint)
        throw differs("options", r.options, options_.fingerprint);
      if (r.begin != begin_ || r.end != end_ || r.height != H)
        throw differs("rows", std::to_string(r.begin) + ":" + std::to_string(r.end),
                      std::to_string(begin_) + ":" + std::to_string(end_));
      start_ = r.done;
      if (!shared_) so.mode = OutputMode::resume;
    }
  }
  // The first rows decode (TIFF) or come in from the disk while CUDA starts and the output is
  // created.
  const std::size_t mem_limit =
      options_.pipeline.mem_limit > 0 ? options_.pipeline.mem_limit : default_mem_limit();
  source_->prefetch(start_, mem_limit / 4);
  const Workload work = workload(spec, share_rows, options_.pipeline.threads);
  backend_ = select_backend(options_.device, options_.devices, ops, &work);
  if (writer) {
    so.metadata = source_->metadata();
    // Georeferencing maps pixel positions to the ground: true of an output on the input's pixel
    // grid only. Every filter keeps it (same size; rows and columns in stored order, under the
    // same Orientation); an output of another size (oocatax's y) must not claim it.
    const ImageSpec& in = source_->spec();
    const ImageSpec out = *writer->output();
    if (out.width != in.width || out.height != in.height) so.metadata.geo = GeoTags{};
    so.mem_limit = options_.pipeline.mem_limit;
    so.threads = options_.pipeline.threads;
    so.row_begin = begin_;
    so.row_end = end_;
    sink_ = create_sink(options_.output, *writer->output(), options_.input, so);
  }
  write_journal(start_);
  if (nothing_left()) return;
  PipelineOptions po = options_.pipeline;
  po.row_begin = start_;
  po.row_end = end_;
  plan_ = plan_bands(source_->spec(), ops, backend_, po, source_.get(), sink_.get());
  engine_ = std::make_unique<Engine>(*source_, backend_, plan_);
}

RunStats Job::run(Operation& op, const ProgressFn& progress) {
  if (nothing_left()) return RunStats{};
  if (!engine_) throw Error(ErrorKind::usage, "start the job before running it");
  const bool writes = op.output().has_value();
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now();
  // The journal follows the rows written, a second or so behind: after a SIGKILL, --resume
  // redoes at most the bands of the last second.
  const ProgressFn tracked = [&](std::int64_t done, std::int64_t total) {
    if (writes && !journal_.empty() && Clock::now() - last >= std::chrono::seconds(1)) {
      write_journal(start_ + done);
      last = Clock::now();
    }
    (void)total;  // the engine's total is what is left; the user sees the whole range
    if (progress) progress(start_ - begin_ + done, end_ - begin_);
  };
  RunStats st = engine_->run(op, writes ? sink_.get() : nullptr, tracked);
  if (writes && st.stopped) {
    if (sink_) sink_->keep();
    write_journal(start_ + st.rows_done);
    kept_ = true;
  }
  return st;
}

void Job::commit() {
  if (!sink_) return;
  sink_->commit();
  if (shared_) {
    write_journal(end_);
  } else if (!journal_.empty()) {
    ::unlink(journal_.c_str());
  }
  kept_ = true;  // nothing for the destructor to remove
}

std::string finish_output(const std::string& output) {
  const std::string temporary = temporary_of(output);
  const fs::path tp(temporary);
  const fs::path dir = tp.has_parent_path() ? tp.parent_path() : fs::path(".");
  const std::string stem = tp.filename().string() + ".";
  std::vector<std::pair<std::string, JournalRecord>> journals;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) != 0 || name.size() < 8 ||
        name.compare(name.size() - 8, 8, ".journal") != 0)
      continue;
    journals.emplace_back(entry.path().string(), read_journal(entry.path().string()));
  }
  if (ec) throw Error(ErrorKind::io, system_message("cannot list", dir.string(), ec.value()));
  if (journals.empty())
    throw Error(ErrorKind::input, "output '" + output + "' has no parts to finish (no '" +
                                      temporary + ".*.journal'): run the parts first");
  const JournalRecord& first = journals.front().second;
  for (const auto& [path, r] : journals)
    if (r.input != first.input || r.options != first.options || r.height != first.height)
      throw Error(ErrorKind::input,
                  "the parts of '" + output + "' come from different inputs or options ('" +
                      journals.front().first + "' and '" + path + "'): run them again alike");
  std::sort(journals.begin(), journals.end(),
            [](const auto& a, const auto& b) { return a.second.begin < b.second.begin; });
  std::string missing;
  auto add = [&](const std::string& what) { missing += (missing.empty() ? "" : "; ") + what; };
  std::int64_t covered = 0;
  for (const auto& [path, r] : journals) {
    if (r.begin > covered && first.parts == 1)
      add("rows " + std::to_string(covered) + ":" + std::to_string(r.begin) + " have no part");
    if (r.done < r.end)
      add((r.parts > 1 ? "part " + std::to_string(r.part) + "/" + std::to_string(r.parts)
                       : std::string("the run")) +
          " (rows " + std::to_string(r.begin) + ":" + std::to_string(r.end) + ") stopped at row " +
          std::to_string(r.done));
    covered = std::max(covered, r.end);
  }
  // Parts of one split that never started are named by their number.
  if (first.parts > 1) {
    std::vector<bool> seen(static_cast<std::size_t>(first.parts));
    for (const auto& [path, r] : journals)
      if (r.parts == first.parts && r.part < r.parts) seen[static_cast<std::size_t>(r.part)] = true;
    for (int i = 0; i < first.parts; ++i)
      if (!seen[static_cast<std::size_t>(i)])
        add("part " + std::to_string(i) + "/" + std::to_string(first.parts) + " has not run");
  }
  if (covered < first.height && first.parts == 1)
    add("rows " + std::to_string(covered) + ":" + std::to_string(first.height) + " have no part");
  if (!missing.empty())
    throw Error(ErrorKind::input, "output '" + output + "' is not complete: " + missing +
                                      ". Run those parts (with --resume), then --finish again");
  // Locking the whole temporary waits for no one: a part still writing makes this fail.
  OutputFile file(output, "", OutputMode::resume, 0, 0, true);
  file.commit();
  for (const auto& [path, r] : journals) ::unlink(path.c_str());
  return "finished '" + output + "' from " + std::to_string(journals.size()) + " part(s), " +
         std::to_string(first.height) + " rows";
}

}  // namespace ooc
