// Pipelines: stages run in one pass over the image ("gaussian sigma=2 ! convert type=u8"), fused
// per band on the CPU and on a GPU. Each stage is declared once (its name, typed parameters with
// defaults, ranges and help); from the declarations come the parser, oocrun --help/--list and the
// Python keywords. Each stage applies the border rule to its own input (the previous stage's
// image), so a fused pipeline gives the bytes of its stages run one by one through intermediate
// files. A reduction (equalize) splits the pipeline into passes; the prefix is recomputed in the
// later pass, never stored.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/engine.hpp"
#include "ooc/image.hpp"
#include "ooc/job.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"

namespace ooc {

// A window's size: H x W samples (a size parameter, "5" or "5x3"), on a volume D x H x W ("3x5x5";
// d 0: not given, the stage picks the planes).
struct StageSize {
  std::int64_t h = 1, w = 1, d = 0;
  bool operator==(const StageSize&) const = default;
};

// A parameter's value, of the kind its declaration gives: a number, an integer, a list of numbers
// (taps), a sample type, a word (an enum such as a method, a file name, a kernel's name), a
// window size, or a 2-D kernel given as values (the Python module's arrays). Front ends make
// values (parse_stage_value for text a user wrote); the builders read them as they are.
using StageValue = std::variant<double, std::int64_t, std::vector<double>, SampleType, std::string,
                                StageSize, Kernel2d>;

// One parameter of a stage.
struct StageParam {
  enum class Kind { number, integer, taps, type, text, size };  // size: N or HxW
  std::string name;
  Kind kind = Kind::number;
  // The default; none: required, unless `computed` says how the stage finds it.
  std::optional<StageValue> fallback;
  std::string computed;  // e.g. "auto" for a Gaussian's radius (ceil(3 sigma))
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;  // min itself excluded (sigma > 0)
  // Also one value per axis, as scipy's sequences: a number as a list a,b or a,b,c (each from 0 to
  // max; a std::vector<double>), an integer as HxW or DxHxW (each in range; a StageSize).
  bool per_axis = false;
  std::string help;
  bool required() const { return !fallback && computed.empty(); }
  // The default as --list shows it: the value, `computed`, or empty where required.
  std::string fallback_text() const;
};

struct StageDecl {
  std::string name;
  std::string help;
  std::vector<StageParam> params;
  bool reduction = false;  // needs a pass of its own over the image before it can map
  // A filter whose output a following `convert` is fused into (the same rounding of the same
  // value, one pass over the band less).
  bool takes_convert = false;
  // Its output's type is the pipeline's output type when no later stage sets one (convert,
  // equalize) and --out-type is not given.
  bool sets_type = false;
  // Filters a volume in 3-D (point stages and histograms: sample by sample, the same); the others
  // take a volume only plane by plane (PipelineSettings::planes).
  bool volume = false;
  // Knows holes (PipelineSettings::nodata): leaves them out and writes nodata where it makes no
  // value. Others are refused under --nodata.
  bool masked = false;
};

// Every stage, in the order oocrun --list shows them.
const std::vector<StageDecl>& stage_declarations();
// One stage's declaration and one of its parameters; a usage Error for an unknown name.
const StageDecl& stage_declaration(const std::string& name);
const StageParam& stage_parameter(const std::string& stage, const std::string& param);
// A value as a user wrote it (the pipeline parser, a tool's option), parsed for its parameter's
// kind and checked against its range; the usage Error names it `as` (the pipeline parser:
// "stage 2 (gaussian): sigma"; a tool: its option, "--sigma").
StageValue parse_stage_value(const StageParam& p, const std::string& text, const std::string& as);
// Checks a value made by a program (oocconv's options, Python's keywords) the same way.
void check_stage_value(const StageParam& p, const StageValue& v, const std::string& as);
// A value as text: exact for numbers (the shortest text that reads back as the same double).
std::string format_stage_value(const StageValue& v);
// The declarations as text: one stage a paragraph, its parameters with default, range and help.
std::string stage_list();
// The README's stage table (Markdown), one row a stage: its call with placeholders, then its help.
std::string stage_table();

// A stage to run: its name and its arguments, typed (parameters left out take their defaults).
struct StageCall {
  std::string name;
  std::vector<std::pair<std::string, StageValue>> args;
  // Sets an argument (replacing one of the same name); returns *this.
  StageCall& set(const std::string& key, StageValue v);
  const StageValue* get(const std::string& key) const;  // null: not given
  std::string text() const;                             // "gaussian sigma=2"
};

// Checks every argument of a call made by a program: a parameter the stage declares, a value of
// its kind and range; `at` begins the usage Error ("stage 2 (gaussian)").
void check_stage_call(const StageCall& call, const std::string& at);

// The taps a gaussian, uniform, correlate1d or separable call filters with, as its stage builds
// them (a usage Error for another stage): what ooccheck's reference filters with.
SeparableFilter stage_taps(const StageCall& call);

// Stages separated by `!`, from one string or several words (`a k=v ! b`, `a k=v` `!` `b`), each
// value parsed for its parameter (parse_stage_value).
// Throws a usage Error naming the stage and the parameter: unknown stage or parameter, a value of
// the wrong kind or out of range, a missing required parameter, an empty stage.
std::vector<StageCall> parse_pipeline(const std::vector<std::string>& words);

// What the whole pipeline shares.
struct PipelineSettings {
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  // Intermediates in f64 under f64, or under automatic when the input, the output or a convert
  // of the pipeline is f64, u32 or i32 (accumulates_in_f64's rule); else in f32.
  Precision precision = Precision::automatic;
  std::optional<SampleType> out_type;  // default: the type the last stage that sets one gives
                                       // (convert, equalize), else the input's
  // A volume's stages filter plane by plane (2-D) instead of in 3-D (--planes).
  bool planes = false;
  // The input's voxel size (or --voxel-size): what physical sigmas (gaussian sigma-um) divide.
  VoxelSize voxel;
  // Nodata (--nodata): samples equal to it, and NaN in float images, are holes, derived per band
  // from the values; the stages that know holes leave them out and write it (NaN: NaN) where
  // they make no value. None: every sample counts (the bytes of a run without --nodata).
  std::optional<double> nodata;
  // --nodata given (none included): the input's GDAL_NODATA tag is not read (run_job).
  bool nodata_given = false;
};

// The passes of a pipeline over an image of `input`: each pass is one operation for the engine
// (the stages fused); the last writes the output.
class PipelinePlan {
 public:
  PipelinePlan(const ImageSpec& input, const std::vector<StageCall>& stages,
               const PipelineSettings& settings, const EngineOptions& options = {});
  ~PipelinePlan();
  PipelinePlan(const PipelinePlan&) = delete;
  PipelinePlan& operator=(const PipelinePlan&) = delete;

