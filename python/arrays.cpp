// ooc's filters over NumPy arrays (arrays.hpp).
#include "arrays.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <optional>
#include <utility>

#include "device_arrays.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/filter_options.hpp"
#include "ooc/limits.hpp"

namespace ooc::python {

ooc::SampleType sample_type_of(char k, std::int64_t size, const std::string& name) {
  if (k == 'u' && size == 1) return ooc::SampleType::u8;
  if (k == 'u' && size == 2) return ooc::SampleType::u16;
  if (k == 'i' && size == 2) return ooc::SampleType::i16;
  if (k == 'u' && size == 4) return ooc::SampleType::u32;
  if (k == 'i' && size == 4) return ooc::SampleType::i32;
  if (k == 'f' && size == 4) return ooc::SampleType::f32;
  if (k == 'f' && size == 8) return ooc::SampleType::f64;
  if (k == 'u' && size == 8) return ooc::SampleType::u64;  // labels (filters refuse it)
  throw ooc::Error(ooc::ErrorKind::usage,
                   "dtype " + name +
                       " is not supported: use uint8, uint16, int16, uint32, int32, float32 or "
                       "float64");
}

ooc::ImageSpec image_spec_of(const std::vector<std::int64_t>& shape, ooc::SampleType type,
                             bool& volume, const char* what) {
  const auto ndim = static_cast<int>(shape.size());
  volume = ndim == 4 || (volume && ndim == 3);
  if (ndim < 2 || ndim > 4)
    throw ooc::Error(ooc::ErrorKind::usage,
                     std::string(what) +
                         " must be 2-D (H, W), 3-D (H, W, C) or (Z, H, W) or 4-D (Z, H, W, C), "
                         "got " +
                         std::to_string(ndim) + " dimensions");
  const int z = volume ? 1 : 0;  // the first axis of a plane
  ooc::ImageSpec s;
  s.depth = volume ? shape[0] : 1;
  s.height = shape[z];
  s.width = shape[z + 1];
  const bool interleaved = ndim == z + 3;
  s.channels = interleaved ? static_cast<int>(shape[z + 2]) : 1;
  s.type = type;
  if (interleaved && (shape[z + 2] < 1 || shape[z + 2] > 4))
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) + " has " +
                                                std::to_string(shape[z + 2]) +
                                                " channels (last axis): ooc takes 1 to 4");
  ooc::validate(s);
  return s;
}

// Where the samples of an (H, W) or (H, W, C) array live, or with `volume` those of a (Z, H, W)
// or (Z, H, W, C) one: any strides (a strided view, a transposed or reversed array), any byte
// order. A 4-D array is a volume whatever `volume` says.
ooc::MemoryImage layout_of(const py::array& a, const char* what, bool volume) {
  const py::dtype dt = a.dtype();
  ooc::MemoryImage l;
  l.spec = image_spec_of(
      std::vector<std::int64_t>(a.shape(), a.shape() + a.ndim()),
      sample_type_of(dt.kind(), dt.itemsize(), py::str(static_cast<const py::object&>(dt))), volume,
      what);
  const ooc::ImageSpec& s = l.spec;
  const int z = volume ? 1 : 0;
  const bool interleaved = a.ndim() == z + 3;
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

namespace {

// halo_rows=(above, below) (ArrayRun): each None or an array of the input's layout (its rows'
// width, channels and dtype; a volume's planes' height too), stacked around the input.
void take_halo_rows(ArrayRun& a, const py::dict& o) {
  a.stacked = a.in.spec;
  a.pieces = {a.in};
  if (!o.contains("halo_rows") || o["halo_rows"].is_none()) return;
  const bool volume = a.in.spec.volume() || get<bool>(o, "volume", false);
  const auto halo = o["halo_rows"].cast<py::tuple>();
  if (halo.size() != 2)
    throw ooc::Error(ooc::ErrorKind::usage, "halo_rows is (above, below), each an array or None");
  for (std::size_t k = 0; k < 2; ++k) {
    if (halo[k].is_none()) continue;
    const auto p = halo[k].cast<py::array>();
    const ooc::MemoryImage m = layout_of(p, k == 0 ? "halo_rows[0]" : "halo_rows[1]", volume);
    const ooc::ImageSpec &s = m.spec, &in = a.in.spec;
    if (s.width != in.width || s.channels != in.channels || s.type != in.type ||
        (volume && s.height != in.height) || p.ndim() != a.input.ndim())
      throw ooc::Error(ooc::ErrorKind::usage, "halo_rows are " + s.describe() + ", the input " +
                                                  in.describe() +
                                                  ": give rows of the input's layout and dtype");
    a.around.push_back(p);
    if (k == 0) {
      a.pieces.insert(a.pieces.begin(), m);
      a.kept_begin = s.stacked_rows();
    } else {
      a.pieces.push_back(m);
    }
    (volume ? a.stacked.depth : a.stacked.height) += volume ? s.depth : s.height;
  }
  if (a.pieces.size() > 1 && !a.alias.empty())
    throw ooc::Error(ooc::ErrorKind::usage,
                     "halo_rows with an output sharing the input's memory: give a separate output");
}

}  // namespace

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
             get<std::string>(o, "alias", ""),
             {},
             {},
             {},
             0};
  const ooc::ImageSpec &in = a.in.spec, &out = a.out.spec;
  if (in.width != out.width || in.height != out.height || in.depth != out.depth ||
      in.channels != out.channels)
    throw ooc::Error(ooc::ErrorKind::usage, "output has shape " + out.describe() + ", the input " +
                                                in.describe() +
                                                ": give an output of the input's shape");
  take_halo_rows(a, o);
  return a;
}

