// The 2-D convolution operation: kernels from files and built-ins, the rank-1 shortcut to the
// separable filter, the choice between the direct sum and the FFT (conv2d_costs), and the CPU
// kernels of kernels/cpu (the CUDA ones in conv2d_cuda.cpp and conv2d_fft_cuda.cpp).
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "band_fill.hpp"
#include "io/digest.hpp"
#include "io/npy.hpp"
#include "kernels/cpu/convolution/conv2d.hpp"
#include "kernels/cpu/convolution/fft_backend.hpp"
#include "kernels/cpu/convolution/fft_conv.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "ops/convolution/method_param.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace {

// Larger than anyone filters with, small enough that sizes never overflow.
constexpr std::int64_t kMaxSide = 4097;

Kernel2d builtin(const std::string& text) {
  Kernel2d k;
  k.name = text;
  auto number = [&](const std::string& arg) {
    char* end = nullptr;
    const double v = std::strtod(arg.c_str(), &end);
    if (arg.empty() || *end != '\0' || !std::isfinite(v))
      throw Error(ErrorKind::usage, "--kernel " + text + ": '" + arg + "' is not a number");
    return v;
  };
  if (text.rfind("box:", 0) == 0) {
    const double n = number(text.substr(4));
    if (n < 1 || n > kMaxSide || n != std::floor(n) || std::fmod(n, 2) != 1)
      throw Error(ErrorKind::usage, "--kernel box:N takes an odd N from 1 to " +
                                        std::to_string(kMaxSide) + ", got " + text.substr(4));
    k.rows = k.cols = static_cast<std::int64_t>(n);
    k.taps.assign(static_cast<std::size_t>(k.rows * k.cols), 1.0 / (n * n));
  } else if (text.rfind("gaussian2d:", 0) == 0) {
    const double sigma = number(text.substr(11));
    if (!(sigma > 0) || 3 * sigma > (kMaxSide - 1) / 2)
      throw Error(ErrorKind::usage, "--kernel gaussian2d:SIGMA takes a sigma above 0 and at most " +
                                        std::to_string((kMaxSide - 1) / 6) + ", got " +
                                        text.substr(11));
    const std::int64_t r = gaussian_radius(sigma);
    const std::vector<double> g = gaussian_taps(r, sigma);
    k.rows = k.cols = 2 * r + 1;
    for (double a : g)
      for (double b : g) k.taps.push_back(a * b);
  } else if (text == "laplace") {
    k.rows = k.cols = 3;
    k.taps = {0, 1, 0, 1, -4, 1, 0, 1, 0};
  } else if (text == "sobel-x") {
    k.rows = k.cols = 3;
    k.taps = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
  } else if (text == "sobel-y") {
    k.rows = k.cols = 3;
    k.taps = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
  } else {
    throw Error(ErrorKind::usage, "--kernel '" + text +
                                      "' is neither a file nor a built-in kernel: use a file, "
                                      "box:N, gaussian2d:SIGMA, laplace, sobel-x or sobel-y");
  }
  return k;
}

Kernel2d from_text(const std::string& path, const std::string& text) {
  Kernel2d k;
  k.name = path;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    for (char& c : line)
      if (c == ',' || c == '\t' || c == '\r') c = ' ';
    std::istringstream ls(line);
    std::vector<double> row;
    for (std::string tok; ls >> tok;) {
      char* end = nullptr;
      const double v = std::strtod(tok.c_str(), &end);
      if (*end != '\0')
        throw Error(ErrorKind::usage, "kernel file '" + path + "': '" + tok + "' is not a number");
      row.push_back(v);
    }
    if (row.empty()) continue;
    if (k.cols != 0 && static_cast<std::int64_t>(row.size()) != k.cols)
      throw Error(ErrorKind::usage, "kernel file '" + path + "': row " +
                                        std::to_string(k.rows + 1) + " has " +
                                        std::to_string(row.size()) + " taps, row 1 has " +
                                        std::to_string(k.cols) + ": every row needs as many");
    k.cols = static_cast<std::int64_t>(row.size());
    ++k.rows;
    k.taps.insert(k.taps.end(), row.begin(), row.end());
  }
  return k;
}

