// The operations that know holes (issue 48, docs/design.md "Nodata"): built by the families'
// stages in place of their usual operation where the pipeline has a nodata value
// (PipelineSettings::nodata). The separable stages' normalized convolution, the rank filters (a
// volume's in 3-D too), convolve's sums (direct and FFT) and the compound stages run on the GPU
// too (kernels/cuda/masked), a volume's normalized convolution in 3-D too.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/engine.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/rank.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::kernels::masked {
struct RankArgs;        // kernels/cpu/masked/masked.hpp
struct VolumeRankArgs;  // kernels/cpu/masked/volume.hpp
}  // namespace ooc::kernels::masked

namespace ooc::detail {

// The stage parameters of normalized convolution: min-weight= and fill=.
StageParam min_weight_param();
StageParam fill_param();

// fill= as the stage gives it (true or false).
bool fill_of(const StageContext& c);

// Normalized convolution with filter f (convolution order, as SeparableFilter) of the stage's
// input, reading min-weight and fill from its arguments; its output c.out().
std::unique_ptr<Operation> make_masked_separable(const StageContext& c, const SeparableFilter& f);

// The masked Gaussian of the compound stages (dog, unsharp, subtract-background): holes kept,
// min-weight 0, to the accumulator's type.
std::unique_ptr<Operation> make_masked_gaussian(const StageContext& c, double sigma);
// Sigma y and x apart (anisotropic pixels).
std::unique_ptr<Operation> make_masked_gaussian(const StageContext& c, double sigma_y,
                                                double sigma_x);

// The same with convolve's 2-D kernel (odd sides, convolution order): the direct sum, or the FFT
// of x m and of m where method= asks it or auto finds it cheaper.
std::unique_ptr<Operation> make_masked_conv2d(const StageContext& c, const Kernel2d& k);
// The FFT's (masked_fft.cpp); null where `method` and the cost model take the direct sum.
std::unique_ptr<Operation> make_masked_fft_conv2d(const StageContext& c, const Kernel2d& k,
                                                  ConvMethod method, double min_weight, bool fill);

// A volume's normalized convolution in 3-D (masked_volume.cpp; CPU only): plane taps z, then
// xy's column and row taps (all in convolution order), described as `what`; or a 3-D kernel's
// direct sum (planes x rows x columns, convolution order; method=fft refused).
std::unique_ptr<Operation> make_masked_volume_separable(const StageContext& c,
                                                        const std::vector<double>& z,
                                                        const SeparableFilter& xy,
                                                        const std::string& what);
std::unique_ptr<Operation> make_masked_conv3d(const StageContext& c, const Kernel2d& k);
// Whether stage `name` knows a volume's holes in 3-D (the others that know holes take a
// volume's planes only: --planes).
bool masked_in_3d(const std::string& name);

// dog, unsharp and subtract-background (masked_combine.cpp): `combined`, the stage's combination
// of masked Gaussians, with nodata wherever the output's own input sample is a hole.
std::unique_ptr<Operation> keep_holes(std::unique_ptr<Operation> combined, double nodata);

// A rank filter's window (masked_rank.cpp): rows top before, h in all, columns left
// before, w in all, the samples where mask (h x w) is 1 (empty: all); `rank` is scipy's rank among
// the full window's `count` samples (kernels/cpu/masked/masked.hpp scales it to the valid ones).
struct MaskedWindow {
  std::int64_t top = 0, h = 1, left = 0, w = 1;
  std::vector<std::uint8_t> mask;
  std::string text;  // "3x3", "footprint F of 5x5": for describe()
};

// A rank filter over the valid samples of a rank stage's window (p: size or footprint, border),
// `rank` being scipy's; the unmasked filter gives the windows without holes.
std::unique_ptr<Operation> make_masked_rank(const StageContext& c, const MorphParams& p,
                                            std::int64_t rank, const std::string& what);
// A volume's rank filter over the valid samples of a 3-D window (masked_rank3d.cpp; CPU only):
// planes front before, d in all, rows and columns as MaskedWindow's, mask d x h x w (empty:
// all); `unmasked` (may be null) the unmasked filter whose samples are right wherever a window
// has no hole.
struct MaskedWindow3d {
  std::int64_t front = 0, d = 1;
  MaskedWindow xy;  // its mask d x h x w here
};
std::unique_ptr<Operation> make_masked_rank3d(const StageContext& c, MaskedWindow3d w,
                                              std::int64_t rank, std::int64_t count,
                                              const std::string& what,
                                              std::unique_ptr<Operation> unmasked);
// The masked median, percentile or rank stage of a volume in 3-D: a box of `depth` planes of
// p's rows and columns, or p's 3-D footprint.
std::unique_ptr<Operation> make_masked_rank_volume(const StageContext& c, const MorphParams& p,
                                                   std::int64_t depth, std::int64_t rank,
                                                   const std::string& what);

// A volume's masked minimum (max false) or maximum in 3-D; `dilation`: grey_dilation's window
// (opening's and closing's).
std::unique_ptr<Operation> masked_extreme3d(const StageContext& c, const MorphParams& p,
                                            std::int64_t depth, bool max, bool dilation);

// Makes the stages minimum, maximum, opening and closing among `stages` build their masked
// operations where the pipeline has a nodata value (and marks them masked).
void mask_morphology(std::vector<StageEntry>& stages);
// morphology_stages() with opening and closing masked (the registry's list of families).
std::vector<StageEntry> masked_morphology_stages();

// The conversion of `in` to `out` under nodata (masked_convert.cpp): the convert stage and the
// pipeline's last convert to --out-type. Holes become the output type's nodata value
// (kernels/cpu/masked/convert.hpp's nodata_of), valid samples that convert to it move off it.
std::unique_ptr<Operation> make_masked_convert(const ImageSpec& in, SampleType out, double nodata,
                                               std::string what);

// The GPU's normalized convolution of the separable stages (masked_separable_cuda.cpp, built
// with CUDA only): taps in correlation order, the output's shape and type, the nodata rule.
struct MaskedCudaArgs {
  std::vector<double> row_taps, col_taps;
  ImageSpec out;
  BorderMode border = BorderMode::reflect;
  double border_value = 0, nodata = 0, min_weight = 0;
  bool fill = false, f64 = false;
};
std::unique_ptr<CudaKernel> make_masked_separable_cuda(const std::vector<int>& devices,
                                                       const MaskedCudaArgs& a);
std::size_t masked_separable_cuda_scratch(std::int64_t band_rows, std::int64_t ry,
                                          std::int64_t row_samples, bool f64);

// The GPU's normalized convolution of convolve (masked_conv2d_cuda.cpp, built with CUDA only):
// the direct sum (the CPU's bytes), or the FFT's of x m and m over the CPU's tiles.
struct MaskedConv2dCudaArgs {
  std::vector<double> taps;  // convolution order, rows x cols, as Kernel2d
  std::int64_t rows = 1, cols = 1;
  ImageSpec out;
  BorderMode border = BorderMode::reflect;
  double border_value = 0, nodata = 0;
  double min_weight_need = 0;  // min-weight times the sum of |taps|, as the CPU's kernel sums it
  bool fill = false, f64 = false;
  struct FftTiles {
    std::int64_t n = 0, m = 0, h = 0, w = 0;  // kernels::FftTiling's
  };
  std::optional<FftTiles> fft;  // none: the direct sum
  double tolerance = 0;         // the FFT's: weights at most this count as none
};
std::unique_ptr<CudaKernel> make_masked_conv2d_cuda(const std::vector<int>& devices,
                                                    const MaskedConv2dCudaArgs& a);
std::size_t masked_conv2d_cuda_scratch(const MaskedConv2dCudaArgs& a, std::int64_t band_rows,
                                       std::int64_t halo);

// The GPU's masked rank filter (masked_rank_cuda.cpp, built with CUDA only), any window: the
// CPU's arguments (their band fields unset), the window's mask (empty: all), the input.
std::unique_ptr<CudaKernel> make_masked_rank_cuda(const std::vector<int>& devices,
                                                  const kernels::masked::RankArgs& a,
                                                  const std::vector<std::uint8_t>& mask,
                                                  const ImageSpec& in);

// A volume's in 3-D (masked_rank3d.cpp) of windows of up to kMaskedRank3dCudaMaxPlanes planes
// (cuda::kMaskedRankMaxPlanes).
inline constexpr std::int64_t kMaskedRank3dCudaMaxPlanes = 63;
std::unique_ptr<CudaKernel> make_masked_rank3d_cuda(const std::vector<int>& devices,
                                                    const kernels::masked::VolumeRankArgs& a,
                                                    const std::vector<std::uint8_t>& mask,
                                                    const ImageSpec& in);

// The GPU's masked conversion (masked_convert_cuda.cpp, built with CUDA only).
std::unique_ptr<CudaKernel> make_masked_convert_cuda(SampleType in, SampleType out, double nodata);

// The GPU's normalized convolution of a volume in 3-D (masked_volume_cuda.cpp, built with CUDA
// only): the CPU's separable taps (correlation order; z folded over the volume's planes, with the
// magnitudes folded apart) or 3-D kernel, of up to kMaskedVolumeCudaMaxPlanes planes.
inline constexpr std::int64_t kMaskedVolumeCudaMaxPlanes = 127;
struct MaskedVolumeCudaArgs {
  std::vector<double> z, z_abs, col, row;
  // Or a 3-D kernel (correlation order), 2 rz + 1 planes of 2 ry + 1 rows of 2 rx + 1.
  std::vector<double> taps3d;
  std::int64_t rz = 0, ry = 0, rx = 0;
  ImageSpec out;
  BorderMode border = BorderMode::reflect;
  double border_value = 0, nodata = 0;
  double min_weight_need = 0;  // min-weight times the sum of the kernel's |taps|
  bool fill = false, f64 = false;
};
std::unique_ptr<CudaKernel> make_masked_volume_cuda(const std::vector<int>& devices,
                                                    const MaskedVolumeCudaArgs& a);
std::size_t masked_volume_cuda_scratch(const MaskedVolumeCudaArgs& a, std::int64_t band_rows);

// The compound stages' kernel on the GPU (masked_convert_cuda.cpp, built with CUDA only): the
// combination's, then nodata of type `out` wherever the band's own input sample is a hole.
std::unique_ptr<CudaKernel> make_keep_holes_cuda(std::unique_ptr<CudaKernel> inner, SampleType out,
                                                 double nodata);

// "nan" or the exact number: how fingerprints and messages say a nodata value.
std::string nodata_text(double v);

}  // namespace ooc::detail
