// The Python extension ooc._core: oocconv's and ooceq's file-to-file runs, and ooc's filters over
// NumPy arrays (the array's memory, a numpy.memmap included, is the image the bounded band
// pipeline streams through). Every run releases the GIL. python/ooc/__init__.py is the documented
// front: it normalizes arguments (scipy.ndimage names, modes, origins) and calls these.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/filter_options.hpp"
#include "cli/stats.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"

namespace py = pybind11;

namespace {

// ooc.Error, made once at import and kept for the life of the process.
PyObject* g_error = nullptr;

const char* kind_name(ooc::ErrorKind k) {
  switch (k) {
    case ooc::ErrorKind::usage:
      return "usage";
    case ooc::ErrorKind::input:
      return "input";
    case ooc::ErrorKind::io:
      return "io";
    case ooc::ErrorKind::device:
      return "device";
  }
  return "usage";
}

template <class T>
std::optional<T> get(const py::dict& d, const char* key) {
  if (!d.contains(key)) return std::nullopt;
  const py::object v = d[key];
  if (v.is_none()) return std::nullopt;
  return v.cast<T>();
}
template <class T>
T get(const py::dict& d, const char* key, T fallback) {
  return get<T>(d, key).value_or(fallback);
}

// --mem-limit, --threads, --band-rows, --slots, --device, --devices.
struct RunOptions {
  ooc::PipelineOptions pipeline;
  std::string device = "auto", devices = "all";
};
RunOptions run_options(const py::dict& o) {
  RunOptions r;
  if (o.contains("mem_limit") && !o["mem_limit"].is_none()) {
    const py::object m = o["mem_limit"];
    r.pipeline.mem_limit = py::isinstance<py::str>(m)
                               ? ooc::parse_size(m.cast<std::string>(), "mem_limit")
                               : m.cast<std::size_t>();
  }
  r.pipeline.threads = get<int>(o, "threads", 0);
  r.pipeline.band_rows = get<std::int64_t>(o, "band_rows", 0);
  r.pipeline.slots = get<int>(o, "slots", 0);
  if (r.pipeline.threads < 0 || r.pipeline.threads > ooc::kMaxThreads)
    throw ooc::Error(ooc::ErrorKind::usage, "threads must be from 1 to " +
                                                std::to_string(ooc::kMaxThreads) + ", got " +
                                                std::to_string(r.pipeline.threads));
  if (r.pipeline.band_rows < 0 || r.pipeline.slots < 0)
    throw ooc::Error(ooc::ErrorKind::usage, "band_rows and slots must be positive");
  r.device = get<std::string>(o, "device", "auto");
  r.devices = get<std::string>(o, "devices", "all");
  return r;
}

// The user's progress(done_rows, total_rows), called between bands with the GIL taken again. It
// also serves Ctrl-C: a Python exception from either stops the run and propagates (the engine
// passes exceptions of its stages on; the output's temporary goes with the job).
ooc::ProgressFn progress_fn(const py::object& progress) {
  return [progress](std::int64_t done, std::int64_t total) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!progress.is_none()) progress(done, total);
  };
}

// The stats dict: the tools' --stats json object (cli/stats.cpp), as Python objects.
py::dict stats_dict(const ooc::cli::RunReport& r) {
  return py::module_::import("json").attr("loads")(ooc::cli::stats_json(r).dump());
}

ooc::JobOptions job_options(const std::string& input, const std::string& output, const py::dict& o,
                            const RunOptions& run, const char* default_type) {
  ooc::JobOptions jo;
  jo.input = input;
  jo.output = output;
  jo.hints.width = get<std::int64_t>(o, "width", 0);
  jo.hints.height = get<std::int64_t>(o, "height", 0);
  const auto type = get<std::string>(o, "type");
  jo.hints.type = ooc::parse_sample_type(type.value_or(default_type));
  jo.hints.type_given = type.has_value();
  const auto channels = get<int>(o, "channels");
  jo.hints.channels = channels.value_or(1);
  jo.hints.channels_given = channels.has_value();
  jo.hints.format = get<std::string>(o, "in_format", "auto");
  jo.hints.page = get<int>(o, "page", 0);
  jo.seed = get<std::uint64_t>(o, "seed", 1);
  jo.sink.format = get<std::string>(o, "format", "auto");
  jo.sink.tile = get<std::int64_t>(o, "tile", 0);
  jo.sink.compress = get<std::string>(o, "compress", "none");
  jo.sink.level = get<int>(o, "level", -1);
  jo.sink.bigtiff = get<std::string>(o, "bigtiff", "auto");
  jo.pipeline = run.pipeline;
  jo.device = run.device;
  jo.devices = run.devices;
  return jo;
}

