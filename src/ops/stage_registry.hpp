// The stage registry behind pipelines (ooc/pipeline.hpp): each family of operations declares its
// stages (name, parameters, help) beside a builder that turns a parsed call into the family's
// Operation, in the family's own file. stages.cpp lists the families in the order `oocrun --list`
// shows them; the parser, --list, oocconv's filter options and the Python keywords all read the
// declarations from there, so adding a stage touches its family's file and, for a new family, one
// line of that list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/convolution/zpass.hpp"
#include "kernels/cpu/point/pointwise.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
// Radii beyond this are refused: 2R+1 taps and the halos of bands stay far from overflow.
inline constexpr double kMaxStageRadius = 1 << 20;

// Parameter declarations: a number (open: min itself excluded), an integer, or another kind;
// a default of none is required, unless `computed` names how the stage finds the value ("auto",
// "none").
StageParam number_param(std::string name, std::optional<double> fallback, double min, bool open,
                        std::string help, double max = kInf);
StageParam integer_param(std::string name, std::optional<std::int64_t> fallback, double min,
                         double max, std::string help);
StageParam other_param(std::string name, StageParam::Kind kind, std::optional<StageValue> fallback,
                       std::string help);
StageParam computed(StageParam p, std::string how);

// A call's arguments as the builder reads them, typed; defaults from the declaration.
class StageArgs {
 public:
  StageArgs(const StageCall& c, const StageDecl& d, std::string at)
      : c_(c), d_(d), at_(std::move(at)) {}
  bool has(const std::string& key) const { return c_.get(key) != nullptr; }
  // The value given, else the default (a usage Error where there is none).
  const StageValue& value(const std::string& key) const;
  double number(const std::string& key) const;
  std::int64_t integer(const std::string& key) const;
  const std::vector<double>& taps(const std::string& key) const;
  SampleType type(const std::string& key) const;
  // A window's size; an integer N (a per-axis integer given as one) is N x N.
  StageSize size(const std::string& key) const;
  // A per-axis number: its list, or the one number given as a list of one.
  std::vector<double> numbers(const std::string& key) const;
  // A word (a method, a file's name); any other value as text, for messages.
  std::string text(const std::string& key) const;
  // "stage 2 (median)": what errors start with.
  const std::string& at() const { return at_; }
  const std::string& call_text() const;  // "median size=5"

 private:
  const StageCall& c_;
  const StageDecl& d_;
  std::string at_;
  mutable std::string text_;
};

// What a builder gets: the stage's input, its arguments and what the pipeline shares.
struct StageContext {
  const ImageSpec& in;
  const StageArgs& args;
  const PipelineSettings& settings;
  const EngineOptions& options;
  // The type of a convert fused into a filter stage (StageDecl::takes_convert), else none.
  std::optional<SampleType> fused_out;
  std::size_t index = 0;  // the stage's place in the pipeline, from 0

  // Intermediates: f64 under --precision f64, else f32.
  SampleType acc() const {
    return settings.precision == Precision::f64 ? SampleType::f64 : SampleType::f32;
  }
  SampleType out() const { return fused_out.value_or(acc()); }
  // The stage filters a volume in 3-D (not plane by plane: PipelineSettings::planes).
  bool volume() const { return in.volume() && !settings.planes; }
  // A usage Error for a stage that has no 3-D version yet.
  [[noreturn]] void no_volume() const;
  // A separable filter or Gaussian of `in` with the pipeline's border and precision; its output
  // `out` (default: the accumulator's type). The stages that combine Gaussians (dog,
  // unsharp, subtract-background) take the direct sum: its tiles across the row keep every
  // thread busy (the FFT's blocks are fixed in image columns and keep a chain in whole rows),
  // and the FFT with the combined copy of its tall bands ran slower (subtract-background
  // sigma=20: 1.20 s against 0.96 s direct, 16384 x 4096 f32, 2 threads).
  std::unique_ptr<Operation> separable(const ImageSpec& in, SeparableFilter f,
                                       std::optional<SampleType> out = {},
                                       ConvMethod method = ConvMethod::direct) const;
  std::unique_ptr<Operation> gaussian(const ImageSpec& in, double sigma,
                                      std::optional<std::int64_t> radius = {},
                                      std::optional<SampleType> out = {}) const;
  // One sigma an axis (z is a volume's, filtered in 3-D; 0 leaves an axis alone), radius
  // ceil(3 sigma) each.
  std::unique_ptr<Operation> gaussian_axes(const ImageSpec& in, double sz, double sy,
                                           double sx) const;
};

