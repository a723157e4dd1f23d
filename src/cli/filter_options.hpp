// The filter options that oocconv and ooccheck share (--radius, --sigma, --taps, --border,
// --out-type, --precision, ...), so that `ooccheck OUT IN <options>` takes exactly the options that
// made OUT and builds the same filter from them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ooc/ops/chain.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"

namespace CLI {
class App;
}

namespace ooc::cli {

// The filter as given on the command line, before validation.
struct FilterCli {
  std::optional<std::int64_t> radius;
  std::optional<double> sigma;
  std::string filter_kind = "gaussian";
  std::string taps, row_taps, col_taps, taps_file;
  std::string kernel;  // --kernel: a 2-D kernel (file or built-in); empty: separable
  std::string border = "reflect";
  double border_value = 0;
  std::string out_type;  // empty: the input's
  std::string precision = "auto";
  std::string method = "auto";  // --method: auto, direct or fft (2-D kernels)
};

// Adds the option groups "Filter" (taps and border) and "Result" (--out-type, --precision).
void add_filter_options(CLI::App& app, FilterCli& f);

// The pipeline stage the filter options select (--sigma/--radius: gaussian, --filter box: uniform,
// the taps options: separable, --kernel: convolve), each value checked against the stage's
// declaration, errors naming the option. Throws a usage Error for a contradiction, a missing
// filter, or a filter whose taps alone would not fit in `mem_limit`; reads --taps-file.
ooc::StageCall filter_stage(const FilterCli& f, std::size_t mem_limit = 0);

// Validates the options and builds the filter: explicit taps, or a Gaussian/box of a radius and
// sigma. Throws a usage Error for a contradiction, a missing filter, or a filter whose taps alone
// would not fit in `mem_limit` (0: the default --mem-limit), before allocating them; reads
// --taps-file.
ooc::SeparableParams filter_params(const FilterCli& f, std::size_t mem_limit = 0);

// --kernel's 2-D convolution: the kernel (parse_kernel) and the shared border and result options.
// Throws a usage Error when --kernel is combined with separable filter options.
ooc::Conv2dParams conv2d_params(const FilterCli& f, std::size_t mem_limit = 0);

// Bytes the filter's taps take in a run (kept as doubles, in accumulator copies and per-slot
// pointer tables), for 2 * radius + 1 taps: what filter_params holds against the limit.
std::size_t filter_taps_bytes(std::int64_t radius);

}  // namespace ooc::cli
