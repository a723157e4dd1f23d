// The Python extension ooc._core: oocconv's, ooceq's and oocrun's file-to-file runs, and ooc's
// filters and pipelines over NumPy arrays (the array's memory, a numpy.memmap included, is the
// image the bounded band pipeline streams through: strided views and big-endian dtypes are gathered
// band by band, never copied whole). Files and arrays run alike as one ooc::Job (an array call's
// job reads and writes the arrays' memory); multi-pass runs go through run_pipeline, so that the
// equalization flow exists once. Every run releases the GIL. python/ooc/__init__.py is the
// documented front: it normalizes arguments (scipy.ndimage names, modes, origins) and calls these.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ooc/filter_options.hpp"
#include "ooc/run.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/limits.hpp"
#include "ooc/memory.hpp"
#include "ooc/pipeline.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/engine.hpp"

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

// The library names its parameters as the command line spells them (--mem-limit); Python users
// pass keywords. Each option the Python functions take is rewritten to its keyword ("raise
// mem_limit", "mem_limit=1.0 GiB is too small"); the others (--part, --finish, ...) have no Python
// spelling and stay as the tools' flags.
std::string python_words(const std::string& message) {
  static const std::pair<const char*, const char*> keywords[] = {{"mem-limit", "mem_limit"},
                                                                 {"band-rows", "band_rows"},
                                                                 {"slots", "slots"},
                                                                 {"threads", "threads"},
                                                                 {"devices", "devices"},
                                                                 {"device", "device"},
                                                                 {"border-value", "cval"},
                                                                 {"border", "mode"},
                                                                 {"out-type", "out_type"},
                                                                 {"precision", "precision"},
                                                                 {"method", "method"},
                                                                 {"kernel", "kernel"},
                                                                 {"compress", "compress"},
                                                                 {"level", "level"},
                                                                 {"chunk", "chunk"},
                                                                 {"shard", "shard"},
                                                                 {"zarr-version", "zarr_version"},
                                                                 {"levels", "levels"},
                                                                 {"pyramid", "pyramid"},
                                                                 {"cog", "cog"},
                                                                 {"tile", "tile"},
                                                                 {"page", "page"},
                                                                 {"input-level", "input_level"},
                                                                 {"in-format", "in_format"},
                                                                 {"bigtiff", "bigtiff"},
                                                                 {"format", "format"},
                                                                 {"radius", "radius"},
                                                                 {"sigma", "sigma"},
                                                                 {"taps", "taps"},
                                                                 {"taps-file", "taps_file"},
                                                                 {"filter", "filter"},
                                                                 {"type", "type"},
                                                                 {"width", "width"},
                                                                 {"height", "height"},
                                                                 {"channels", "channels"}};
  std::string out;
  std::size_t i = 0;
  while (i < message.size()) {
    const bool flag = message.compare(i, 2, "--") == 0 && i + 2 < message.size() &&
                      std::islower(static_cast<unsigned char>(message[i + 2])) &&
                      (i == 0 || !std::isalnum(static_cast<unsigned char>(message[i - 1])));
    if (!flag) {
      out += message[i++];
      continue;
    }
    std::size_t j = i + 2;
    while (j < message.size() &&
           (std::islower(static_cast<unsigned char>(message[j])) ||
            std::isdigit(static_cast<unsigned char>(message[j])) || message[j] == '-'))
      ++j;
    while (j > i + 2 && message[j - 1] == '-') --j;  // "--slots-" is not a name
    const std::string name = message.substr(i + 2, j - i - 2);
    const char* keyword = nullptr;
    for (const auto& [flag_name, py_name] : keywords)
      if (name == flag_name) keyword = py_name;
    if (!keyword) {
      out += message.substr(i, j - i);
    } else {
      out += keyword;
      // "--mem-limit 1.0 GiB is too small": "mem_limit=1.0 GiB ..."; so with a quoted value or a
      // placeholder ("use --radius R"); a word after it stays apart ("raise mem_limit").
      if (j + 1 < message.size() && message[j] == ' ' &&
          (std::isdigit(static_cast<unsigned char>(message[j + 1])) ||
           std::isupper(static_cast<unsigned char>(message[j + 1])) || message[j + 1] == '\'')) {
        out += '=';
        ++j;
      }
    }
    i = j;
  }
  return out;
}

