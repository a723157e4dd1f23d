// The Python extension ooc._core: oocconv's, ooceq's and oocrun's file-to-file runs, pipelines
// over arrays, the stage declarations and the bindings (arrays.cpp: the array filters;
// keywords.cpp: the keywords as options). Files and arrays run alike through ooc::run_job, the
// tools' job runner. Every run releases the GIL. python/ooc/__init__.py is the documented front:
// it normalizes arguments (scipy.ndimage names, modes, origins) and calls these.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "arrays.hpp"
#include "device_arrays.hpp"
#include "keywords.hpp"

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

#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/filter_options.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/limits.hpp"
#include "ooc/memory.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"
#include "ooc/run.hpp"

namespace py = pybind11;
using namespace ooc::python;

namespace {

// ooc.Error, and ooc.UsageError (an ooc.Error and a ValueError: a call's arguments refused), made
// once at import and kept for the life of the process.
PyObject* g_error = nullptr;
PyObject* g_usage_error = nullptr;

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
  static const std::pair<const char*, const char*> keywords[] = {
      {"mem-limit", "mem_limit"}, {"band-rows", "band_rows"}, {"slots", "slots"},
      {"tile-cols", "tile_cols"}, {"threads", "threads"},     {"devices", "devices"},
      {"device", "device"},       {"border-value", "cval"},   {"border", "mode"},
      {"out-type", "out_type"},   {"precision", "precision"}, {"method", "method"},
      {"kernel", "kernel"},       {"compress", "compress"},   {"level", "level"},
      {"chunk", "chunk"},         {"shard", "shard"},         {"zarr-version", "zarr_version"},
      {"levels", "levels"},       {"pyramid", "pyramid"},     {"cog", "cog"},
      {"tile", "tile"},           {"page", "page"},           {"input-level", "input_level"},
      {"in-format", "in_format"}, {"bigtiff", "bigtiff"},     {"format", "format"},
      {"radius", "radius"},       {"sigma", "sigma"},         {"taps", "taps"},
      {"taps-file", "taps_file"}, {"filter", "filter"},       {"type", "type"},
      {"width", "width"},         {"height", "height"},       {"channels", "channels"},
      {"planes", "planes=True"},  {"volume", "volume=True"},  {"voxel-size", "voxel_size"},
      {"depth", "depth"},         {"pages", "pages"}};
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

// oocconv INPUT OUTPUT <options>: a separable filter (radius, sigma, taps) or a 2-D kernel.
py::dict convolve_file(const std::string& input, const std::string& output, const py::dict& o,
                       const py::object& progress) {
  const RunOptions run = run_options(o);
  ooc::FilterOptions f;
  f.radius = get<std::int64_t>(o, "radius");
  f.sigma = get<double>(o, "sigma");
  f.filter_kind = get<std::string>(o, "filter", "gaussian");
  // Taps as text the user wrote, or as a sequence of numbers (passed on as values).
  auto taps = [&](const char* key, std::string& text, std::optional<std::vector<double>>& values) {
    if (!o.contains(key) || o[key].is_none()) return;
    if (py::isinstance<py::str>(o[key])) {
      text = o[key].cast<std::string>();
      return;
    }
    try {
      values = o[key].cast<std::vector<double>>();
    } catch (const py::cast_error&) {
      throw ooc::Error(ooc::ErrorKind::usage, std::string(key) +
                                                  " must be a string or a sequence of numbers, "
                                                  "got " +
                                                  repr_of(o[key]));
    }
  };
  taps("taps", f.taps, f.taps_values);
  taps("row_taps", f.row_taps, f.row_values);
  taps("col_taps", f.col_taps, f.col_values);
  f.taps_file = get<std::string>(o, "taps_file", "");
  f.kernel = get<std::string>(o, "kernel", "");
  f.border = get<std::string>(o, "border", "reflect");
  f.border_value = get<double>(o, "border_value", 0.0);
  f.out_type = get<std::string>(o, "out_type", "");
  f.precision = get<std::string>(o, "precision", "auto");
  f.method = get<std::string>(o, "method", "auto");
  f.planes = get<bool>(o, "planes", false);
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

// ---- Pipelines (ooc/pipeline.hpp): oocrun's stages, over files and arrays ----

// oocrun's --border, --border-value, --out-type and --precision under their Python names
// (ooc/__init__.py has mapped scipy's mode names onto ooc's borders). The default precision is
// oocrun's, not the array filters' f64: a pipeline gives oocrun's bytes.
ooc::PipelineSettings pipeline_settings(const py::dict& o) {
  ooc::PipelineSettings s = ooc::pipeline_settings(
      get<std::string>(o, "mode", "reflect"), get<double>(o, "cval", 0.0),
      get<std::string>(o, "out_type", ""), get<std::string>(o, "precision", "auto"));
  // voxel_size (ooc/__init__.py has made a sequence "z,y,x"): --voxel-size.
  if (const std::string v = get<std::string>(o, "voxel_size", ""); !v.empty())
    s.voxel = ooc::parse_voxel_size(v, "voxel_size");
  ooc::apply_nodata(get<std::string>(o, "nodata", ""), s, "nodata");  // oocrun's --nodata
  return s;
}

// oocrun INPUT OUTPUT PIPELINE: the same job, passes and stats as the tool, so that both write
// the same bytes; part_index and part_count run one part, as --part I/N, rows_begin and rows_end
// as --rows A:B (its rows into the output's shared temporary; finish_output then puts the whole
// in place): ooc.dask's tasks.
py::dict run_file(const std::string& input, const std::string& output,
                  const std::vector<std::string>& words, const py::dict& o,
                  const py::object& progress) {
  // The pipeline and the settings first: a bad stage is reported before any file is opened.
  const std::vector<ooc::StageCall> stages = ooc::parse_pipeline(words);
  ooc::PipelineSettings settings = pipeline_settings(o);
  settings.planes = get<bool>(o, "planes", false);  // --planes
  const RunOptions run = run_options(o);
  ooc::JobSpec spec;
  spec.options = job_options(input, output, o, run, "f32");
  spec.options.sink.voxel = settings.voxel;  // recorded by OME outputs, as the input's would be
  take(o, "part_index", spec.options.part_index);
  take(o, "part_count", spec.options.part_count);
  take(o, "rows_begin", spec.options.rows_begin);  // --rows A:B
  take(o, "rows_end", spec.options.rows_end);
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

// A pipeline over an array, on the array runs' sources, sinks and aliasing rules. `output` is an
// array (ooc/__init__.py has made its dtype the out_type) or None: then a new array of the
// pipeline's output type, allocated only once the pipeline is known to be valid. Returns
// (output, stats). An input in device memory (a CuPy array) runs on its GPU into the device
// output ooc/_pipeline.py made (device_arrays.hpp).
py::tuple pipeline_array(const py::object& input_object, py::object output,
                         const std::vector<std::string>& words, const py::dict& o,
                         const py::object& progress) {
  if (is_device_array(input_object)) {
    ooc::PipelineSettings settings = pipeline_settings(o);
    settings.planes = get<bool>(o, "planes", false);  // --planes
    py::dict stats =
        run_device_stages(input_object, output, ooc::parse_pipeline(words), settings, o);
    return py::make_tuple(output, stats);
  }
  const py::array input = input_object;
  const bool volume = get<bool>(o, "volume", false);
  const ooc::ImageSpec in = job_input_spec(input, o);  // with halo_rows, as the job reads it
  if (!output.is_none()) {
    if (!py::isinstance<py::array>(output))
      throw ooc::Error(ooc::ErrorKind::usage, "output must be an array or None");
    (void)layout_of(output.cast<py::array>(), "output", volume);  // its dtype before out_type's
  }
  const std::vector<ooc::StageCall> stages = ooc::parse_pipeline(words);
  ooc::PipelineSettings settings = pipeline_settings(o);
  settings.planes = get<bool>(o, "planes", false);  // --planes
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

// How far a pipeline over an image of `shape` ((depth, height, width, channels), depth 0 for an
// image) and `type` reaches: what ooc.dask overlaps its blocks by. Each pass's operation as
// built: rows and planes of context on each side, columns (None where the kernels need whole
// rows: an FFT's grid), whether it projects along z, and the output's type. Building the plan
// checks the stages and the settings, so a bad pipeline is refused before any block runs.
py::dict pipeline_reach(const std::vector<std::int64_t>& shape, const std::string& type,
                        const std::vector<std::string>& words, const py::dict& o) {
  if (shape.size() != 4)
    throw ooc::Error(ooc::ErrorKind::usage, "shape must be (depth, height, width, channels)");
  ooc::ImageSpec in;
  in.depth = std::max<std::int64_t>(shape[0], 1);
  in.stack = shape[0] == 1;
  in.height = shape[1];
  in.width = shape[2];
  in.channels = static_cast<int>(shape[3]);
  in.type = ooc::parse_sample_type(type);
  ooc::validate(in);
  const std::vector<ooc::StageCall> stages = ooc::parse_pipeline(words);
  ooc::PipelineSettings settings = pipeline_settings(o);
  settings.planes = get<bool>(o, "planes", false);
  ooc::PipelinePlan plan(in, stages, settings, run_options(o).pipeline);
  py::list passes;
  for (int i = 0; i < plan.passes(); ++i) {
    const ooc::Operation& op = plan.pass(i);
    const auto cols = op.column_halo();
    passes.append(
        py::dict(py::arg("rows") = op.halo(), py::arg("planes") = op.plane_halo(),
                 py::arg("columns") = cols ? py::object(py::int_(*cols)) : py::object(py::none()),
                 py::arg("projects") = op.projects()));
  }
  return py::dict(py::arg("passes") = passes,
                  py::arg("out_type") = std::string(ooc::name(plan.output().type)),
                  py::arg("stages") = plan.stage_descriptions());
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
  g_usage_error = PyErr_NewException(
      "ooc.UsageError", py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError)).ptr(),
      nullptr);
  m.attr("UsageError") = py::handle(g_usage_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ooc::Error& e) {
      PyObject* type = e.kind() == ooc::ErrorKind::usage ? g_usage_error : g_error;
      py::object exc = py::handle(type)(python_words(e.what()));
      exc.attr("kind") = kind_name(e.kind());
      exc.attr("exit_code") = e.exit_code();
      PyErr_SetObject(type, exc.ptr());
    }
  });
  m.def("convolve_file", &convolve_file, py::arg("input"), py::arg("output"), py::arg("options"),
        py::arg("progress"));
  m.def("equalize_file", &equalize_file, py::arg("input"), py::arg("output"), py::arg("options"),
        py::arg("progress"));
  m.def("filter_array", &filter_array, py::arg("input"), py::arg("output"), py::arg("row"),
        py::arg("col"), py::arg("plane"), py::arg("mode"), py::arg("cval"), py::arg("options"),
        py::arg("progress"));
  m.def("conv2d_array", &conv2d_array, py::arg("input"), py::arg("output"), py::arg("kernel"),
        py::arg("mode"), py::arg("cval"), py::arg("options"), py::arg("progress"));
  m.def("equalize_array", &equalize_array, py::arg("input"), py::arg("output"), py::arg("options"),
        py::arg("progress"));
  m.def("run_file", &run_file, py::arg("input"), py::arg("output"), py::arg("pipeline"),
        py::arg("options"), py::arg("progress"));
  m.def("pipeline_array", &pipeline_array, py::arg("input"), py::arg("output"), py::arg("pipeline"),
        py::arg("options"), py::arg("progress"));
  m.def("stage_declarations", &stage_declarations);
  m.def("pipeline_reach", &pipeline_reach, py::arg("shape"), py::arg("type"), py::arg("pipeline"),
        py::arg("options"));
  m.def("cuda_device_count", &ooc::cuda_device_count);
  m.def("partial_path", &ooc::partial_path, py::arg("output"));
  // oocconv --finish OUTPUT: the parts' checks and the rename into place.
  m.def(
      "finish_output",
      [](const std::string& output) {
        py::gil_scoped_release release;
        return ooc::finish_output(output);
      },
      py::arg("output"));
  m.def("default_mem_limit", &ooc::default_mem_limit);
}
