// The job (see ooc/job.hpp): the input, the backend, the bands of every pass, the output and its
// journal, a resumed run's rows; the journals' files are journal.cpp's.
#include "ooc/job.hpp"

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
using namespace detail;

Job::Job(JobOptions options) : options_(std::move(options)) {
  // A TIFF input decodes with as many threads as the job runs (--threads), not one per core.
  if (options_.hints.threads == 0) options_.hints.threads = options_.pipeline.threads;
  source_ = open_source(options_.input, options_.hints, options_.seed);
}

Job::Job(std::unique_ptr<Source> source, std::unique_ptr<Sink> sink, JobOptions options)
    : options_(std::move(options)),
      source_(std::move(source)),
      sink_(std::move(sink)),
      given_(true) {
  if (!source_) throw Error(ErrorKind::usage, "a job needs a source");
  // Parts, journals and resuming are about files the job makes; the caller's sink is none.
  if (options_.part_count != 1 || options_.part_index != 0 || options_.rows_end > 0 ||
      options_.resume || options_.journal)
    throw Error(ErrorKind::usage,
                "a job over a given source and sink runs the whole image in one process: it "
                "takes no parts, rows, journal or resume");
}

const Backend& Job::pick_backend(const std::vector<const Operation*>& ops) {
  if (picked_) return backend_;
  // --device auto weighs this job's share of the image.
  const ImageSpec& spec = source_->spec();
  const std::int64_t share_rows =
      options_.rows_end > 0
          ? options_.rows_end - options_.rows_begin
          : (spec.stacked_rows() + options_.part_count - 1) / std::max(options_.part_count, 1);
  const Workload work = workload(spec, share_rows, options_.pipeline.threads);
  backend_ = select_backend(options_.device, options_.devices, ops, &work);
  picked_ = true;
  return backend_;
}

namespace {
constexpr const char* kStateMagic = "ooc-state 1";
}  // namespace

Job::~Job() {
  unregister_temporary(journal_slot_);
  unregister_temporary(manifest_slot_);
  // A run refused before its output was made (an input that is the output's temporary or the
  // output itself, no GPU) leaves nothing new: not the manifest it made, where no journal is.
  if (made_manifest_ && !kept_ && !sink_) {
    const std::string temporary = temporary_of(options_.output);
    try {
      if (journal_paths(temporary).empty()) ::unlink(manifest_path(temporary).c_str());
    } catch (const Error&) {
    }
  }
  // A part that failed before it wrote anything leaves no manifest binding the output to it.
  if (shared_ && !kept_ && !journal_.empty()) {
    const std::string temporary = temporary_of(options_.output);
    struct stat st {};
    try {
      if (::lstat(temporary.c_str(), &st) != 0 && journal_paths(temporary).empty())
        ::unlink(manifest_path(temporary).c_str());
    } catch (const Error&) {
    }
  }
  // An error ended the job: its output is gone (the sink removed it), so is its journal. A
  // part's journal stays: the shared temporary holds its rows, and --resume goes on from it.
  if (!journal_.empty() && !kept_ && !shared_) {
    ::unlink(journal_.c_str());
    remove_states(temporary_of(options_.output));
    if (owns_manifest_) ::unlink(manifest_path(temporary_of(options_.output)).c_str());
  }
}

std::string Job::state_path(const std::string& name) const {
  return journal_.empty() ? std::string() : temporary_of(options_.output) + "." + name;
}

void Job::save_state(const std::string& path, const std::vector<std::uint64_t>& values) const {
  std::ostringstream o;
  o << kStateMagic << "\nvalues " << values.size() << "\n";
  detail::Digest d;
  for (const std::uint64_t v : values) {
    o << v << "\n";
    d.add(&v, sizeof v);
  }
  o << "check " << d.hex() << "\n";
  const std::string text = o.str(), tmp = path + ".tmp-" + std::to_string(::getpid());
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::io, system_message("cannot write", path, errno));
  }
}