std::string repr_of(const py::handle& v) {
  return py::repr(v).cast<std::string>();
}

// A keyword of the wrong type is the user's mistake: say which one, not pybind11's "Unable to
// cast".
template <class T>
std::optional<T> get(const py::dict& d, const char* key) {
  if (!d.contains(key)) return std::nullopt;
  const py::object v = d[key];
  if (v.is_none()) return std::nullopt;
  try {
    return v.cast<T>();
  } catch (const py::cast_error&) {
    const char* want = std::is_same_v<T, std::string> ? "a string"
                       : std::is_floating_point_v<T>  ? "a number"
                       : std::is_unsigned_v<T>        ? "a non-negative integer"
                                                      : "an integer";
    throw ooc::Error(ooc::ErrorKind::usage,
                     std::string(key) + " must be " + want + ", got " + repr_of(v));
  }
}
template <class T>
T get(const py::dict& d, const char* key, T fallback) {
  return get<T>(d, key).value_or(fallback);
}

// threads=, band_rows=, slots=: an integer (a NumPy one too, not a bool) in the tools' range, or
// None (planned); refused in the tools' words.
template <class T>
T count(const py::dict& d, const char* key, const ooc::CountRange& range) {
  if (!d.contains(key) || d[key].is_none()) return 0;
  const py::object v = d[key];
  std::string given = py::str(static_cast<py::handle>(v)).cast<std::string>();
  if (!py::isinstance<py::bool_>(v) && PyIndex_Check(v.ptr())) {
    const auto i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    if (!i) throw py::error_already_set();
    if (i >= py::int_(range.lo) && i <= py::int_(range.hi))
      return static_cast<T>(i.cast<long long>());
    given = py::str(static_cast<py::handle>(i)).cast<std::string>();
  }
  throw ooc::Error(ooc::ErrorKind::usage,
                   std::string(key) + " " + ooc::count_problem(range, given));
}