using F64Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

// A 2-D float64 array (convolution order) as ooc's kernel.
ooc::Kernel2d kernel_of(const F64Array& k, const std::string& name) {
  if (k.ndim() != 2)
    throw ooc::Error(ooc::ErrorKind::usage,
                     "kernel must be a 2-D array, got " + std::to_string(k.ndim()) + " dimensions");
  ooc::Kernel2d kernel;
  kernel.rows = k.shape(0);
  kernel.cols = k.shape(1);
  kernel.taps.assign(k.data(), k.data() + k.size());
  kernel.name = name;
  if (kernel.rows % 2 == 0 || kernel.cols % 2 == 0 || kernel.taps.empty())
    throw ooc::Error(ooc::ErrorKind::usage, "kernel must have an odd number of rows and columns");
  return kernel;
}

// oocconv INPUT OUTPUT <options>: a separable filter (radius, sigma, taps) or a 2-D kernel.
py::dict convolve_file(const std::string& input, const std::string& output, const py::dict& o,
                       const py::object& progress) {
  const RunOptions run = run_options(o);
  ooc::cli::FilterCli f;
  f.radius = get<std::int64_t>(o, "radius");
  f.sigma = get<double>(o, "sigma");
  f.filter_kind = get<std::string>(o, "filter", "gaussian");
  f.taps = get<std::string>(o, "taps", "");
  f.row_taps = get<std::string>(o, "row_taps", "");
  f.col_taps = get<std::string>(o, "col_taps", "");
  f.taps_file = get<std::string>(o, "taps_file", "");
  f.kernel = get<std::string>(o, "kernel", "");
  f.border = get<std::string>(o, "border", "reflect");
  f.border_value = get<double>(o, "border_value", 0.0);
  f.out_type = get<std::string>(o, "out_type", "");
  f.precision = get<std::string>(o, "precision", "auto");
  std::optional<ooc::Conv2dParams> params2d;
  ooc::SeparableParams params;
  if (o.contains("kernel_array") && !o["kernel_array"].is_none()) {
    // An array kernel takes the place of --kernel: the same exclusions and result options.
    f.kernel = "box:1";
    params2d = ooc::cli::conv2d_params(f, run.pipeline.mem_limit);
    params2d->kernel = kernel_of(o["kernel_array"].cast<F64Array>(), "array");
  } else if (!f.kernel.empty()) {
    params2d = ooc::cli::conv2d_params(f, run.pipeline.mem_limit);
  } else {
    params = ooc::cli::filter_params(f, run.pipeline.mem_limit);
  }
  const ooc::JobOptions jo = job_options(input, output, o, run, "f32");
  const ooc::ProgressFn fn = progress_fn(progress);
  ooc::cli::RunReport r;
  {
    py::gil_scoped_release release;
    ooc::Job job(jo);
    auto op = params2d ? ooc::make_conv2d(job.source().spec(), *params2d, run.pipeline)
                       : ooc::make_separable(job.source().spec(), params, run.pipeline);
    job.start({op.get()});
    const ooc::RunStats st = job.run(*op, fn);
    job.commit();
    r = ooc::cli::run_report(job, op->describe(), st);
  }
  return stats_dict(r);
}