std::optional<std::vector<std::uint64_t>> Job::load_state(const std::string& path) const {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::string magic, word;
  std::size_t n = 0;
  std::getline(f, magic);
  std::vector<std::uint64_t> values;
  detail::Digest d;
  bool ok = magic == kStateMagic && (f >> word >> n) && word == "values" && n <= (1u << 24);
  for (std::size_t i = 0; ok && i < n; ++i) {
    std::uint64_t v = 0;
    ok = static_cast<bool>(f >> v);
    values.push_back(v);
    d.add(&v, sizeof v);
  }
  std::string check;
  ok = ok && (f >> word >> check) && word == "check" && check == d.hex();
  if (!ok)
    throw Error(ErrorKind::input, "'" + path + "' is damaged and cannot be trusted: remove '" +
                                      temporary_of(options_.output) +
                                      "*' and run without --resume");
  return values;
}

void Job::write_journal(std::int64_t done) const {
  if (journal_.empty()) return;
  std::ostringstream o;
  o << kMagic << "\ninput " << identity_ << "\noptions " << options_.fingerprint << "\npart "
    << options_.part_index << " " << options_.part_count << "\nrows " << begin_ << " " << end_
    << " " << rows_ << "\ndone " << done << "\n";
  const std::string text = with_check(o.str()), tmp = journal_ + ".tmp";
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
  const Operation* writer = nullptr;
  for (const Operation* op : ops)
    if (op->output()) writer = op;
  if (given_) {
    start_given(ops, writer);
    return;
  }
  if (writer && options_.output.empty())
    throw Error(ErrorKind::usage, "operation '" + writer->describe() + "' needs an output");
  if (writer && writer->output_is_labels() && options_.sink.pyramid_levels != 0)
    throw Error(ErrorKind::usage,
                "labels take no reduced-resolution levels (--pyramid, --levels, a COG's "
                "overviews): the 2 x 2 means of labels name no component; write level 0 alone "
                "(--levels 0 with --cog)");

  // The rows of this job.
  // The output's rows (a projection's: one plane of the input's), else the input's.
  const std::int64_t H = rows_ =
      writer ? writer->output()->stacked_rows() : source_->spec().stacked_rows();
  // A TIFF's strip height depends on the row size: its writer's spec says it.
  const std::int64_t align = !writer ? std::int64_t{1}
                             : output_format(options_.output, options_.sink) == "tiff"
                                 ? tiff_row_alignment(*writer->output(), options_.sink)
                                 : output_row_alignment(options_.output, options_.sink);
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
    if (begin_ % align != 0 || (end_ % align != 0 && end_ != H))
      throw Error(ErrorKind::usage,
                  "--rows " + std::to_string(begin_) + ":" + std::to_string(end_) +
                      " does not start and end at a chunk row of the output (a Zarr chunk "
                      "row or a TIFF row of strips or tiles: multiples of " +
                      std::to_string(align) + ", or the image's end " + std::to_string(H) + ")");
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
    // Parts of a chunked output (Zarr) own whole chunk rows: no two write one chunk. Parts of an
    // operation that computes rows in fixed blocks (Operation::row_grid: the FFT's tile rows)
    // also start on a block where every part still gets one, so that their bands need the
    // operation's smaller halo (plan_bands); elsewhere they plan with the whole halo.
    std::int64_t grid = 1;
    for (const Operation* op : ops)
      if (grid <= H) grid = std::lcm(grid, std::max<std::int64_t>(1, op->row_grid()));
    const std::int64_t both = grid <= H ? std::lcm(align, grid) : H + 1;
    const std::int64_t unit = grid > 1 && both <= H / options_.part_count ? both : align;
    if (unit > 1) {
      if (options_.part_count > (H + unit - 1) / unit) {
        // What the output's rows come in, and the option that makes them smaller.
        std::string rows = "chunk rows", fix = "a smaller --chunk";
        const SinkOptions& so = options_.sink;
        if (output_format(options_.output, so) == "tiff") {
          // Tiled as tiff_row_alignment has it: --tile, or 512 for a pyramid or a COG.
          const bool tiled = so.tile > 0 || so.pyramid_levels != 0 || so.cog;
          rows = std::string(tiled ? "rows of tiles" : "rows of strips") + " (" +
                 std::to_string(align) + " image rows each)";
          fix = tiled ? "a smaller --tile"
                      : "a tiled output (--tile N: rows of N; strips are about 1 MiB)";
        } else if (so.zarr_version == 3) {
          rows = "shard rows";
          fix = "a smaller --shard (or --chunk)";
        }
        throw Error(ErrorKind::usage, std::to_string(options_.part_count) +
                                          " parts is more than the output's " +
                                          std::to_string((H + align - 1) / align) + " " + rows +
                                          ": use fewer parts or " + fix);
      }
      const auto aligned = [&](int i) {
        if (i == options_.part_count) return H;
        // The nearest chunk row boundary, so that parts stay about even.
        return std::min(H, (cut(i) + unit / 2) / unit * unit);
      };
      begin_ = aligned(options_.part_index);
      end_ = aligned(options_.part_index + 1);
      if (begin_ >= end_)
        throw Error(ErrorKind::usage, std::to_string(options_.part_count) + " parts leave part " +
                                          std::to_string(options_.part_index) +
                                          " no chunk row of the output: use fewer parts");
    }
  }
  shared_ = explicit_rows || options_.part_count > 1;
  start_ = begin_;
  run_end_ = end_;

  SinkOptions so = options_.sink;
  std::string format = "null";
  if (writer) format = output_format(options_.output, so);
  const bool journaled =
      writer && (format == "raw" || format == "npy" || format == "zarr" || format == "tiff") &&
      (options_.journal || shared_);
  if (shared_ && writer && !journaled && format != "null")
    throw Error(ErrorKind::usage,
                "a run in parts (--part, --rows, or several ranks under mpirun or srun) "
                "writes raw, .npy, TIFF or Zarr outputs: name such an output, or run one process");
  if (options_.resume && writer && !journaled && format != "null")
    throw Error(ErrorKind::usage,
                "--resume continues raw, .npy, TIFF or Zarr outputs only: drop --resume");
  so.mode = shared_ ? OutputMode::shared : OutputMode::fresh;
  std::string temporary;
  if (journaled) {
    identity_ = input_identity(options_.input, options_.seed, options_.hints.zarr_level);
    temporary = temporary_of(options_.output);
    journal_ = journal_name(temporary, options_.part_index, options_.part_count, begin_, end_,
                            explicit_rows);
    so.keep_on_signal = true;
    journal_slot_ = register_temporary(journal_, 0, 0, true);
    std::vector<std::string> others = journal_paths(temporary);
    others.erase(std::remove(others.begin(), others.end(), journal_), others.end());
    // A whole-image run would replace the shared temporary that parts are filling.
    if (!shared_ && !others.empty())
      throw Error(ErrorKind::usage,
                  "output '" + options_.output + "' is being made in parts ('" + others.front() +
                      "'" +
                      (others.size() > 1 ? " and " + std::to_string(others.size() - 1) + " more"
                                         : std::string()) +
                      "): run the remaining parts (--part or --rows, with --resume) and then "
                      "oocconv --finish " +
                      options_.output + ", or remove '" + temporary + "*' to start over");
    if (options_.resume) {
      // Rows on disk are those of every journal of this job, whatever split wrote them: a run
      // resumed with another number of parts (or ranks) skips the rows done by the earlier one.
      std::vector<std::pair<std::int64_t, std::int64_t>> done;
      auto differs = [&](const std::string& what, const std::string& was, const std::string& now) {
        return Error(ErrorKind::usage,
                     "cannot resume: the " + what + " differ from the interrupted run's (was: " +
                         was + "; now: " + now + "); run without --resume to start over");
      };
      std::vector<std::string> paths = others;
      struct stat st {};
      if (::stat(journal_.c_str(), &st) == 0) paths.push_back(journal_);
      for (const std::string& path : paths) {
        const JournalRecord r = read_journal(path);
        if (r.input != identity_) throw differs("input", r.input, identity_);
        if (r.options != options_.fingerprint)
          throw Error(ErrorKind::usage,
                      "cannot resume: the options differ from the interrupted run's (" +
                          options_difference(r.options, options_.fingerprint) +
                          "); run with its options, or without --resume to start over");
        if (r.height != H)
          throw differs("image heights", std::to_string(r.height), std::to_string(H));
        if (r.done > r.begin) done.emplace_back(r.begin, r.done);
      }
      std::sort(done.begin(), done.end());
      for (const auto& [a, b] : done)
        if (a <= start_ && b > start_) start_ = std::min(b, end_);
      // The rows at the end of the range that others wrote need not be written again.
      for (auto it = done.rbegin(); it != done.rend(); ++it)
        if (it->first < run_end_ && it->second >= run_end_) run_end_ = std::max(it->first, start_);
      if (!shared_ && start_ > begin_) so.mode = OutputMode::resume;
    }
    if (shared_ || options_.resume)
      made_manifest_ =
          claim_manifest(temporary, options_.output, identity_, options_.fingerprint, H);
  }
  // The first rows decode (TIFF) or come in from the disk while CUDA starts and the output is
  // created.
  const std::size_t mem_limit =
      options_.pipeline.mem_limit > 0 ? options_.pipeline.mem_limit : default_mem_limit();
  source_->prefetch(start_, mem_limit / 4);
  pick_backend(ops);
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
    // A TIFF writer keeps the blocks of the rows it writes in files named by them.
    if (format == "tiff") {
      so.row_begin = start_;
      so.row_end = run_end_;
    }
    sink_ = create_sink(options_.output, *writer->output(), options_.input, so);
    // A fresh whole-image run owns the temporary now (it holds its lock): the job it belongs to
    // is this one.
    if (journaled && !shared_ && so.mode == OutputMode::fresh) {
      ::unlink(manifest_path(temporary).c_str());
      claim_manifest(temporary, options_.output, identity_, options_.fingerprint, H);
      owns_manifest_ = true;
    }
    // A whole-image run's manifest goes with its temporary when a fatal signal (SIGBUS from a
    // truncated input) removes that, and stays with it for --resume after SIGINT/SIGTERM.
    if (journaled && !shared_)
      manifest_slot_ = register_temporary(manifest_path(temporary), 0, 0, true);
  }
  write_journal(start_);
  if (nothing_left()) return;
  EngineOptions po = options_.pipeline;
  po.row_begin = start_;
  po.row_end = run_end_;
  plan_ = plan_bands(source_->spec(), ops, backend_, po, source_.get(), sink_.get());
  engine_ = std::make_unique<Engine>(*source_, backend_, plan_);
}

