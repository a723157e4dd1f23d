// The Python keywords of ooc._core's functions as the library's options (module.cpp and
// arrays.cpp share them): typed reads of the keyword dict, refused in the tools' words, the run
// options, progress, the stats dict and the kernels given as arrays.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/job.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/run.hpp"

namespace ooc::python {

namespace py = pybind11;

std::string repr_of(const py::handle& v);

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
RunOptions run_options(const py::dict& o);

// The user's progress(done_rows, total_rows), called between bands with the GIL taken again; a
// Python exception there (Ctrl-C included) stops the run and propagates.
ooc::ProgressFn progress_fn(const py::object& progress);

// The stats dict: the tools' --stats json object (ooc/run.hpp), as Python objects.
py::dict stats_dict(const ooc::RunReport& r);

// Sets `field` to the keyword's value where one is given, else leaves the option's default (the
// library's, as the tools' options do).
template <class T>
void take(const py::dict& d, const char* key, T& field) {
  if (const auto v = get<T>(d, key)) field = *v;
}

// The tools' Input and Output file options under their Python keywords.
ooc::JobOptions job_options(const std::string& input, const std::string& output, const py::dict& o,
                            const RunOptions& run, const char* default_type);

using F64Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

// A 2-D float64 array (convolution order) as ooc's kernel.
ooc::Kernel2d kernel_of(const F64Array& k, const std::string& name);

// NumPy's name of a sample type ("uint8").
std::string numpy_name(ooc::SampleType t);
// ooc.equalize's refusal of another type than u8/u16, said of `what` (the array's dtype or the
// file's type), with the pipeline that scales, converts and equalizes it (`call`).
void check_equalizable(ooc::SampleType t, const std::string& what, const std::string& call);

}  // namespace ooc::python