// numpy's half precision (float16), exactly as a double.
double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                           : exponent == 31 ? (mantissa ? std::numeric_limits<double>::quiet_NaN()
                                                        : std::numeric_limits<double>::infinity())
                                            : std::ldexp(mantissa + 1024, exponent - 25);
  return sign ? -magnitude : magnitude;
}

// Any real dtype, as scipy.ndimage.convolve takes its weights (it casts them to float64): bool,
// integers of 1 to 8 bytes, float16/32/64, in C or Fortran order; 2-D, or 3-D of one channel.
Kernel2d from_npy(const std::string& path, const std::string& bytes) {
  const std::string what =
      "; a kernel file is a 2-D .npy array of real numbers (bool, int8 to int64, uint8 to "
      "uint64, float16, float32 or float64)";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  NpyArray a;
  try {
    a = parse_npy_array(p, bytes.size(), path);
  } catch (const Error& e) {  // a bad kernel is a bad option, not a bad input image
    throw Error(ErrorKind::usage, std::string("kernel file: ") + e.what() + what);
  }
  const char kind = a.kind.size() == 2 ? a.kind[0] : '?';
  const std::size_t width = a.kind.size() == 2 ? std::size_t(a.kind[1] - '0') : 0;
  const bool real =
      ((kind == 'i' || kind == 'u') && (width == 1 || width == 2 || width == 4 || width == 8)) ||
      (kind == 'f' && (width == 2 || width == 4 || width == 8)) || (kind == 'b' && width == 1);
  if (!real)
    throw Error(ErrorKind::usage,
                "kernel file '" + path + "' has dtype '" + a.order + a.kind + "'" + what);
  if (a.dims.size() != 2 && a.dims.size() != 3)
    throw Error(ErrorKind::usage, "kernel file '" + path + "' has shape " + a.shape + what);
  Kernel2d k;
  k.name = path;
  k.axes3 = a.dims.size() == 3;
  k.one_column = k.axes3 && a.dims[2] == 1;
  // 3 axes: planes first (a volume's), except (K, L, 1), an image's kernel of one channel.
  const std::size_t first = k.axes3 && !k.one_column ? 1 : 0;
  k.planes = first ? a.dims[0] : 1;
  k.rows = a.dims[first];
  k.cols = a.dims[first + 1];
  if (k.rows > kMaxSide || k.cols > kMaxSide || k.planes > kMaxSide)
    throw Error(ErrorKind::usage,
                "kernel '" + path + "' is larger than " + std::to_string(kMaxSide) + " on a side");
  const std::size_t count = static_cast<std::size_t>(k.planes * k.rows * k.cols);
  if (bytes.size() < a.data_offset + count * width)
    throw Error(ErrorKind::usage, "kernel file '" + path + "' is truncated");
  k.taps.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    // The value in its byte order ('<', '>', '|' for single bytes, '=' the native one: little).
    std::uint64_t v = 0;
    for (std::size_t b = 0; b < width; ++b)
      v = (v << 8) | p[a.data_offset + i * width + (a.order == '>' ? b : width - 1 - b)];
    double tap = 0;
    if (kind == 'f' && width == 2) {
      tap = half_to_double(static_cast<std::uint16_t>(v));
    } else if (kind == 'f' && width == 4) {
      float f;
      const auto u = static_cast<std::uint32_t>(v);
      std::memcpy(&f, &u, 4);
      tap = f;
    } else if (kind == 'f') {
      std::memcpy(&tap, &v, 8);
    } else if (kind == 'i') {
      // Sign-extended from its width.
      const int shift = static_cast<int>(64 - 8 * width);
      tap = static_cast<double>(static_cast<std::int64_t>(v << shift) >> shift);
    } else {
      tap = static_cast<double>(v);
    }
    // Fortran order: element (d, r, q) is stored at (q * rows + r) * planes + d.
    const auto D = static_cast<std::size_t>(k.planes), H = static_cast<std::size_t>(k.rows),
               W = static_cast<std::size_t>(k.cols);
    const std::size_t at = a.fortran ? ((i % D) * H + (i / D) % H) * W + i / (D * H) : i;
    k.taps[at] = tap;
  }
  return k;
}