// --mem-limit, --threads, --band-rows, --slots, --device, --devices.
struct RunOptions {
  ooc::EngineOptions pipeline;
  std::string device = "auto", devices = "all";
};
RunOptions run_options(const py::dict& o) {
  RunOptions r;
  if (o.contains("mem_limit") && !o["mem_limit"].is_none()) {
    const py::object m = o["mem_limit"];
    if (py::isinstance<py::str>(m)) {
      r.pipeline.mem_limit = ooc::parse_size(m.cast<std::string>(), "mem_limit");
    } else {
      // The same range as a size string (parse_size): positive, at most 2^62 bytes.
      const bool integer = py::isinstance<py::int_>(m) && !py::isinstance<py::bool_>(m);
      const bool in_range = integer && m.cast<py::int_>() > py::int_(0) &&
                            m.cast<py::int_>() <= py::int_(std::uint64_t{1} << 62);
      if (!in_range)
        throw ooc::Error(ooc::ErrorKind::usage,
                         "mem_limit " + repr_of(m) +
                             " is not a memory size: give a positive number of bytes (at most "
                             "2**62) or a string such as '512M' or '4G'");
      r.pipeline.mem_limit = m.cast<std::size_t>();
    }
  }
  r.pipeline.threads = count<int>(o, "threads", ooc::kThreadsRange);
  r.pipeline.band_rows = count<std::int64_t>(o, "band_rows", ooc::kBandRowsRange);
  r.pipeline.slots = count<int>(o, "slots", ooc::kSlotsRange);
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

// The stats dict: the tools' --stats json object (ooc/run.hpp), as Python objects.
py::dict stats_dict(const ooc::RunReport& r) {
  return py::module_::import("json").attr("loads")(ooc::stats_json(r));
}

// Sets `field` to the keyword's value where one is given, else leaves the option's default (the
// library's, as the tools' options do).
template <class T>
void take(const py::dict& d, const char* key, T& field) {
  if (const auto v = get<T>(d, key)) field = *v;
}

// The tools' Input and Output file options under their Python keywords.
ooc::JobOptions job_options(const std::string& input, const std::string& output, const py::dict& o,
                            const RunOptions& run, const char* default_type) {
  ooc::JobOptions jo;
  jo.input = input;
  jo.output = output;
  take(o, "width", jo.hints.width);
  take(o, "height", jo.hints.height);
  ooc::set_sample_hints(jo.hints, get<std::string>(o, "type"), default_type,
                             get<int>(o, "channels"));
  take(o, "in_format", jo.hints.format);
  take(o, "page", jo.hints.page);
  take(o, "input_level", jo.hints.zarr_level);
  take(o, "seed", jo.seed);
  take(o, "format", jo.sink.format);
  take(o, "tile", jo.sink.tile);
  take(o, "compress", jo.sink.compress);
  take(o, "level", jo.sink.level);
  take(o, "predictor", jo.sink.predictor);
  take(o, "bigtiff", jo.sink.bigtiff);
  take(o, "chunk", jo.sink.chunk);
  take(o, "pyramid_levels", jo.sink.pyramid_levels);
  take(o, "zarr_version", jo.sink.zarr_version);
  take(o, "shard", jo.sink.shard);
  take(o, "cog", jo.sink.cog);
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
  ooc::FilterOptions f;
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
  f.method = get<std::string>(o, "method", "auto");
  ooc::JobSpec spec;
  if (o.contains("kernel_array") && !o["kernel_array"].is_none()) {
    // An array kernel takes the place of --kernel: the same exclusions and result options.
    f.kernel = "box:1";
    spec.stages = {ooc::filter_stage(f, run.pipeline.mem_limit)};
    spec.stages[0].set("kernel", kernel_of(o["kernel_array"].cast<F64Array>(), "array"));
  } else {
    spec.stages = {ooc::filter_stage(f, run.pipeline.mem_limit)};
  }
  spec.settings = ooc::filter_settings(f);
  spec.options = job_options(input, output, o, run, "f32");
  spec.progress = progress_fn(progress);
  spec.operation_as_built = true;  // oocconv's name for it
  ooc::JobResult r;
  {
    py::gil_scoped_release release;
    r = ooc::run_job(std::move(spec));
  }
  return stats_dict(r.report);
}

// ooceq INPUT OUTPUT: a histogram pass, then the lookup table.
// ooc.equalize of another type than u8/u16: said of ooc.equalize's input (`what`: the array's
// dtype or the file's type), with the pipeline that scales, converts and equalizes it (`call`:
// ooc.pipeline or ooc.run with its arguments before the pipeline), not of stages the user
// never wrote.
std::string numpy_name(ooc::SampleType t) {
  switch (t) {
    case ooc::SampleType::u8:
      return "uint8";
    case ooc::SampleType::u16:
      return "uint16";
    case ooc::SampleType::i16:
      return "int16";
    case ooc::SampleType::u32:
      return "uint32";
    case ooc::SampleType::i32:
      return "int32";
    case ooc::SampleType::f32:
      return "float32";
    case ooc::SampleType::f64:
      return "float64";
  }
  return std::string(ooc::name(t));
}

void check_equalizable(ooc::SampleType t, const std::string& what, const std::string& call) {
  if (t == ooc::SampleType::u8 || t == ooc::SampleType::u16) return;
  throw ooc::Error(ooc::ErrorKind::usage,
                   "ooc.equalize takes uint8 or uint16 images, " + what +
                       ": scale its values onto 0-65535 and convert them first; for values in "
                       "[0, M], in one call: " +
                       call +
                       "'scale mul=S ! convert type=u16 ! equalize') with S = 65535 / M (values "
                       "are rounded and saturated; add= shifts negative ones)");
}

py::dict equalize_file(const std::string& input, const std::string& output, const py::dict& o,
                       const py::object& progress) {
  const RunOptions run = run_options(o);
  ooc::JobSpec spec;
  spec.options = job_options(input, output, o, run, "u8");
  spec.progress = progress_fn(progress);
  spec.stages = {ooc::StageCall{"equalize", {}}};  // ooceq's: a histogram pass, then the table
  spec.operation = "histogram equalization (2 passes)";
  spec.check_input = [&](const ooc::ImageSpec& in) {
    check_equalizable(in.type, "'" + input + "' is " + numpy_name(in.type),
                      "ooc.run('" + input + "', '" + output + "', ");
  };
  ooc::JobResult r;
  {
    py::gil_scoped_release release;
    r = ooc::run_job(std::move(spec));
  }
  const std::vector<std::uint64_t>& counts = r.histograms.at(0).counts;
  const std::int64_t bins = r.histograms[0].bins;
  const int channels = r.histograms[0].channels;
  py::dict d = stats_dict(r.report);
  d["passes"] = py::dict(py::arg("histogram_seconds") = r.passes[0].seconds,
                         py::arg("map_seconds") = r.passes[1].seconds,
                         py::arg("bytes_read") = r.passes[0].bytes_read + r.passes[1].bytes_read);
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

// Where the samples of an (H, W) or (H, W, C) array live: any strides (a strided view, a
// transposed or reversed array), any byte order.
ooc::MemoryImage layout_of(const py::array& a, const char* what) {
  if (a.ndim() != 2 && a.ndim() != 3)
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) +
                                                " must be 2-D (H, W) or 3-D (H, W, C), got " +
                                                std::to_string(a.ndim()) + " dimensions");
  ooc::MemoryImage l;
  ooc::ImageSpec& s = l.spec;
  s.height = a.shape(0);
  s.width = a.shape(1);
  s.channels = a.ndim() == 3 ? static_cast<int>(a.shape(2)) : 1;
  s.type = sample_type_of(a.dtype());
  if (a.ndim() == 3 && (a.shape(2) < 1 || a.shape(2) > 4))
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) + " has " +
                                                std::to_string(a.shape(2)) +
                                                " channels (last axis): ooc takes 1 to 4");
  ooc::validate(s);
  const auto item = static_cast<std::ptrdiff_t>(a.itemsize());
  // data() is the first sample whatever the strides' signs. Not const: an output's rows are
  // written through it (array_run checks that the output is writeable).
  l.data = static_cast<std::byte*>(const_cast<void*>(a.data()));
  l.row_stride = a.strides(0);
  l.col_stride = a.strides(1);
  l.channel_stride = a.ndim() == 3 ? a.strides(2) : item;
  const char order = a.dtype().byteorder();
  l.swap_bytes = item > 1 && (order == '>' || order == '<') &&
                 (order == '>') != (std::endian::native == std::endian::big);
  return l;
}