void Job::start_given(const std::vector<const Operation*>& ops, const Operation* writer) {
  const ImageSpec& in = source_->spec();
  if (writer && !sink_)
    throw Error(ErrorKind::usage, "operation '" + writer->describe() + "' needs an output");
  if (writer) {
    const ImageSpec want = *writer->output(), &have = sink_->spec();
    if (want.width != have.width || want.height != have.height || want.depth != have.depth ||
        want.channels != have.channels || want.type != have.type)
      throw Error(ErrorKind::usage, "operation '" + writer->describe() + "' makes " +
                                        want.describe() + ", and its output (" + sink_->describe() +
                                        ") holds " + have.describe());
  }
  begin_ = start_ = 0;
  end_ = run_end_ = rows_ = writer ? writer->output()->stacked_rows() : in.stacked_rows();
  const std::size_t mem_limit =
      options_.pipeline.mem_limit > 0 ? options_.pipeline.mem_limit : default_mem_limit();
  source_->prefetch(0, mem_limit / 4);
  pick_backend(ops);
  EngineOptions po = options_.pipeline;
  po.row_begin = 0;
  po.row_end = end_;
  plan_ = plan_bands(in, ops, backend_, po, source_.get(), sink_.get());
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
      write_journal(sink_ ? sink_->durable_end(start_, start_ + done) : start_ + done);
      last = Clock::now();
    }
    (void)total;  // the engine's total is what is left; the user sees the whole range
    if (progress) progress(start_ - begin_ + done, end_ - begin_);
  };
  RunStats st = engine_->run(op, writes ? sink_.get() : nullptr, tracked);
  // A stop leaves nothing to resume in a caller's sink: the caller sees RunStats::stopped.
  if (st.stopped && (writes || sink_) && !given_) {
    // A pass that writes nothing (a histogram) stopped: the rows on disk are those before it.
    if (sink_) sink_->keep();
    write_journal(writes ? start_ + st.rows_done : start_);
    kept_ = true;
  }
  return st;
}

std::string Job::kept_path() const {
  if (sink_)
    if (std::string p = sink_->kept_path(); !p.empty()) return p;
  return temporary_of(options_.output);
}

void Job::commit() {
  if (!sink_) return;
  sink_->commit();
  if (shared_) {
    write_journal(end_);
  } else if (!journal_.empty()) {
    ::unlink(journal_.c_str());
    ::unlink(manifest_path(temporary_of(options_.output)).c_str());
    remove_states(temporary_of(options_.output));
  }
  kept_ = true;  // nothing for the destructor to remove
}

}  // namespace ooc