class Conv2dCpuKernel final : public CpuKernel {
 public:
  explicit Conv2dCpuKernel(const kernels::Conv2dArgs& base) : base_(base) {}
  void run(const CpuBand& b) override {
    kernels::Conv2dArgs a = base_;
    detail::set_band(a, b, b.halo - a.ry);  // the halo is the FFT's where CUDA takes the FFT
    kernels::conv2d_band(a);
  }

 private:
  kernels::Conv2dArgs base_;
};

class Conv2d final : public Operation {
 public:
  Conv2d(const ImageSpec& in, const Conv2dParams& p, const EngineOptions& o)
      : params_(p),
        out_spec_{in.width, in.height, in.channels, p.out_type.value_or(in.type),
                  in.depth, in.stack},
        costs_(conv2d_costs(in, p)) {
    // Correlation order: the kernel flipped along both axes.
    corr_.assign(p.kernel.taps.rbegin(), p.kernel.taps.rend());
    detail::set_images(args_, in, out_spec_, p.border, p.border_value);
    args_.taps = corr_.data();
    args_.rx = p.kernel.cols / 2;
    args_.ry = p.kernel.rows / 2;
    args_.strip_samples = o.strip_samples;
    args_.f64 = accumulates_in_f64(in.type, out_spec_.type, p.precision);
    // Without CUDA the GPU's pick must not shape the CPU's bands: the FFT's tile grid and halo
    // made the direct sum 1.25x slower (9 x 9 on 32768 x 512 f32, 2 threads, `run fft-auto`).
    if (!kCudaBuilt) costs_.cuda_uses_fft = false;
    if (costs_.cpu_uses_fft || costs_.cuda_uses_fft) {
      tiling_ = kernels::FftTiling{costs_.tile_rows, costs_.tile_cols,
                                   costs_.tile_rows - p.kernel.rows + 1,
                                   costs_.tile_cols - p.kernel.cols + 1};
      detail::set_images(fft_args_, in, out_spec_, p.border, p.border_value);
    }
  }

  std::string describe() const override {
    return "2-D " + std::to_string(params_.kernel.rows) + "x" +
           std::to_string(params_.kernel.cols) + " kernel " + params_.kernel.name + ", border " +
           std::string(name(params_.border)) + ", accumulate " + (args_.f64 ? "f64" : "f32") +
           ", " + method_text();
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           detail::Digest()
               .add(params_.kernel.taps)
               .add(double(params_.kernel.rows))
               .add(params_.border_value)
               .add(std::string(name(params_.border)))
               .hex() +
           " to " + std::string(name(out_spec_.type)) +
           // How the last tile row is filled (fft_conv.hpp): a journal of a build that filled it
           // by the border rule, which gives other last bits, must not be resumed.
           (uses_fft() ? ", tile rows past the halo zero" : "");
  }
  std::optional<ImageSpec> output() const override { return out_spec_; }
  // The FFT's tiles need every row of a tile that touches the band (fft_conv.hpp): a band on the
  // tile grid only the kernel's rows, any other band up to a tile row more.
  std::int64_t halo() const override {
    return uses_fft() ? kernels::fft_halo(K(), tiling_) : args_.ry;
  }
  std::int64_t row_grid() const override { return uses_fft() ? tiling_.h : 1; }
  std::int64_t grid_halo() const override { return args_.ry; }
  BorderMode border() const override { return params_.border; }
  // The direct sum filters any tile as an image; the FFT's tiles are fixed in image columns.
  std::optional<std::int64_t> column_halo() const override {
    if (costs_.cpu_uses_fft) return std::nullopt;
    return args_.rx;
  }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    if (costs_.cpu_uses_fft)  // the shared spectrum counted with each thread: a bound
      return kernels::FftConv2d::thread_bytes(tiling_, args_.f64) +
             kernels::FftConv2d::shared_bytes(tiling_, args_.f64);
    kernels::Conv2dArgs a = args_;
    a.out_rows = band_rows;
    a.width = cols;
    return kernels::conv2d_scratch_bytes(a);
  }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    if (costs_.cuda_uses_fft)
      return conv2d_fft_cuda_scratch(fft_cuda_shape(), band_rows, args_.f64);