// One or more passes over an array into an array, on the same plan and slots. `alias` (from
// ooc/__init__.py) says how the output shares the input's bytes, empty where it does not.
struct ArrayRun {
  py::array input, output;
  ooc::MemoryImage in, out;
  RunOptions run;
  ooc::ProgressFn progress;
  std::string alias;
};

ArrayRun array_run(const py::array& input, const py::array& output, const py::dict& o,
                   const py::object& progress) {
  if (!output.writeable())
    throw ooc::Error(ooc::ErrorKind::usage, "output is read-only: give a writeable array");
  ArrayRun a{input,
             output,
             layout_of(input, "input"),
             layout_of(output, "output"),
             run_options(o),
             progress_fn(progress),
             get<std::string>(o, "alias", "")};
  const ooc::ImageSpec &in = a.in.spec, &out = a.out.spec;
  if (in.width != out.width || in.height != out.height || in.channels != out.channels)
    throw ooc::Error(ooc::ErrorKind::usage, "output has shape " + out.describe() + ", the input " +
                                                in.describe() +
                                                ": give an output of the input's shape");
  return a;
}

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
    spec.before_start = [&](ooc::Job& job, const std::vector<const ooc::Operation*>& ops) {
      // A pointwise pass (no halo) over an output laid out exactly as the input reads each
      // band's rows before it writes them, and no other band reads them: in place needs no copy.
      const bool pointwise = std::all_of(ops.begin(), ops.end(), [](const ooc::Operation* op) {
        return op->halo() == 0;
      });
      const bool same_layout = a.in.data == a.out.data && a.in.row_stride == a.out.row_stride &&
                               a.in.col_stride == a.out.col_stride &&
                               a.in.channel_stride == a.out.channel_stride &&
                               a.in.swap_bytes == a.out.swap_bytes && in.type == a.out.spec.type;
      if (a.alias.empty() || (pointwise && same_layout)) return;
      ooc::EngineOptions po = a.run.pipeline;
      po.row_begin = 0;
      po.row_end = in.height;
      job.set_mem_limit(budget_after_copy(a, ops, job.pick_backend(ops), po));
      src.copy_in();
    };
    r = ooc::run_job(std::move(spec));
    r.report.input_io.clear();  // memory: no file's reads to name
  }
  return stats_dict(r.report);
}

