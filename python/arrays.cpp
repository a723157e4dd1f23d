// ooc's filters over NumPy arrays (arrays.hpp).
#include "arrays.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <utility>

#include "ooc/detail/size_text.hpp"
#include "ooc/filter_options.hpp"
#include "ooc/limits.hpp"

namespace ooc::python {

namespace {

ooc::SampleType sample_type_of(const py::dtype& dt) {
  const char k = dt.kind();
  const auto size = dt.itemsize();
  if (k == 'u' && size == 1) return ooc::SampleType::u8;
  if (k == 'u' && size == 2) return ooc::SampleType::u16;
  if (k == 'i' && size == 2) return ooc::SampleType::i16;
  if (k == 'u' && size == 4) return ooc::SampleType::u32;
  if (k == 'i' && size == 4) return ooc::SampleType::i32;
  if (k == 'f' && size == 4) return ooc::SampleType::f32;
  if (k == 'f' && size == 8) return ooc::SampleType::f64;
  throw ooc::Error(ooc::ErrorKind::usage,
                   "dtype " + py::str(static_cast<const py::object&>(dt)).cast<std::string>() +
                       " is not supported: use uint8, uint16, int16, uint32, int32, float32 or "
                       "float64");
}

}  // namespace

// Where the samples of an (H, W) or (H, W, C) array live, or with `volume` those of a (Z, H, W)
// or (Z, H, W, C) one: any strides (a strided view, a transposed or reversed array), any byte
// order. A 4-D array is a volume whatever `volume` says.
ooc::MemoryImage layout_of(const py::array& a, const char* what, bool volume) {
  const auto ndim = a.ndim();
  volume = ndim == 4 || (volume && ndim == 3);
  if (ndim < 2 || ndim > 4)
    throw ooc::Error(ooc::ErrorKind::usage,
                     std::string(what) +
                         " must be 2-D (H, W), 3-D (H, W, C) or (Z, H, W) or 4-D (Z, H, W, C), "
                         "got " +
                         std::to_string(ndim) + " dimensions");
  const int z = volume ? 1 : 0;  // the first axis of a plane
  ooc::MemoryImage l;
  ooc::ImageSpec& s = l.spec;
  s.depth = volume ? a.shape(0) : 1;
  s.height = a.shape(z);
  s.width = a.shape(z + 1);
  const bool interleaved = ndim == z + 3;
  s.channels = interleaved ? static_cast<int>(a.shape(z + 2)) : 1;
  s.type = sample_type_of(a.dtype());
  if (interleaved && (a.shape(z + 2) < 1 || a.shape(z + 2) > 4))
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) + " has " +
                                                std::to_string(a.shape(z + 2)) +
                                                " channels (last axis): ooc takes 1 to 4");
  ooc::validate(s);
  const auto item = static_cast<std::ptrdiff_t>(a.itemsize());
  // data() is the first sample whatever the strides' signs. Not const: an output's rows are
  // written through it (array_run checks that the output is writeable).
  l.data = static_cast<std::byte*>(const_cast<void*>(a.data()));
  l.row_stride = a.strides(z);
  l.col_stride = a.strides(z + 1);
  l.channel_stride = interleaved ? a.strides(z + 2) : item;
  if (volume) {
    // MemoryImage reads a plane stride of 0 as planes one after the other.
    if (a.strides(0) == 0 && s.depth > 1)
      throw ooc::Error(ooc::ErrorKind::usage,
                       std::string(what) +
                           " repeats one plane (axis 0 of stride 0, numpy.broadcast_to): give "
                           "it as an array of its own, or filter the plane");
    l.plane_stride = a.strides(0);
  }
  const char order = a.dtype().byteorder();
  l.swap_bytes = item > 1 && (order == '>' || order == '<') &&
                 (order == '>') != (std::endian::native == std::endian::big);
  return l;
}

ArrayRun array_run(const py::array& input, const py::array& output, const py::dict& o,
                   const py::object& progress) {
  if (!output.writeable())
    throw ooc::Error(ooc::ErrorKind::usage, "output is read-only: give a writeable array");
  ArrayRun a{input,
             output,
             layout_of(input, "input", get<bool>(o, "volume", false)),
             layout_of(output, "output", get<bool>(o, "volume", false)),
             run_options(o),
             progress_fn(progress),
             get<std::string>(o, "alias", "")};
  const ooc::ImageSpec &in = a.in.spec, &out = a.out.spec;
  if (in.width != out.width || in.height != out.height || in.depth != out.depth ||
      in.channels != out.channels)
    throw ooc::Error(ooc::ErrorKind::usage, "output has shape " + out.describe() + ", the input " +
                                                in.describe() +
                                                ": give an output of the input's shape");
  return a;
}