#endif
    (void)band_rows;
    return 0;
  }
  // Whole tile rows per band where the band is taller than one: fewer tiles cut by a band edge
  // (each is transformed by both bands). Bands on the tile grid are whole tile rows anyway.
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t /*span*/) const override {
    if (!uses_fft() || rows < tiling_.h) return rows;
    return rows / tiling_.h * tiling_.h;
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    if (costs_.cpu_uses_fft)
      return std::make_unique<detail::FftBandKernel<kernels::FftConv2d>>(
          std::make_shared<const kernels::FftConv2d>(params_.kernel.taps, K(), L(), tiling_,
                                                     args_.f64),
          fft_args_);
    return std::make_unique<Conv2dCpuKernel>(args_);
  }
  Cost cost() const override {
    Cost c = costs_.work;
    c.cpu_fft = costs_.cpu_uses_fft;
    c.cuda_fft = costs_.cuda_uses_fft;
    return c;
  }
  bool has_cuda() const override {
    return kCudaBuilt;
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    if (costs_.cuda_uses_fft)
      return make_conv2d_fft_cuda(devices, fft_cuda_shape(), params_.kernel.taps, args_.f64);
    return make_conv2d_cuda(devices, out_spec_, params_.border, params_.border_value, corr_,
                            args_.rx, args_.ry, args_.f64);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  std::int64_t K() const {
    return params_.kernel.rows;
  }
  std::int64_t L() const {
    return params_.kernel.cols;
  }
  bool uses_fft() const {
    return costs_.cpu_uses_fft || costs_.cuda_uses_fft;
  }
  std::string method_text() const {
    const std::string tiles = std::to_string(tiling_.n) + "x" + std::to_string(tiling_.m);
    if (costs_.cpu_uses_fft && costs_.cuda_uses_fft)
      return "FFT (overlap-save, " + tiles + " tiles; " + kernels::fft_library() + " / cuFFT)";
    if (costs_.cpu_uses_fft)
      return "FFT on the CPU (overlap-save, " + tiles + " tiles, " + kernels::fft_library() + ")" +
             (kCudaBuilt ? ", direct on CUDA" : "");
    if (costs_.cuda_uses_fft)
      return "direct on the CPU, FFT on CUDA (overlap-save, " + tiles + " tiles, cuFFT)";
    return "direct";
  }
#if defined(OOC_HAVE_CUDA)
  FftCudaShape fft_cuda_shape() const {
    return ooc::fft_cuda_shape(K(), L(), tiling_, out_spec_, params_.border, params_.border_value);
  }
#endif

  Conv2dParams params_;
  ImageSpec out_spec_;
  Conv2dCosts costs_;
  std::vector<double> corr_;
  kernels::Conv2dArgs args_;
  kernels::FftTiling tiling_;
  kernels::FftConvArgs fft_args_;
};

// The separable filter, described as the 2-D kernel it stands for.
class AsSeparable final : public Operation {
 public:
  AsSeparable(std::unique_ptr<Operation> op, std::string what)
      : op_(std::move(op)), what_(std::move(what)) {}
  std::string describe() const override { return what_ + ", run as " + op_->describe(); }
  std::string fingerprint() const override { return what_ + ", run as " + op_->fingerprint(); }
  std::optional<ImageSpec> output() const override { return op_->output(); }
  std::int64_t halo() const override { return op_->halo(); }
  BorderMode border() const override { return op_->border(); }
  std::optional<std::int64_t> column_halo() const override { return op_->column_halo(); }
  std::size_t cpu_scratch_bytes(std::int64_t r, std::int64_t cols) const override {
    return op_->cpu_scratch_bytes(r, cols);
  }
  std::size_t cpu_band_bytes(std::int64_t r, std::int64_t cols) const override {
    return op_->cpu_band_bytes(r, cols);
  }
  std::size_t cuda_scratch_bytes(std::int64_t r) const override {
    return op_->cuda_scratch_bytes(r);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override { return op_->make_cpu(); }
  bool has_cuda() const override { return op_->has_cuda(); }
  bool cpu_gives_cuda_bits() const override { return op_->cpu_gives_cuda_bits(); }
  Cost cost() const override { return op_->cost(); }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& d) const override {
    return op_->make_cuda(d);
  }

