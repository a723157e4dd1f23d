// The Python keywords as the library's options (keywords.hpp).
#include "keywords.hpp"

#include <utility>

#include "ooc/detail/size_text.hpp"
#include "ooc/io.hpp"
#include "ooc/limits.hpp"

namespace ooc::python {

std::string repr_of(const py::handle& v) {
  return py::repr(v).cast<std::string>();
}

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
  r.pipeline.tile_cols = count<std::int64_t>(o, "tile_cols", ooc::kBandRowsRange);
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
  take(o, "depth", jo.hints.depth);
  take(o, "volume", jo.hints.volume);
  take(o, "pages", jo.hints.pages);
  // --page given: that page alone, even of a z-stack (without it, the pages alike are planes).
  if (const auto page = get<int>(o, "page")) {
    jo.hints.page = *page;
    jo.hints.page_given = true;
  }
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
    case ooc::SampleType::u64:
      return "uint64";
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

}  // namespace ooc::python