ooc::Precision precision_of(const py::dict& o);

// The array filters' border, precision (f64 by default, as scipy) and output type (the output
// array's).
ooc::PipelineSettings array_settings(const ArrayRun& a, const std::string& mode, double cval,
                                     const py::dict& o) {
  ooc::PipelineSettings s;
  s.border = ooc::parse_border_mode(mode);
  s.border_value = cval;
  s.out_type = a.out.spec.type;
  s.precision = precision_of(o);
  return s;
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
  ooc::StageCall call{"separable", {}};
  call.set("row", std::move(row)).set("col", std::move(col));
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

// ---- Pipelines (ooc/pipeline.hpp): oocrun's stages, over files and arrays ----

// oocrun's --border, --border-value, --out-type and --precision under their Python names
// (ooc/__init__.py has mapped scipy's mode names onto ooc's borders). The default precision is
// oocrun's, not the array filters' f64: a pipeline gives oocrun's bytes.
ooc::PipelineSettings pipeline_settings(const py::dict& o) {
  ooc::PipelineSettings s;
  s.border = ooc::parse_border_mode(get<std::string>(o, "mode", "reflect"));
  s.border_value = get<double>(o, "cval", 0.0);
  if (const auto t = get<std::string>(o, "out_type")) s.out_type = ooc::parse_sample_type(*t);
  const std::string p = get<std::string>(o, "precision", "auto");
  if (p == "f64")
    s.precision = ooc::Precision::f64;
  else if (p == "f32")
    s.precision = ooc::Precision::f32;
  else if (p != "auto")
    throw ooc::Error(ooc::ErrorKind::usage, "precision takes auto, f32 or f64, got '" + p + "'");
  return s;
}

// oocrun INPUT OUTPUT PIPELINE: the same job, passes and stats as the tool (one process, no
// parts), so that both write the same bytes.
py::dict run_file(const std::string& input, const std::string& output,
                  const std::vector<std::string>& words, const py::dict& o,
                  const py::object& progress) {
  // The pipeline and the settings first: a bad stage is reported before any file is opened.
  const std::vector<ooc::StageCall> stages = ooc::parse_pipeline(words);
  const ooc::PipelineSettings settings = pipeline_settings(o);
  const RunOptions run = run_options(o);
  ooc::JobSpec spec;
  spec.options = job_options(input, output, o, run, "f32");
  spec.progress = progress_fn(progress);
  spec.stages = stages;
  spec.settings = settings;
  ooc::JobResult r;
  {
    py::gil_scoped_release release;
    r = ooc::run_job(std::move(spec));
  }
  std::vector<std::pair<double, std::size_t>> per_pass;  // seconds and bytes read of each pass
  for (const ooc::RunStats& st : r.passes) per_pass.emplace_back(st.seconds, st.bytes_read);
  py::dict d = stats_dict(r.report);
  if (per_pass.size() > 1) {  // oocrun's "passes"
    py::list pass_stats;
    for (const auto& [seconds, bytes] : per_pass)
      pass_stats.append(py::dict(py::arg("seconds") = seconds, py::arg("bytes_read") = bytes));
    d["passes"] = pass_stats;
  }
  return d;
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

// A pipeline over an array, on the array runs' sources, sinks and aliasing rules. `output` is an
// array (ooc/__init__.py has made its dtype the out_type) or None: then a new array of the
// pipeline's output type, allocated only once the pipeline is known to be valid. Returns
// (output, stats).
py::tuple pipeline_array(const py::array& input, py::object output,
                         const std::vector<std::string>& words, const py::dict& o,
                         const py::object& progress) {
  const ooc::ImageSpec in = layout_of(input, "input").spec;
  if (!output.is_none()) {
    if (!py::isinstance<py::array>(output))
      throw ooc::Error(ooc::ErrorKind::usage, "output must be an array or None");
    (void)layout_of(output.cast<py::array>(), "output");  // its dtype before the out_type's
  }
  const std::vector<ooc::StageCall> stages = ooc::parse_pipeline(words);
  const ooc::PipelineSettings settings = pipeline_settings(o);
  ooc::PipelinePlan plan(in, stages, settings, run_options(o).pipeline);
  const ooc::ImageSpec out = plan.output();
  if (output.is_none()) {
    output = py::array(numpy_dtype(out.type),
                       std::vector<py::ssize_t>(input.shape(), input.shape() + input.ndim()));
  }
  ArrayRun a = array_run(input, output.cast<py::array>(), o, progress);
  if (a.out.spec.type != out.type)
    throw ooc::Error(ooc::ErrorKind::usage,
                     "output has samples " + std::string(ooc::name(a.out.spec.type)) +
                         ", the pipeline makes " + std::string(ooc::name(out.type)) +
                         ": give out_type of the output's dtype");
  py::dict stats = run_array_job(a, stages, settings, plan.describe());
  return py::make_tuple(output, stats);
}

// The stage declarations (oocrun --list) as Python objects: a list of dicts {name, help,
// reduction, params: [{name, kind, default, min, max, min_exclusive, help}]}. A default is the
// text a pipeline would take ("auto" for a computed one), None where the parameter is required;
// an unbounded min or max is None.
py::list stage_declarations() {
  static constexpr const char* kinds[] = {"number", "integer", "taps", "type", "text", "size"};
  py::list out;
  for (const ooc::StageDecl& d : ooc::stage_declarations()) {
    py::list params;
    for (const ooc::StageParam& p : d.params) {
      const auto bound = [](double v) -> py::object {
        return std::isinf(v) ? py::object(py::none()) : py::object(py::float_(v));
      };
      params.append(
          py::dict(py::arg("name") = p.name, py::arg("kind") = kinds[static_cast<int>(p.kind)],
                   py::arg("default") = p.required() ? py::object(py::none())
                                                     : py::object(py::str(p.fallback_text())),
                   py::arg("min") = bound(p.min), py::arg("max") = bound(p.max),
                   py::arg("min_exclusive") = p.min_open, py::arg("help") = p.help));
    }
    out.append(py::dict(py::arg("name") = d.name, py::arg("help") = d.help,
                        py::arg("reduction") = d.reduction, py::arg("params") = params));
  }
  return out;
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
      py::object exc = py::handle(g_error)(python_words(e.what()));
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
  m.def("run_file", &run_file, py::arg("input"), py::arg("output"), py::arg("pipeline"),
        py::arg("options"), py::arg("progress"));
  m.def("pipeline_array", &pipeline_array, py::arg("input"), py::arg("output"), py::arg("pipeline"),
        py::arg("options"), py::arg("progress"));
  m.def("stage_declarations", &stage_declarations);
  m.def("cuda_device_count", &ooc::cuda_device_count);
  m.def("partial_path", &ooc::partial_path, py::arg("output"));
  m.def("default_mem_limit", &ooc::default_mem_limit);
}