// ooceq INPUT OUTPUT: a histogram pass, then the lookup table.
py::dict equalize_file(const std::string& input, const std::string& output, const py::dict& o,
                       const py::object& progress) {
  const RunOptions run = run_options(o);
  const ooc::JobOptions jo = job_options(input, output, o, run, "u8");
  const ooc::ProgressFn fn = progress_fn(progress);
  ooc::cli::RunReport r;
  std::vector<std::uint64_t> counts;
  std::int64_t bins = 0;
  int channels = 0;
  double hist_seconds = 0;
  std::size_t hist_read = 0;
  {
    py::gil_scoped_release release;
    ooc::Job job(jo);
    const ooc::ImageSpec spec = job.source().spec();
    auto hist = ooc::make_histogram(spec);
    auto lut = ooc::make_lut(spec);
    job.start({hist.get(), lut.get()});
    // One count over both passes: the file is read twice.
    const std::int64_t H = job.row_end() - job.row_begin();
    const ooc::RunStats s1 = job.run(*hist, [&](std::int64_t d, std::int64_t) { fn(d, 2 * H); });
    counts = hist->counts();
    bins = hist->bins();
    channels = hist->channels();
    lut->set_lut(ooc::equalization_lut(counts, bins, channels));
    ooc::RunStats st = job.run(*lut, [&](std::int64_t d, std::int64_t) { fn(H + d, 2 * H); });
    job.commit();
    hist_seconds = s1.seconds;
    hist_read = s1.bytes_read;
    st.seconds += s1.seconds;
    st.setup_seconds += s1.setup_seconds;
    st.read_seconds += s1.read_seconds;
    st.compute_seconds += s1.compute_seconds;
    st.write_seconds += s1.write_seconds;
    r = ooc::cli::run_report(job, "histogram equalization (2 passes)", st);
  }
  py::dict d = stats_dict(r);
  d["passes"] = py::dict(py::arg("histogram_seconds") = hist_seconds,
                         py::arg("map_seconds") = r.stats.seconds - hist_seconds,
                         py::arg("bytes_read") = hist_read + r.stats.bytes_read);
  py::list per_channel;
  for (int c = 0; c < channels; ++c) {
    const std::uint64_t* h = counts.data() + c * bins;
    std::int64_t lo = -1, hi = -1, distinct = 0;
    std::uint64_t samples = 0;
    for (std::int64_t v = 0; v < bins; ++v) {
      if (h[v] == 0) continue;
      if (lo < 0) lo = v;
      hi = v;
      ++distinct;
      samples += h[v];
    }
    per_channel.append(py::dict(py::arg("min") = lo, py::arg("max") = hi,
                                py::arg("distinct_values") = distinct,
                                py::arg("samples") = samples));
  }
  d["histogram"] = py::dict(py::arg("bins") = bins, py::arg("channels") = per_channel);
  return d;
}

// ---- NumPy arrays ----

ooc::SampleType sample_type_of(const py::dtype& dt) {
  if (dt.byteorder() == '>')
    throw ooc::Error(ooc::ErrorKind::usage, "big-endian arrays are not supported: convert first");
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

// (H, W) or (H, W, C), C-contiguous: the image the array holds.
ooc::ImageSpec spec_of(const py::array& a, const char* what) {
  if (a.ndim() != 2 && a.ndim() != 3)
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) +
                                                " must be 2-D (H, W) or 3-D (H, W, C), got " +
                                                std::to_string(a.ndim()) + " dimensions");
  if (!(a.flags() & py::array::c_style))
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) + " must be C-contiguous");
  ooc::ImageSpec s;
  s.height = a.shape(0);
  s.width = a.shape(1);
  s.channels = a.ndim() == 3 ? static_cast<int>(a.shape(2)) : 1;
  s.type = sample_type_of(a.dtype());
  if (a.ndim() == 3 && (a.shape(2) < 1 || a.shape(2) > 4))
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) + " has " +
                                                std::to_string(a.shape(2)) +
                                                " channels (last axis): ooc takes 1 to 4");
  ooc::validate(s);
  return s;
}

// An array as the image: rows are handed out in place (no copy; a memmap's pages are read as
// the bands reach them).
class ArraySource final : public ooc::Source {
 public:
  ArraySource(const ooc::ImageSpec& spec, const std::byte* data) : spec_(spec), data_(data) {}
  const ooc::ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override { return "array " + spec_.describe(); }
  const std::byte* rows(std::int64_t y0, std::int64_t, ooc::RowArena&) override {
    return data_ + static_cast<std::size_t>(y0) * spec_.row_bytes();
  }
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override {
    std::memcpy(dst, rows_at(y0), static_cast<std::size_t>(n) * spec_.row_bytes());
  }

