// run_on_device (ooc/device_image.hpp): an operation's CUDA kernels over an image that is already
// in device memory. The kernels read each band's rows with its halo one after the other
// (CudaBand), so an operation with a halo gets a padded copy of the image, made on the device:
// each plane's rows with `halo` rows above and below, filled by the border rule as the engine
// fills a band's (the constant border's rows left unset: the kernels know them). A volume's band
// gets its window of planes through CudaBand::plane_in, the border rule in z applied to plane
// numbers, so no plane is copied twice.
#include "ooc/device_image.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "check.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "resources.hpp"

namespace ooc {

int cuda_device_of(const void* p) noexcept {
  if (!p || cuda::device_count() == 0) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

namespace {

void check_image(const DeviceImage& d, const char* what) {
  if (!d.data) throw Error(ErrorKind::usage, std::string(what) + " has no device address");
  if (d.row_stride < d.spec.row_bytes() ||
      (d.spec.depth > 1 && d.plane_stride < d.row_stride * static_cast<std::size_t>(d.spec.height)))
    throw Error(ErrorKind::usage, std::string(what) +
                                      "'s rows or planes overlap: give a C-contiguous array "
                                      "(cupy.ascontiguousarray)");
}

// The tallest band (a multiple of `grid` rows, or the plane's height) whose scratch fits `room`.
std::int64_t band_rows_for(const Operation& op, std::int64_t height, std::int64_t grid,
                           std::size_t room) {
  std::int64_t rows = height;
  while (rows > grid && op.cuda_scratch_bytes(rows) > room)
    rows = std::max(grid, (rows / 2 + grid - 1) / grid * grid);
  return rows;
}

}  // namespace

DeviceRunStats run_on_device(const Operation& op, const DeviceImage& in, const DeviceImage& out,
                             int device, void* stream_ptr) {
  const auto t0 = std::chrono::steady_clock::now();
  // Appended, not "'" + ...: GCC 12 warns (-Wrestrict) on that concatenation here by mistake.
  std::string what = "'";
  what += op.describe();
  what += "'";
  if (!op.has_cuda())
    throw Error(ErrorKind::usage, what +
                                      " has no CUDA kernels: give a NumPy array "
                                      "(cupy.asnumpy) to run it on the CPU");
  if (op.partial_bytes() > 0 || !op.output())
    throw Error(ErrorKind::usage, what +
                                      " is a reduction over the whole image (a pass of its "
                                      "own): give a NumPy array (cupy.asnumpy)");
  if (op.projects())
    throw Error(ErrorKind::usage, what + " projects along z: give a NumPy array (cupy.asnumpy)");
  const ImageSpec& s = in.spec;
  const ImageSpec o = *op.output();
  if (o.width != out.spec.width || o.height != out.spec.height || o.depth != out.spec.depth ||
      o.channels != out.spec.channels || o.type != out.spec.type)
    throw Error(ErrorKind::usage, "output is " + out.spec.describe() + ", the operation makes " +
                                      o.describe() + ": give an output of that shape and dtype");
  check_image(in, "input");
  check_image(out, "output");
  const std::size_t in_bytes = in.plane_stride * static_cast<std::size_t>(s.depth - 1) +
                               in.row_stride * static_cast<std::size_t>(s.height);
  const std::size_t out_bytes = out.plane_stride * static_cast<std::size_t>(s.depth - 1) +
                                out.row_stride * static_cast<std::size_t>(s.height);
  if (out.data < in.data + in_bytes && in.data < out.data + out_bytes)
    throw Error(ErrorKind::usage,
                "output shares device memory with the input: give a separate "
                "output (cupy.empty_like)");

  OOC_CUDA_TRY(cudaSetDevice(device));
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  const std::int64_t H = s.height, D = s.depth, grid = std::max<std::int64_t>(op.row_grid(), 1);
  // Bands start on the operation's row grid (a multiple of it, or row 0) and end on it or at the
  // plane's end: the halo the grid allows (ooc::band_halo's rule).
  const std::int64_t halo = grid > 1 ? op.grid_halo() : op.halo();
  const std::int64_t ph = op.plane_halo();
  const BorderMode border = op.border();
  const std::size_t row = s.row_bytes();

  std::size_t free_b = 0, total_b = 0;
  cuda::device_memory(device, free_b, total_b);
  // The padded copy, then the scratch in what is left (a tenth kept for the context and others).
  const std::int64_t padded_rows = halo > 0 ? H + 2 * halo : 0;
  const std::size_t padded_bytes = row * static_cast<std::size_t>(padded_rows * D);
  if (padded_bytes > free_b / 10 * 9)
    throw Error(ErrorKind::device,
                "GPU " + std::to_string(device) + " has " + format_bytes(double(free_b)) +
                    " free, too little for the image's copy with its halo (" +
                    format_bytes(double(padded_bytes)) + "): filter smaller blocks");
  const std::int64_t band_rows = band_rows_for(op, H, grid, (free_b / 10 * 9 - padded_bytes) / 2);
  cuda::DeviceBuffer padded(device, padded_bytes);
  cuda::DeviceBuffer scratch(device, op.cuda_scratch_bytes(band_rows));

  // Plane q's row y (-halo <= y < H + halo) as the kernels read it.
  const std::size_t padded_plane = row * static_cast<std::size_t>(padded_rows);
  auto row_at = [&](std::int64_t q, std::int64_t y) -> const std::byte* {
    if (halo == 0)
      return in.data + static_cast<std::size_t>(q) * in.plane_stride +
             static_cast<std::size_t>(y) * in.row_stride;
    return padded.data() + static_cast<std::size_t>(q) * padded_plane +
           static_cast<std::size_t>(y + halo) * row;
  };
  const std::size_t in_stride = halo == 0 ? in.row_stride : row;
  if (halo > 0) {
    // Every plane's rows at once (a 2-D copy of D x H rows is D copies of H rows apart from the
    // planes' spacing: one call per plane), then each halo row of every plane in one call.
    for (std::int64_t q = 0; q < D; ++q)
      OOC_CUDA_TRY(cudaMemcpy2DAsync(const_cast<std::byte*>(row_at(q, 0)), row,
                                     in.data + static_cast<std::size_t>(q) * in.plane_stride,
                                     in.row_stride, row, static_cast<std::size_t>(H),
                                     cudaMemcpyDeviceToDevice, stream));
    for (std::int64_t y = -halo; y < H + halo; ++y) {
      if (y == 0) y = H;
      const std::int64_t m = map_border(y, H, border);
      if (m < 0) continue;
      OOC_CUDA_TRY(cudaMemcpy2DAsync(const_cast<std::byte*>(row_at(0, y)), padded_plane,
                                     row_at(0, m), padded_plane, row, static_cast<std::size_t>(D),
                                     cudaMemcpyDeviceToDevice, stream));
    }
  }

  const std::unique_ptr<CudaKernel> kernel = op.make_cuda({device});
  const CudaSlotInfo slot{0, device, stream};
  kernel->start(slot);
  DeviceRunStats st;
  std::vector<const std::byte*> planes(static_cast<std::size_t>(2 * ph + 1));
  try {
    for (std::int64_t z = 0; z < D; ++z) {
      for (std::int64_t y0 = 0; y0 < H; y0 += band_rows) {
        CudaBand b;
        b.band = Band{st.bands, y0, std::min(band_rows, H - y0), z, z * H + y0};
        b.halo = halo;
        b.first_row = y0 - halo;
        b.in = row_at(z, y0 - halo);
        b.in_stride = in_stride;
        b.plane_halo = ph;
        if (ph > 0) {
          for (std::int64_t k = 0; k <= 2 * ph; ++k) {
            const std::int64_t q = map_border(z - ph + k, D, border);
            planes[static_cast<std::size_t>(k)] = q < 0 ? nullptr : row_at(q, y0);
          }
          b.plane_in = planes.data();
        }
        b.in_spec = s;
        b.out = out.data + static_cast<std::size_t>(z) * out.plane_stride +
                static_cast<std::size_t>(y0) * out.row_stride;
        b.out_stride = out.row_stride;
        b.scratch = scratch.data();
        b.device = device;
        b.stream = stream;
        kernel->run_async(b);
        ++st.bands;
      }
    }
    OOC_CUDA_TRY(cudaStreamSynchronize(stream));
  } catch (...) {
    (void)cudaStreamSynchronize(stream);
    kernel->stop(slot);
    throw;
  }
  kernel->stop(slot);
  st.device_bytes = padded_bytes + scratch.size();
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace ooc
