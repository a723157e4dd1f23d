// oocconv's filter, as its options give it (--radius, --sigma, --taps, --kernel, --border,
// --out-type, --precision, ...): the pipeline stage it is, checked against the stage's
// declaration. One mapping for oocconv, ooccheck (which builds OUT's filter from the options that
// made OUT) and the Python module's keywords.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

// The filter as given, before validation.
struct FilterOptions {
  std::optional<std::int64_t> radius;
  std::optional<double> sigma;
  std::string filter_kind = "gaussian";
  std::string taps, row_taps, col_taps, taps_file;  // as written: parsed by the stage
  // Taps given as values (the Python module's sequences), in place of the texts above.
  std::optional<std::vector<double>> taps_values, row_values, col_values;
  std::string kernel;  // --kernel: a 2-D kernel (file or built-in); empty: separable
  std::string border = "reflect";
  double border_value = 0;
  std::string out_type;  // empty: the input's
  std::string precision = "auto";
  std::string method = "auto";  // --method: auto, direct or fft (2-D kernels)
  bool planes = false;          // --planes: a volume filtered plane by plane (2-D)
  std::string nodata;           // --nodata V, nan or none; empty: the input's GDAL_NODATA tag
};

// The pipeline stage the filter options select (--sigma/--radius: gaussian, --filter box: uniform,
// the taps options: separable, --kernel: convolve), each value checked against the stage's
// declaration, errors naming the option. Throws a usage Error for a contradiction, a missing
// filter, or a filter whose taps alone would not fit in `mem_limit`; reads --taps-file.
StageCall filter_stage(const FilterOptions& f, std::size_t mem_limit = 0);

// The pipeline's shared settings from --border, --border-value, --out-type (empty: none) and
// --precision as written: oocconv's, oocrun's and the Python keywords'.
PipelineSettings pipeline_settings(const std::string& border, double border_value,
                                   const std::string& out_type, const std::string& precision);
PipelineSettings filter_settings(const FilterOptions& f);

// --nodata as written: a number, nan or none (empty: not given, the input's GDAL_NODATA tag
// decides); sets s.nodata and s.nodata_given. A usage Error naming `what` for other text.
void apply_nodata(const std::string& text, PipelineSettings& s,
                  const std::string& what = "--nodata");
// GDAL_NODATA's text as GDAL reads it (a number, nan, inf), or none where it is not one.
std::optional<double> parse_gdal_nodata(const std::string& text);

// Validates the options and builds the filter: explicit taps, or a Gaussian/box of a radius and
// sigma. Throws a usage Error for a contradiction, a missing filter, or a filter whose taps alone
// would not fit in `mem_limit` (0: the default --mem-limit), before allocating them; reads
// --taps-file.
SeparableParams filter_params(const FilterOptions& f, std::size_t mem_limit = 0);

// --kernel's 2-D convolution: the kernel (parse_kernel) and the shared border and result options.
// Throws a usage Error when --kernel is combined with separable filter options.
Conv2dParams conv2d_params(const FilterOptions& f, std::size_t mem_limit = 0);

// Bytes the filter's taps take in a run (kept as doubles, in accumulator copies and per-slot
// pointer tables), for 2 * radius + 1 taps: what filter_params holds against the limit.
std::size_t filter_taps_bytes(std::int64_t radius);

}  // namespace ooc