ooc::ImageSpec job_input_spec(const py::array& input, const py::dict& o) {
  ArrayRun a;
  a.input = input;
  a.in = layout_of(input, "input", get<bool>(o, "volume", false));
  take_halo_rows(a, o);
  return a.stacked;
}

namespace {

// An image whose rows lie in several arrays one after the other along axis 0 (halo_rows above,
// the input, halo_rows below): rows within one piece are read where they lie, a run across two
// pieces is gathered into the band's buffer.
class PiecesSource final : public ooc::Source {
 public:
  PiecesSource(const std::vector<ooc::MemoryImage>& pieces, const ooc::ImageSpec& whole)
      : whole_(whole) {
    std::int64_t at = 0;
    for (const ooc::MemoryImage& p : pieces) {
      sources_.push_back(std::make_unique<ooc::MemorySource>(p, "array"));
      first_.push_back(at);
      at += p.spec.stacked_rows();
    }
    first_.push_back(at);
  }
  const ooc::ImageSpec& spec() const noexcept override { return whole_; }
  std::string describe() const override { return "array with its neighbours' rows"; }
  const std::byte* rows(std::int64_t y0, std::int64_t n, ooc::RowArena& arena) override {
    const std::size_t k = piece(y0);
    if (y0 + n <= first_[k + 1]) return sources_[k]->rows(y0 - first_[k], n, arena);
    std::byte* dst = arena.take(static_cast<std::size_t>(n) * whole_.row_bytes());
    read_rows(y0, n, dst);
    return dst;
  }
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override {
    while (n > 0) {
      const std::size_t k = piece(y0);
      const std::int64_t m = std::min(n, first_[k + 1] - y0);
      sources_[k]->read_rows(y0 - first_[k], m, dst);
      dst += static_cast<std::size_t>(m) * whole_.row_bytes();
      y0 += m;
      n -= m;
    }
  }

 private:
  std::size_t piece(std::int64_t y) const {
    return static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end() - 1, y) -
                                    first_.begin() - 1);
  }
  ooc::ImageSpec whole_;
  std::vector<std::unique_ptr<ooc::MemorySource>> sources_;
  std::vector<std::int64_t> first_;  // each piece's first stacked row, then the end
};