namespace {

// An output that shares the input's bytes would overwrite rows that later bands still read (the
// halo, and bands read ahead): the input is copied first, and the copy counts against mem_limit
// like the bands do. Returns the budget left for the bands; throws where the copy does not fit.
std::size_t budget_after_copy(const ArrayRun& a, const std::vector<const ooc::Operation*>& ops,
                              const ooc::Backend& backend, ooc::EngineOptions po) {
  const std::size_t limit = po.mem_limit > 0 ? po.mem_limit : ooc::default_mem_limit();
  const std::size_t copy = a.in.spec.total_bytes();
  // The smallest ring the planner could fall back to: one slot of its smallest bands.
  po.mem_limit = std::size_t{1} << 62;
  po.band_rows = po.band_rows > 0 ? po.band_rows : 1;
  po.slots = po.slots > 0 ? po.slots : 1;
  const std::size_t bands = ooc::plan_bands(a.in.spec, ops, backend, po).ring_bytes;
  if (copy + bands <= limit) return limit - copy;
  const std::string need = ooc::format_bytes(double(copy + bands));
  // Rounded up, so that the figure given works (2.0 GiB shown may be 2.0024 GiB needed).
  const std::string need_m =
      std::to_string((copy + bands + (std::size_t{1} << 20) - 1) >> 20) + "M";
  throw ooc::Error(
      ooc::ErrorKind::usage,
      "the output shares memory with the input (" + a.alias +
          "): filtering in place needs a copy of the input, " + ooc::format_bytes(double(copy)) +
          ", besides at least " + ooc::format_bytes(double(bands)) + " for the bands: " + need +
          " in all, more than mem_limit " + ooc::format_bytes(double(limit)) +
          ". Give a separate output (a new array, or numpy.lib.format.open_memmap(path, 'w+', "
          "dtype, shape) for one on disk), or mem_limit='" +
          need_m + "' or more");
}

}  // namespace

// A job over the arrays of `a` (their memory is the source and the sink) running `stages`, by
// the job runner as every front end. Returns the stats dict, every pass's reads and time added up
// (the array is read once per pass). `operation`: its name in the stats (empty: as built).
py::dict run_array_job(ArrayRun& a, std::vector<ooc::StageCall> stages,
                       const ooc::PipelineSettings& settings, const std::string& operation) {
  ooc::JobResult r;
  {
    py::gil_scoped_release release;
    const ooc::ImageSpec& in = a.in.spec;
    ooc::JobSpec spec;
    spec.options.input = spec.options.output = "<array>";  // names for the stats
    spec.options.pipeline = a.run.pipeline;
    spec.options.device = a.run.device;
    spec.options.devices = a.run.devices;
    spec.stages = std::move(stages);
    spec.settings = settings;
    spec.operation = operation;
    spec.operation_as_built = operation.empty();
    spec.progress = a.progress;
    auto source = std::make_unique<ooc::MemorySource>(a.in, "array");
    ooc::MemorySource& src = *source;
    auto sink = std::make_unique<ooc::MemorySink>(a.out, "array");
    // Bands written straight into the output array, unless it shares the input's bytes.
    sink->in_place(a.alias.empty());
    spec.source = std::move(source);
    spec.sink = std::move(sink);
    bool copied = false;  // the input copied first (an output sharing its bytes)
    spec.before_start = [&](ooc::Job& job, const std::vector<const ooc::Operation*>& ops) {
      // A pointwise pass (no halo) over an output laid out exactly as the input reads each
      // band's rows before it writes them, and no other band reads them: in place needs no copy.
      const bool pointwise = std::all_of(ops.begin(), ops.end(),
                                         [](const ooc::Operation* op) { return op->halo() == 0; });
      const bool same_layout = a.in.data == a.out.data && a.in.row_stride == a.out.row_stride &&
                               a.in.col_stride == a.out.col_stride &&
                               a.in.channel_stride == a.out.channel_stride &&
                               a.in.swap_bytes == a.out.swap_bytes && in.type == a.out.spec.type;
      if (a.alias.empty() || (pointwise && same_layout)) return;
      ooc::EngineOptions po = a.run.pipeline;
      po.row_begin = 0;
      po.row_end = in.stacked_rows();
      job.set_mem_limit(budget_after_copy(a, ops, job.pick_backend(ops), po));
      copied = true;
      src.copy_in();
    };
    r = ooc::run_job(std::move(spec));
    // The limit the bands ran under is the default less the copy, not one the caller gave.
    if (copied && a.run.pipeline.mem_limit == 0)
      r.report.mem_limit_from = ooc::default_budget().from + ", less the input's copy";
    r.report.input_io.clear();  // memory: no file's reads to name
  }
  return stats_dict(r.report);
}