// What a builder gives: the stage's operation, and for a reduction (equalize) the operation of
// its own pass and the table that pass's result sets before the next pass maps with `op`.
struct BuiltStage {
  BuiltStage() = default;
  explicit BuiltStage(std::unique_ptr<Operation> o) : op(std::move(o)) {}
  std::unique_ptr<Operation> op;
  // Stages run before `op`, in order (a volume's z passes: `op` reads the last one's output).
  std::vector<std::unique_ptr<Operation>> before;
  std::unique_ptr<HistogramOp> histogram;
  LutOp* lut = nullptr;  // `op`, when it is the table
  // A reduction of another kind (label's first pass): run in a pass of its own, after which
  // end_reduce makes `op` ready from its result (with the processes' sums, MPI ranks').
  std::unique_ptr<Operation> reduce;
  std::function<void(const std::function<void(std::vector<std::uint64_t>&)>&)> end_reduce;
  // Label's count of components once the reduction ended (the job's result, --stats json).
  std::function<std::uint64_t()> components;
  // For a resume in the next pass: what end_reduce made, saved (files named from the path; the
  // words returned go to the job's state file) and restored instead of running the reduction.
  std::function<std::vector<std::uint64_t>(const std::string&)> save_reduce;
  std::function<void(const std::vector<std::uint64_t>&, const std::string&)> restore_reduce;
};

struct StageEntry {
  StageDecl decl;
  std::function<BuiltStage(const StageContext&)> build;
};

// The families, each in its operation's file.
std::vector<StageEntry> separable_stages();   // separable.cpp: gaussian ... separable
std::vector<StageEntry> conv2d_stages();      // conv2d.cpp: convolve
std::vector<StageEntry> combine_stages();     // combine.cpp: gradient-magnitude, dog, ...
std::vector<StageEntry> point_stages();       // point.cpp: scale ... convert
std::vector<StageEntry> minmax_stages();      // minmax.cpp: minimum, maximum
std::vector<StageEntry> morphology_stages();  // morphology.cpp: opening ... black-tophat
std::vector<StageEntry> rank_stages();        // rank.cpp: median, percentile, rank
std::vector<StageEntry> equalize_stages();    // equalize.cpp
std::vector<StageEntry> project_stages();     // project.cpp: a volume's projection along z
std::vector<StageEntry> label_stages();       // labels/label.cpp: connected components

// Every stage (stages.cpp), and one by name (null when unknown).
const std::vector<StageEntry>& stage_registry();
const StageEntry* find_stage(const std::string& name);
// "gaussian, uniform, ...": every stage's name, for messages.
std::string stage_names();

// A point operation (scale, clamp, convert, ...) from `in` to `out`, described as `what`.
std::unique_ptr<Operation> make_point(const ImageSpec& in, const kernels::PointParams& p,
                                      SampleType out, std::string what);
// Its CPU kernel, which make_convert's copy and conversion runs too.
std::unique_ptr<CpuKernel> make_point_cpu(const kernels::PointParams& p, SampleType out);

// A volume's pass along z (zpass.cpp) over planes [z - before, z - before + weights.size()):
// plane k weighted by weights[k] (sum, into `out`: f32 or f64), or their minimum or maximum
// (`out`: the input's type; weights only count the planes).
std::unique_ptr<Operation> make_zpass(const ImageSpec& in, kernels::ZPassKind kind,
                                      std::vector<double> weights, std::int64_t before,
                                      SampleType out, BorderMode border, double cval);

// Exact text of a double, for fingerprints.
std::string exact_number(double v);

}  // namespace ooc::detail