// The output of a job over an input with halo_rows: rows of the stacked image, of which the
// input's [begin, begin + its rows) go to the output array and the neighbours' are dropped.
class KeptRowsSink final : public ooc::Sink {
 public:
  KeptRowsSink(std::unique_ptr<ooc::MemorySink> inner, const ooc::ImageSpec& whole,
               std::int64_t begin)
      : inner_(std::move(inner)),
        whole_(whole),
        begin_(begin),
        end_(begin + inner_->spec().stacked_rows()) {}
  const ooc::ImageSpec& spec() const noexcept override { return whole_; }
  std::string describe() const override { return inner_->describe(); }
  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override {
    const std::int64_t lo = std::max(y0, begin_), hi = std::min(y0 + n, end_);
    if (lo < hi)
      inner_->write_rows(lo - begin_, hi - lo, data + static_cast<std::size_t>(lo - y0) * stride,
                         stride);
  }
  void commit() override {}
  std::string io_method() const override { return "none"; }
  std::byte* rows_in_place(std::int64_t y0, std::int64_t n) override {
    return y0 >= begin_ && y0 + n <= end_ ? inner_->rows_in_place(y0 - begin_, n) : nullptr;
  }

 private:
  std::unique_ptr<ooc::MemorySink> inner_;
  ooc::ImageSpec whole_;
  std::int64_t begin_, end_;
};

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
    if (a.pieces.size() > 1) {  // halo_rows (take_halo_rows refused an output sharing memory)
      ooc::ImageSpec whole = a.stacked;
      whole.type = a.out.spec.type;
      spec.source = std::make_unique<PiecesSource>(a.pieces, a.stacked);
      spec.sink = std::make_unique<KeptRowsSink>(std::move(sink), whole, a.kept_begin);
    } else {
      spec.source = std::move(source);
      spec.sink = std::move(sink);
    }
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
ooc::PipelineSettings array_settings(const std::optional<ooc::SampleType>& out_type,
                                     const std::string& mode, double cval, const py::dict& o) {
  ooc::PipelineSettings s;
  s.border = ooc::parse_border_mode(mode);
  s.border_value = cval;
  s.out_type = out_type;  // the output array's (a device array's: run_device_stages sets it)
  s.precision = precision_of(o);
  s.planes = get<bool>(o, "planes", false);
  ooc::apply_nodata(get<std::string>(o, "nodata", ""), s, "nodata");  // oocrun's --nodata
  return s;
}

}  // namespace

// Row (x), column (y) and a volume's plane (z) taps, in convolution order, each of odd length.
// An input in device memory (a CuPy array) is filtered there (device_arrays.hpp).
py::dict filter_array(const py::object& input, const py::object& output, std::vector<double> row,
                      std::vector<double> col, std::vector<double> plane, const std::string& mode,
                      double cval, const py::dict& o, const py::object& progress) {
  if (row.size() % 2 == 0 || col.size() % 2 == 0 || plane.size() % 2 == 0)
    throw ooc::Error(ooc::ErrorKind::usage, "filter taps must be of odd count");
  ooc::StageCall call{"separable", {}};
  call.set("row", std::move(row)).set("col", std::move(col));
  if (plane.size() > 1) call.set("plane", std::move(plane));
  call.set("method", get<std::string>(o, "method", "auto"));
  if (is_device_array(input))
    return run_device_stages(input, output, {call}, array_settings({}, mode, cval, o), o);
  ArrayRun a = array_run(input, output, o, progress);
  return run_array_job(a, {call}, array_settings(a.out.spec.type, mode, cval, o), "");
}

py::dict conv2d_array(const py::object& input, const py::object& output, const F64Array& kernel,
                      const std::string& mode, double cval, const py::dict& o,
                      const py::object& progress) {
  ooc::StageCall call{"convolve", {}};
  call.set("kernel", kernel_of(kernel, "weights"));
  call.set("method", get<std::string>(o, "method", "auto"));
  if (is_device_array(input))
    return run_device_stages(input, output, {call}, array_settings({}, mode, cval, o), o);
  ArrayRun a = array_run(input, output, o, progress);
  return run_array_job(a, {call}, array_settings(a.out.spec.type, mode, cval, o), "");
}

// ooceq's pipeline of one stage (equalize_file's): a histogram pass, then the table.
py::dict equalize_array(const py::object& input, const py::object& output, const py::dict& o,
                        const py::object& progress) {
  if (is_device_array(input))
    throw ooc::Error(ooc::ErrorKind::usage,
                     "equalize reads the image twice (a histogram, then the table): it does not "
                     "run on a device array; give a NumPy array (cupy.asnumpy)");
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
    case ooc::SampleType::u64:
      return py::dtype::of<std::uint64_t>();
  }
  return py::dtype::of<double>();
}

}  // namespace ooc::python