namespace {

ooc::Precision precision_of(const py::dict& o) {
  return ooc::parse_precision(get<std::string>(o, "precision", "f64"));
}

// The array filters' border, precision (f64 by default, as scipy) and output type (the output
// array's).
ooc::PipelineSettings array_settings(const ArrayRun& a, const std::string& mode, double cval,
                                     const py::dict& o) {
  ooc::PipelineSettings s;
  s.border = ooc::parse_border_mode(mode);
  s.border_value = cval;
  s.out_type = a.out.spec.type;
  s.precision = precision_of(o);
  s.planes = get<bool>(o, "planes", false);
  ooc::apply_nodata(get<std::string>(o, "nodata", ""), s, "nodata");  // oocrun's --nodata
  return s;
}

}  // namespace

// Row (x), column (y) and a volume's plane (z) taps, in convolution order, each of odd length.
py::dict filter_array(const py::array& input, const py::array& output, std::vector<double> row,
                      std::vector<double> col, std::vector<double> plane, const std::string& mode,
                      double cval, const py::dict& o, const py::object& progress) {
  ArrayRun a = array_run(input, output, o, progress);
  if (row.size() % 2 == 0 || col.size() % 2 == 0 || plane.size() % 2 == 0)
    throw ooc::Error(ooc::ErrorKind::usage, "filter taps must be of odd count");
  ooc::StageCall call{"separable", {}};
  call.set("row", std::move(row)).set("col", std::move(col));
  if (plane.size() > 1) call.set("plane", std::move(plane));
  call.set("method", get<std::string>(o, "method", "auto"));
  return run_array_job(a, {call}, array_settings(a, mode, cval, o), "");
}

py::dict conv2d_array(const py::array& input, const py::array& output, const F64Array& kernel,
                      const std::string& mode, double cval, const py::dict& o,
                      const py::object& progress) {
  ArrayRun a = array_run(input, output, o, progress);
  ooc::StageCall call{"convolve", {}};
  call.set("kernel", kernel_of(kernel, "weights"));
  call.set("method", get<std::string>(o, "method", "auto"));
  return run_array_job(a, {call}, array_settings(a, mode, cval, o), "");
}

// ooceq's pipeline of one stage (equalize_file's): a histogram pass, then the table.
py::dict equalize_array(const py::array& input, const py::array& output, const py::dict& o,
                        const py::object& progress) {
  ArrayRun a = array_run(input, output, o, progress);
  check_equalizable(a.in.spec.type, "this array is " + numpy_name(a.in.spec.type),
                    "ooc.pipeline(array, ");
  if (a.out.spec.type != a.in.spec.type)
    throw ooc::Error(ooc::ErrorKind::usage, "equalize writes the input's dtype");
  return run_array_job(a, {ooc::StageCall{"equalize", {}}}, {},
                       "histogram equalization (2 passes)");  // equalize_file's name
}

py::dtype numpy_dtype(ooc::SampleType t) {
  switch (t) {
    case ooc::SampleType::u8:
      return py::dtype::of<std::uint8_t>();
    case ooc::SampleType::u16:
      return py::dtype::of<std::uint16_t>();
    case ooc::SampleType::i16:
      return py::dtype::of<std::int16_t>();
    case ooc::SampleType::u32:
      return py::dtype::of<std::uint32_t>();
    case ooc::SampleType::i32:
      return py::dtype::of<std::int32_t>();
    case ooc::SampleType::f32:
      return py::dtype::of<float>();
    case ooc::SampleType::f64:
      break;
  }
  return py::dtype::of<double>();
}

}  // namespace ooc::python