 private:
  const std::byte* rows_at(std::int64_t y) const {
    return data_ + static_cast<std::size_t>(y) * spec_.row_bytes();
  }
  ooc::ImageSpec spec_;
  const std::byte* data_;
};

class ArraySink final : public ooc::Sink {
 public:
  ArraySink(const ooc::ImageSpec& spec, std::byte* data) : spec_(spec), data_(data) {}
  const ooc::ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override { return "array " + spec_.describe(); }
  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override {
    const std::size_t row = spec_.row_bytes();
    for (std::int64_t i = 0; i < n; ++i)
      std::memcpy(data_ + static_cast<std::size_t>(y0 + i) * row, data + i * stride, row);
  }
  void commit() override {}

 private:
  ooc::ImageSpec spec_;
  std::byte* data_;
};

// One or more passes over an array into an array, on the same plan and slots. `between` runs
// after each pass but the last (equalization sets its table there).
struct ArrayRun {
  py::array input, output;
  ooc::ImageSpec in, out;
  RunOptions run;
  ooc::ProgressFn progress;
};

ArrayRun array_run(const py::array& input, const py::array& output, const py::dict& o,
                   const py::object& progress) {
  ArrayRun a{input,
             output,
             spec_of(input, "input"),
             spec_of(output, "output"),
             run_options(o),
             progress_fn(progress)};
  if (a.in.width != a.out.width || a.in.height != a.out.height || a.in.channels != a.out.channels)
    throw ooc::Error(ooc::ErrorKind::usage, "output has shape " + a.out.describe() +
                                                ", the input " + a.in.describe() +
                                                ": give an output of the input's shape");
  if (!output.writeable())
    throw ooc::Error(ooc::ErrorKind::usage, "output is read-only: give a writeable array");
  return a;
}

template <class Between>
py::dict run_passes(ArrayRun& a, const std::vector<ooc::Operation*>& passes, Between between) {
  ooc::cli::RunReport r;
  {
    py::gil_scoped_release release;
    ArraySource source(a.in, static_cast<const std::byte*>(a.input.data()));
    ArraySink sink(a.out, static_cast<std::byte*>(a.output.mutable_data()));
    const std::vector<const ooc::Operation*> ops(passes.begin(), passes.end());
    const ooc::Workload work = ooc::workload(a.in, a.in.height, a.run.pipeline.threads);
    const ooc::Backend backend = ooc::select_backend(a.run.device, a.run.devices, ops, &work);
    ooc::PipelineOptions po = a.run.pipeline;
    po.row_begin = 0;
    po.row_end = a.in.height;
    const ooc::BandPlan plan = ooc::plan_bands(a.in, ops, backend, po, &source, &sink);
    ooc::Engine engine(source, backend, plan);
    const std::int64_t n = static_cast<std::int64_t>(passes.size()), H = a.in.height;
    for (std::int64_t i = 0; i < n; ++i) {
      ooc::Operation* op = passes[static_cast<std::size_t>(i)];
      const ooc::RunStats st =
          engine.run(*op, op->output() ? &sink : nullptr,
                     [&](std::int64_t d, std::int64_t) { a.progress(i * H + d, n * H); });
      if (i + 1 < n) between(i);
      r.stats.seconds += st.seconds;
      r.stats.setup_seconds += st.setup_seconds;
      r.stats.read_seconds += st.read_seconds;
      r.stats.compute_seconds += st.compute_seconds;
      r.stats.write_seconds += st.write_seconds;
      r.stats.bytes_read += st.bytes_read;
      r.stats.bytes_written += st.bytes_written;
      r.stats.pixels = st.pixels;
      r.operation = op->describe();
    }
    r.input_path = "<array>";
    r.input_description = source.describe();
    r.in = a.in;
    r.output_path = "<array>";
    r.output_type = std::string(ooc::name(a.out.type));
    r.backend = backend.describe();
    r.backend_choice = backend.why;
    r.cuda = backend.cuda;
    r.plan = plan;
  }
  return stats_dict(r);
}