 private:
  std::unique_ptr<Operation> op_;
  std::string what_;
};

}  // namespace

Kernel2d parse_kernel(const std::string& text, std::size_t mem_limit) {
  Kernel2d k;
  struct stat st {};
  if (::stat(text.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw Error(ErrorKind::usage, "kernel file '" + text + "' is not a regular file");
    // A rough bound before reading: a tap takes at least two characters in a text file (1 to 8
    // bytes in a .npy file).
    if (static_cast<std::size_t>(st.st_size) / 2 * 64 > mem_limit)
      throw Error(ErrorKind::usage, "kernel file '" + text + "' (" + std::to_string(st.st_size) +
                                        " bytes) is too large for --mem-limit " +
                                        format_bytes(double(mem_limit)));
    std::ifstream in(text, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    const std::string bytes = s.str();
    k = bytes.rfind("\x93NUMPY", 0) == 0 ? from_npy(text, bytes) : from_text(text, bytes);
  } else {
    k = builtin(text);
  }
  if (k.rows == 0 || k.cols == 0)
    throw Error(ErrorKind::usage, "kernel '" + text + "' has no taps");
  if (k.rows % 2 == 0 || k.cols % 2 == 0 || k.planes % 2 == 0)
    throw Error(ErrorKind::usage,
                "kernel '" + text + "' is " +
                    (k.axes3 && !k.one_column ? std::to_string(k.planes) + " x " : std::string()) +
                    std::to_string(k.rows) + " x " + std::to_string(k.cols) +
                    ": every side must be odd (the center is the origin)");
  if (k.rows > kMaxSide || k.cols > kMaxSide)
    throw Error(ErrorKind::usage,
                "kernel '" + text + "' is larger than " + std::to_string(kMaxSide) + " on a side");
  for (double t : k.taps)
    if (!std::isfinite(t))
      throw Error(ErrorKind::usage, "kernel '" + text + "' holds a tap that is not finite");
  return k;
}

std::optional<SeparableFilter> separable_factors(const Kernel2d& k) {
  // Pivot on the largest tap: k = col x row^T with col = k[:, q], row = k[p, :] / k[p][q].
  std::size_t pivot = 0;
  double peak = 0;
  for (std::size_t i = 0; i < k.taps.size(); ++i)
    if (std::abs(k.taps[i]) > peak) peak = std::abs(k.taps[i]), pivot = i;
  if (peak == 0) return std::nullopt;
  const std::int64_t p = static_cast<std::int64_t>(pivot) / k.cols;
  const std::int64_t q = static_cast<std::int64_t>(pivot) % k.cols;
  SeparableFilter f;
  for (std::int64_t i = 0; i < k.rows; ++i) f.col.push_back(k.taps[i * k.cols + q]);
  for (std::int64_t j = 0; j < k.cols; ++j) f.row.push_back(k.taps[p * k.cols + j] / k.taps[pivot]);
  // Float64 rounding of the products a rank-1 kernel was made of, a few units of 2^-52.
  const double tolerance = 8 * 0x1p-52 * peak;
  for (std::int64_t i = 0; i < k.rows; ++i)
    for (std::int64_t j = 0; j < k.cols; ++j)
      if (std::abs(k.taps[i * k.cols + j] - f.col[i] * f.row[j]) > tolerance) return std::nullopt;
  return f;
}

ConvMethod parse_conv_method(const std::string& text) {
  if (text == "auto") return ConvMethod::automatic;
  if (text == "direct") return ConvMethod::direct;
  if (text == "fft") return ConvMethod::fft;
  throw Error(ErrorKind::usage, "--method takes auto, direct or fft, got '" + text + "'");
}

const char* name(ConvMethod m) noexcept {
  switch (m) {
    case ConvMethod::direct:
      return "direct";
    case ConvMethod::fft:
      return "fft";
    case ConvMethod::automatic:
      break;
  }
  return "auto";
}

double fft_error_bound(std::int64_t n, std::int64_t m, bool f64) noexcept {
  // Forward, product and inverse each add about log2 of the size in roundings (Higham, "Accuracy
  // and Stability of Numerical Algorithms", 24.1), the spectrum of the kernel one more; 4 covers
  // the constants, measured in tests/cli/fft_check.py with a margin.
  const double u = f64 ? 0x1p-53 : 0x1p-24;
  return 4.0 *
         (std::log2(double(std::max<std::int64_t>(n, 1)) * double(std::max<std::int64_t>(m, 1))) +
          2) *
         u;
}

Conv2dCosts conv2d_costs(const ImageSpec& in, const Conv2dParams& p) {
  Conv2dCosts c;
  const bool f64 = accumulates_in_f64(in.type, p.out_type.value_or(in.type), p.precision);
  const double inf = std::numeric_limits<double>::infinity();
  c.work.kind = Cost::Kind::conv2d;
  c.work.f64 = f64;
  c.work.taps = double(p.kernel.rows) * double(p.kernel.cols);
  c.cpu_direct = cpu_ns_per_sample(c.work);
  c.cuda_direct = cuda_ns_per_sample(c.work);
  c.cpu_fft = c.cuda_fft = inf;
  if (p.method != ConvMethod::direct) {
    const kernels::FftTiling t =
        kernels::plan_fft_tiling(p.kernel.rows, p.kernel.cols, in.height, in.width);
    if (t.valid()) {
      c.tile_rows = t.n;
      c.tile_cols = t.m;
      c.work.fft_work = kernels::fft_work_per_sample(t, in.height, in.width);
      c.work.fft_work_cuda =
          kernels::fft_work_per_sample(t, in.height, in.width, kernels::kCufftWorkPolicy);
      Cost fft = c.work;
      fft.cpu_fft = fft.cuda_fft = true;
      c.cpu_fft = cpu_ns_per_sample(fft);
      c.cuda_fft = cuda_ns_per_sample(fft);
    }
  }
  const bool force = p.method == ConvMethod::fft;
  c.cpu_uses_fft = c.tile_rows > 0 && (force || c.cpu_fft < c.cpu_direct);
  c.cuda_uses_fft = c.tile_rows > 0 && (force || c.cuda_fft < c.cuda_direct);
  return c;
}

std::unique_ptr<Operation> make_conv2d(const ImageSpec& input, const Conv2dParams& params,
                                       const EngineOptions& options) {
  if (params.kernel.axes3 && !params.kernel.one_column && params.kernel.planes > 1)
    throw Error(ErrorKind::usage, "kernel '" + params.kernel.name + "' has " +
                                      std::to_string(params.kernel.planes) +
                                      " planes: a 3-D kernel filters a volume in 3-D");
  if (params.method == ConvMethod::fft) {
    if (!conv2d_costs(input, params).cpu_uses_fft)
      throw Error(ErrorKind::usage, "--method fft: no FFT tile of at most 2^20 points holds the " +
                                        std::to_string(params.kernel.rows) + " x " +
                                        std::to_string(params.kernel.cols) +
                                        " kernel: use --method direct");
    return std::make_unique<Conv2d>(input, params, options);
  }
  auto f = separable_factors(params.kernel);
  // Under a constant border the separable filter pads the x-filtered rows with the constant,
  // where the 2-D convolution pads the input: the same only when the row taps sum to 1 (or the
  // constant is 0). Rescale the factors so; a row summing to 0 cannot be, and stays 2-D.
  if (f && params.border == BorderMode::constant && params.border_value != 0) {
    double sum = 0;
    for (double t : f->row) sum += t;
    if (std::abs(sum) < 1e-12) {
      f.reset();
    } else {
      for (double& t : f->row) t /= sum;
      for (double& t : f->col) t *= sum;
    }
  }
  if (f && params.method == ConvMethod::automatic) {
    SeparableParams s;
    s.filter = *f;
    s.border = params.border;
    s.border_value = params.border_value;
    s.out_type = params.out_type;
    s.precision = params.precision;
    return std::make_unique<AsSeparable>(make_separable(input, s, options),
                                         "2-D " + std::to_string(params.kernel.rows) + "x" +
                                             std::to_string(params.kernel.cols) + " kernel " +
                                             params.kernel.name + " of rank 1");
  }
  return std::make_unique<Conv2d>(input, params, options);
}

namespace detail {

namespace {

// A volume's convolution, as scipy.ndimage.convolve's with weights of as many axes: a kernel read
// from an array of 3 axes (one of a single plane filters each plane in 2-D); 2-D kernels are
// refused, as scipy refuses them. Under nodata the normalized sums (masked_volume.cpp).
std::unique_ptr<Operation> volume_conv(const StageContext& c, Conv2dParams p) {
  Kernel2d& k = p.kernel;
  if (!k.axes3)
    throw Error(ErrorKind::usage, c.args.at() + ": kernel '" + k.name +
                                      "' is 2-D: a volume takes a 3-D kernel (planes x rows x "
                                      "columns, a .npy), or add --planes to filter each plane "
                                      "in 2-D");
  if (k.one_column) {  // (K, L, 1): K planes of L rows and one column
    k.planes = k.rows;
    k.rows = k.cols;
    k.cols = 1;
    k.one_column = false;
  }
  if (c.settings.nodata) return k.planes == 1 ? make_masked_conv2d(c, k) : make_masked_conv3d(c, k);
  if (k.planes == 1) return make_conv2d(c.in, p, c.options);
  return make_conv3d(c.in, p, c.options);
}

}  // namespace

// The 2-D convolution as a pipeline stage: convolve (direct or FFT as the plan decides); a
// volume's with a 3-D kernel (conv3d.cpp).
std::vector<StageEntry> conv2d_stages() {
  using Kind = StageParam::Kind;
  std::vector<StageEntry> s;
  s.push_back({{"convolve",
                "2-D convolution (scipy.ndimage.convolve; as oocconv --kernel); volumes: a 3-D "
                "kernel (.npy)",
                {other_param("kernel", Kind::text, std::nullopt,
                             "FILE (text or .npy), box:N, gaussian2d:S, laplace, sobel-x, sobel-y"),
                 other_param("method", Kind::text, std::string("auto"),
                             "auto (a cost model), direct or fft (overlap-save tiles)"),
                 min_weight_param(), fill_param()}},
               [](const StageContext& c) {
                 Conv2dParams p;
                 // A kernel given as values (the Python module's arrays), or named: a file or a
                 // built-in.
                 const StageValue& k = c.args.value("kernel");
                 p.kernel = std::holds_alternative<Kernel2d>(k)
                                ? std::get<Kernel2d>(k)
                                : parse_kernel(std::get<std::string>(k), c.options.mem_limit
                                                                             ? c.options.mem_limit
                                                                             : default_mem_limit());
                 p.border = c.settings.border;
                 p.border_value = c.settings.border_value;
                 p.out_type = c.out();
                 p.precision = c.settings.precision;
                 p.method = method_of(c.args);
                 // Holes: the normalized sum, direct or FFT (masked_separable.cpp).
                 if (c.settings.nodata && !c.volume())
                   return BuiltStage{make_masked_conv2d(c, p.kernel)};
                 if (!c.settings.nodata && (c.args.has("min-weight") || c.args.has("fill")))
                   throw Error(ErrorKind::usage, c.args.at() +
                                                     ": min-weight and fill weigh holes: give "
                                                     "--nodata (or an input with a nodata tag)");
                 if (c.volume()) return BuiltStage{volume_conv(c, std::move(p))};
                 return BuiltStage{make_conv2d(c.in, p, c.options)};
               }});
  for (StageEntry& e : s) e.decl.takes_convert = e.decl.volume = e.decl.masked = true;
  return s;
}

}  // namespace detail
}  // namespace ooc
