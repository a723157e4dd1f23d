// What the morphology family's operations share (minmax.cpp, morphology.cpp, rank.cpp): the
// window of a minimum, maximum or rank filter, a rectangle or a footprint's ones, as scipy places
// it (footprint.cpp), and the window parameters of their stages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/morphology/rank.hpp"
#include "ooc/border.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/rank.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::detail::morphology {

// The window of `n` samples around each one, as scipy places it: `left` before, n - 1 - left
// after; the dilations of grey_opening/closing shift it by one for even sizes (origin -1).
struct Extent {
  std::int64_t left = 0, right = 0;
};
inline Extent extent(std::int64_t n, bool dilation) {
  const std::int64_t left = n / 2 - (dilation && n % 2 == 0 ? 1 : 0);
  return {left, n - 1 - left};
}

// The window: a rectangle of y.left + y.right + 1 rows and x.left + x.right + 1 columns, or
// the samples of it where `mask` (row-major over that rectangle) is 1.
struct Window {
  bool max = false;
  Extent y, x;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> mask;  // none: every sample
  std::string footprint;                                  // the mask's file and digest
  std::int64_t rows() const { return y.left + y.right + 1; }
  std::int64_t cols() const { return x.left + x.right + 1; }
};

using Run = kernels::FootprintRun;
// The footprint's runs of ones along its rows (w.mask must be set).
std::vector<Run> runs_of(const Window& w);
// The window of a minimum (max false) or maximum; the dilations of grey_opening/closing use the
// footprint mirrored (scipy's grey_dilation).
Window window(const MorphParams& p, bool max, bool dilation);
// "footprint F [digest] of 3x3" or "3x3", as describe() says it.
std::string window_text(const Window& w);

// The rank filter of a volume over a depth x height x width box (rank3d.cpp).
std::unique_ptr<Operation> make_rank3d(const ImageSpec& in, std::int64_t depth, std::int64_t height,
                                       std::int64_t width, std::int64_t rank, BorderMode border,
                                       double cval);

// The rank filter of a volume over a 3-D footprint's ones (footprint3d.cpp; one of all ones is
// the box's). A 2-D footprint on a volume is refused, as scipy refuses it.
std::unique_ptr<Operation> make_rank3d(const ImageSpec& in, const Footprint& f, std::int64_t rank,
                                       BorderMode border, double cval);

// The minimum or maximum filter over w (minmax.cpp).
std::unique_ptr<Operation> make_minmax(const ImageSpec& in, const Window& w);

// The stages' window: size=, or footprint= (exactly one of them), and their parameters.
std::tuple<std::int64_t, std::int64_t, Footprint> window_of(const StageArgs& a);
// A 3-D footprint on an image (or under --planes) refused, the stage named.
void check_footprint_axes(const StageContext& c, const Footprint& f);
StageParam size_param();

// A box's planes: size=DxHxW's D, else size-z, else the size's rows `rows` (a volume filtered in
// 3-D); 1 elsewhere. D with size-z, or D on an image or under --planes, is refused.
inline std::int64_t box_depth(const StageContext& c, std::int64_t rows) {
  const StageArgs& a = c.args;
  const std::int64_t d = a.has("size") ? a.size("size").d : 0;
  if (d != 0 && !c.volume())
    throw Error(ErrorKind::usage, a.at() + ": size=" + a.text("size") +
                                      " (DxHxW) is a volume's window in 3-D; a 2-D image, or a "
                                      "volume's planes (--planes), takes size=N or HxW");
  if (d != 0 && a.has("size-z"))
    throw Error(ErrorKind::usage, a.at() + ": size=" + a.text("size") +
                                      " gives the planes already: give size=DxHxW or size-z, "
                                      "not both");
  if (!c.volume()) return 1;
  return d != 0 ? d : a.has("size-z") ? a.integer("size-z") : rows;
}
StageParam footprint_param();
// A stage of make_morphology (morphology.cpp): minimum, maximum, opening, ...
StageEntry morphology_stage(const char* name, MorphKind kind, const char* help);

}  // namespace ooc::detail::morphology
