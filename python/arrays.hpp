// ooc's filters and pipelines over NumPy arrays (module.cpp binds them): the array's memory, a
// numpy.memmap included, is the image the band pipeline streams through, by the job runner as a
// file is; strided views and big-endian dtypes are gathered band by band, never copied whole.
#pragma once

#include <string>
#include <vector>

#include "keywords.hpp"
#include "ooc/memory.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::python {

// A sample type from NumPy's kind ('u', 'i', 'f') and item size; `name`, the dtype as given,
// in the refusal.
ooc::SampleType sample_type_of(char kind, std::int64_t size, const std::string& name);
// The image an array of `shape` holds, as layout_of reads it; `volume` becomes whether it is
// read as a volume; `what` names the array in errors.
ooc::ImageSpec image_spec_of(const std::vector<std::int64_t>& shape, ooc::SampleType type,
                             bool& volume, const char* what);
// An array's layout and type as ooc's image; `what` names it in errors ("input"). A 3-D array
// is (H, W, C), or with `volume` (Z, H, W); a 4-D one (Z, H, W, C).
ooc::MemoryImage layout_of(const py::array& a, const char* what, bool volume);
// NumPy's dtype of a sample type.
py::dtype numpy_dtype(ooc::SampleType t);

// One or more passes over an array into an array, on the same plan and slots. `alias` (from
// ooc/__init__.py) says how the output shares the input's bytes, empty where it does not.
struct ArrayRun {
  py::array input, output;
  ooc::MemoryImage in, out;
  RunOptions run;
  ooc::ProgressFn progress;
  std::string alias;
  // The keyword halo_rows=(above, below) (ooc.dask's blocks: their neighbours' rows, without
  // copying them into one array): arrays of the input's layout, each None or rows (a volume's
  // planes) read before and after the input's as rows of the same image, never written. The job
  // runs over `stacked`, those pieces one after the other along axis 0; the output holds the
  // input's rows only, from stacked row kept_begin on.
  std::vector<py::array> around;
  std::vector<ooc::MemoryImage> pieces;  // above, the input, below: those given
  ooc::ImageSpec stacked;
  std::int64_t kept_begin = 0;
};

ArrayRun array_run(const py::array& input, const py::array& output, const py::dict& o,
                   const py::object& progress);

// The image a job over `input` reads: its own, with the rows of halo_rows if given.
ooc::ImageSpec job_input_spec(const py::array& input, const py::dict& o);

// A job over the arrays of `a` running `stages`; returns the stats dict. `operation`: its name
// in the stats (empty: the stages as built).
py::dict run_array_job(ArrayRun& a, std::vector<ooc::StageCall> stages,
                       const ooc::PipelineSettings& settings, const std::string& operation);

// scipy.ndimage's filters over arrays: a volume's plane (z) taps, then row (x) then column (y)
// taps, in convolution order; a 2-D kernel (plane by plane with the keyword planes); ooceq's
// equalization. The keyword volume says how to read a 3-D array (layout_of). An input in device
// memory (a CuPy array) with a device output runs on its GPU (device_arrays.hpp).
py::dict filter_array(const py::object& input, const py::object& output, std::vector<double> row,
                      std::vector<double> col, std::vector<double> plane, const std::string& mode,
                      double cval, const py::dict& o, const py::object& progress);
py::dict conv2d_array(const py::object& input, const py::object& output, const F64Array& kernel,
                      const std::string& mode, double cval, const py::dict& o,
                      const py::object& progress);
py::dict equalize_array(const py::object& input, const py::object& output, const py::dict& o,
                        const py::object& progress);

}  // namespace ooc::python