  int passes() const noexcept;
  Operation& pass(int i);
  std::vector<const Operation*> operations() const;  // every pass's, for Job::start
  bool has_reduction() const noexcept { return passes() > 1; }
  // After pass i (not the last): `sum` adds its reductions (histogram counts) over the processes
  // of a run in parts (MPI), in place; then the next pass is prepared.
  void end_pass(int i, const std::function<void(std::vector<std::uint64_t>&)>& sum = {});
  // What a resumed run needs of pass i's reductions, once end_pass(i) ran: histogram(i)'s counts,
  // or a stage's words (label's, its table saved to files named from `path`); empty: none.
  std::vector<std::uint64_t> reduced_state(int i, const std::string& path) const;
  // Prepares the next pass from what reduced_state(i, path) gave, instead of running pass i: a
  // resumed run takes it from the interrupted one.
  void restore_pass(int i, std::vector<std::uint64_t> counts, const std::string& path = {});
  // The histogram of pass i's equalize, summed over the processes, once end_pass(i) ran; null for
  // a pass without one. counts[c * bins + v]: samples of channel c with value v.
  struct Histogram {
    std::vector<std::uint64_t> counts;
    std::int64_t bins = 0;
    int channels = 0;
  };
  const Histogram* histogram(int i) const;
  // A label stage's count of components, once its first pass ended (else none).
  std::optional<std::uint64_t> components() const;
  ImageSpec output() const;
  // The value the output's holes have under nodata: the input's, or the output type's where it
  // does not hold that one (-9999 into u8: 0; kernels/cpu/masked/convert.hpp); none without holes.
  std::optional<double> output_nodata() const;
  std::string describe() const;  // "gaussian sigma=2 ! convert type=u8"
  // Each stage's operation as built, in order (a last convert to the output type included): what
  // it computes with, e.g. the FFT or the direct sum, its taps and its accumulator.
  std::vector<std::string> stage_descriptions() const;
  std::string fingerprint() const;  // exact: what the output's bytes depend on

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs every pass of `plan` on `job` (started with plan.operations()): between passes `sum` adds
// the reductions over the processes of a run in parts (MPI); `progress` counts the rows of every
// pass. Returns the passes' stats summed (output and rows done: the last pass's), each pass's in
// `each`; a pass that a signal stopped ends the run there (RunStats::stopped).
RunStats run_pipeline(Job& job, PipelinePlan& plan, const ProgressFn& progress = {},
                      const std::function<void(std::vector<std::uint64_t>&)>& sum = {},
                      std::vector<RunStats>* each = nullptr);

}  // namespace ooc