ooc::Precision precision_of(const py::dict& o) {
  const std::string p = get<std::string>(o, "precision", "f64");
  if (p == "f64") return ooc::Precision::f64;
  if (p == "f32") return ooc::Precision::f32;
  if (p == "auto") return ooc::Precision::automatic;
  throw ooc::Error(ooc::ErrorKind::usage, "precision takes f32, f64 or auto, got '" + p + "'");
}

// Row (x) then column (y) taps, in convolution order, each of odd length.
py::dict filter_array(const py::array& input, const py::array& output, std::vector<double> row,
                      std::vector<double> col, const std::string& mode, double cval,
                      const py::dict& o, const py::object& progress) {
  ArrayRun a = array_run(input, output, o, progress);
  if (row.size() % 2 == 0 || col.size() % 2 == 0)
    throw ooc::Error(ooc::ErrorKind::usage, "filter taps must be of odd count");
  ooc::SeparableParams p;
  p.filter.row = std::move(row);
  p.filter.col = std::move(col);
  p.border = ooc::parse_border_mode(mode);
  p.border_value = cval;
  p.out_type = a.out.type;
  p.precision = precision_of(o);
  auto op = ooc::make_separable(a.in, p, a.run.pipeline);
  return run_passes(a, {op.get()}, [](std::int64_t) {});
}

py::dict conv2d_array(const py::array& input, const py::array& output, const F64Array& kernel,
                      const std::string& mode, double cval, const py::dict& o,
                      const py::object& progress) {
  ArrayRun a = array_run(input, output, o, progress);
  ooc::Conv2dParams p;
  p.kernel = kernel_of(kernel, "weights");
  p.border = ooc::parse_border_mode(mode);
  p.border_value = cval;
  p.out_type = a.out.type;
  p.precision = precision_of(o);
  auto op = ooc::make_conv2d(a.in, p, a.run.pipeline);
  return run_passes(a, {op.get()}, [](std::int64_t) {});
}

py::dict equalize_array(const py::array& input, const py::array& output, const py::dict& o,
                        const py::object& progress) {
  ArrayRun a = array_run(input, output, o, progress);
  if (a.out.type != a.in.type)
    throw ooc::Error(ooc::ErrorKind::usage, "equalize writes the input's dtype");
  auto hist = ooc::make_histogram(a.in);
  auto lut = ooc::make_lut(a.in);
  return run_passes(a, {hist.get(), lut.get()}, [&](std::int64_t) {
    lut->set_lut(ooc::equalization_lut(hist->counts(), hist->bins(), hist->channels()));
  });
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "ooc's C++ core; use the functions of the package ooc.";
  g_error = PyErr_NewException("ooc.Error", PyExc_RuntimeError, nullptr);
  // Errors raised from Python (argument checks) carry the same attributes.
  PyObject_SetAttrString(g_error, "kind", py::str("usage").ptr());
  PyObject_SetAttrString(g_error, "exit_code", py::int_(2).ptr());
  m.attr("Error") = py::handle(g_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ooc::Error& e) {
      py::object exc = py::handle(g_error)(e.what());
      exc.attr("kind") = kind_name(e.kind());
      exc.attr("exit_code") = e.exit_code();
      PyErr_SetObject(g_error, exc.ptr());
    }
  });
  m.def("convolve_file", &convolve_file, py::arg("input"), py::arg("output"), py::arg("options"),
        py::arg("progress"));
  m.def("equalize_file", &equalize_file, py::arg("input"), py::arg("output"), py::arg("options"),
        py::arg("progress"));
  m.def("filter_array", &filter_array, py::arg("input"), py::arg("output"), py::arg("row"),
        py::arg("col"), py::arg("mode"), py::arg("cval"), py::arg("options"), py::arg("progress"));
  m.def("conv2d_array", &conv2d_array, py::arg("input"), py::arg("output"), py::arg("kernel"),
        py::arg("mode"), py::arg("cval"), py::arg("options"), py::arg("progress"));
  m.def("equalize_array", &equalize_array, py::arg("input"), py::arg("output"), py::arg("options"),
        py::arg("progress"));
  m.def("cuda_device_count", &ooc::cuda_device_count);
  m.def("partial_path", &ooc::partial_path, py::arg("output"));
  m.def("default_mem_limit", &ooc::default_mem_limit);
}
