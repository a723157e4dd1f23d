// What both passes of the label stage share (label.cpp): the runs of each slot's band on their way
// from the kernel to the merge, pass 1's merge of the bands into the table of provisional labels
// (label_table.hpp) with their measurements, its finish (the roots numbered, the regions table,
// the parts' join: label_parts.hpp), what a resume in pass 2 saves and restores, and each band's
// slice of the table for pass 2. Included by label.cpp alone.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "kernels/cpu/labels/regions.hpp"
#include "kernels/cpu/labels/runs.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ops/labels/label_cuda.hpp"
#include "ops/labels/label_parts.hpp"
#include "ops/labels/label_rows.hpp"
#include "ops/labels/label_table.hpp"
#include "ops/labels/regions_csv.hpp"

namespace ooc::detail::labels {

using detail::Connectivity;
using detail::RowRuns;
using kernels::BandRuns;

using kernels::kArea;
using kernels::kIntensity;
using kernels::kShape;

// What a band's kernel measured of its components (a slot's, from its kernel to its merge), and
// the band's rows of the intensity image.
struct SlotMeasures {
  std::vector<std::uint64_t> shape;
  std::vector<double> intensity;
  std::vector<std::byte> rows;
  std::vector<const std::byte*> row_ptrs;
};

// What both passes share: the runs of each slot's band (pass 1, from the kernel to the merge),
// the table and each band's first provisional label.
struct LabelState {
  ImageSpec in;
  Connectivity conn;
  std::uint64_t max_label;     // the most u32 labels number (lowered by tests)
  bool wide = false;           // u64 labels
  std::uint64_t min_size = 0;  // smaller components dropped (0: none)
  std::string regions;         // the regions table's path, or none
  std::string faces;           // parts as processes: where they keep their faces (label_parts)
  bool measure = false;
  std::unique_ptr<Source> intensity;  // the intensity image, or none
  std::mutex intensity_reads;         // for a source read in order only (a decoder)
  detail::LabelTable stats, istats;   // kShape entries, and kIntensity doubles' bits, per label
  std::vector<BandRuns> slot_runs;
  std::vector<SlotMeasures> slot_measures;
  detail::LabelTable table;
  std::vector<std::uint64_t> band_offset;
  std::vector<std::uint64_t> band_row;  // each band's first stacked row: pass 2 finds it by this
  std::uint64_t next = 0;
  std::int64_t first_row = 0, merged_rows = 0;  // the stacked rows merged
  RowRuns cur, prev;
  std::int64_t cur_z = 0, prev_z = -1;  // their planes (a volume in 3-D)
  RowRuns top;                          // the first row, for the parts' merge (label_parts.hpp)
  std::uint64_t count = 0;
  bool finished = false;
  // The CUDA backend's: what its kernels share with the merge, and a GPU band's runs and
  // measurements as the merge makes them.
  std::shared_ptr<detail::LabelCudaShared> cuda = std::make_shared<detail::LabelCudaShared>();
  BandRuns gpu_runs;
  SlotMeasures gpu_measures;

  LabelState(const ImageSpec& i, int c, std::size_t table_memory)
      : in(i), conn(c), stats(table_memory), istats(table_memory), table(table_memory) {
    max_label = std::numeric_limits<std::uint32_t>::max();
    // Tests lower the limit to reach the refusal without billions of components.
    if (const char* v = std::getenv("OOC_LABEL_MAX_FOR_TESTS"))
      max_label = std::min<std::uint64_t>(max_label, std::strtoull(v, nullptr, 10));
  }

  [[noreturn]] static void not_in_parts() {
    throw Error(ErrorKind::usage,
                "label needs every band of its rows in order, in one process or one MPI rank "
                "each: it does not run as --part or --rows parts; run it as one process or "
                "under mpirun");
  }

  // Joins band row `r` of `b` (provisional labels from `off`) to row y of `rows`.
  void link(const BandRuns& b, std::int64_t r, std::uint64_t off, const RowRuns& rows,
            std::int64_t y, bool diagonal) {
    const auto k = static_cast<std::size_t>(y - rows.first_row);
    const auto u = static_cast<std::size_t>(r);
    std::uint64_t* t = table.data();
    std::uint64_t last_a = ~std::uint64_t{0}, last_b = ~std::uint64_t{0};
    kernels::for_touching(b, b.row_start[u], b.row_start[u + 1], rows.x0.data(), rows.x1.data(),
                          rows.row_start[k], rows.row_start[k + 1], diagonal,
                          [&](std::uint64_t i, std::uint64_t j) {
                            const std::uint64_t a = off + b.label[i] - 1, c = rows.id[j];
                            if (a == last_a && c == last_b) return;
                            last_a = a;
                            last_b = c;
                            kernels::unite(t, a, c);
                          });
  }

  void keep(const BandRuns& b, std::int64_t r, std::uint64_t off, RowRuns& rows) {
    const auto u = static_cast<std::size_t>(r);
    for (std::uint64_t i = b.row_start[u]; i < b.row_start[u + 1]; ++i) {
      rows.x0.push_back(b.x0[i]);
      rows.x1.push_back(b.x1[i]);
      rows.id.push_back(off + b.label[i] - 1);
    }
    rows.row_start.push_back(rows.x0.size());
  }

  // A band labelled on the GPU (in `slot`, `n` components): its runs from the labels of the rows
  // the merge joins (label_cuda.hpp), measured here where the stage measures.
  void merge_gpu(int slot, std::uint64_t n, const Band& band) {
    const detail::LabelCudaRows r = cuda->get(slot);
    if (r.band != band.index || !r.labels)
      throw Error(ErrorKind::device, "label: the GPU's labels of band " +
                                         std::to_string(band.index) + " are not in slot " +
                                         std::to_string(slot));
    BandRuns& b = gpu_runs;
    b.clear();
    const std::int64_t w = in.width;
    for (std::int64_t y = 0; y < band.rows; ++y) {
      const std::uint32_t* row = cuda->all_rows       ? r.labels + y * w
                                 : y == 0             ? r.labels
                                 : y == band.rows - 1 ? r.labels + w
                                                      : nullptr;
      if (row)
        kernels::append_label_runs(row, w, b);
      else
        b.row_start.push_back(b.x0.size());
    }
    b.count = static_cast<std::uint32_t>(n);
    if (measure) measure_band(band, b, gpu_measures);
    merge(b, &gpu_measures, band);
  }

  // What a band's kernel measures of its components (the CPU's kernels, or the merge of a GPU
  // band).
  void measure_band(const Band& band, const BandRuns& r, SlotMeasures& m) {
    kernels::measure_shape(r, static_cast<std::uint64_t>(band.z),
                           static_cast<std::uint64_t>(band.y0), m.shape);
    Source* src = intensity.get();
    if (!src) return;
    const ImageSpec& is = src->spec();
    const std::size_t row_bytes = is.row_bytes();
    m.rows.resize(row_bytes * static_cast<std::size_t>(band.rows));
    {
      std::unique_lock<std::mutex> lock(intensity_reads, std::defer_lock);
      if (!src->parallel_reads()) lock.lock();
      src->read_rows(band.stacked_y0, band.rows, m.rows.data());
    }
    m.row_ptrs.resize(static_cast<std::size_t>(band.rows));
    for (std::size_t y = 0; y < m.row_ptrs.size(); ++y)
      m.row_ptrs[y] = m.rows.data() + y * row_bytes;
    dispatch_type(is.type, [&](auto zero) {
      using T = decltype(zero);
      kernels::measure_intensity(r, reinterpret_cast<const T* const*>(m.row_ptrs.data()), m.shape,
                                 m.intensity);
    });
  }

  // Pass 2: pass 1's band of the same rows (by its first row: a resumed run numbers its bands
  // from where it goes on), which must be one (its local numbers are that band's).
  std::size_t band_of(const Band& b) const {
    const auto y = static_cast<std::uint64_t>(b.stacked_y0);
    const auto it = std::lower_bound(band_row.begin(), band_row.end(), y);
    const auto i = static_cast<std::size_t>(it - band_row.begin());
    const std::uint64_t end = i + 1 < band_row.size()
                                  ? band_row[i + 1]
                                  : static_cast<std::uint64_t>(first_row + merged_rows);
    if (!finished || it == band_row.end() || *it != y ||
        end != y + static_cast<std::uint64_t>(b.rows))
      throw Error(ErrorKind::usage,
                  "label: rows " + std::to_string(y) + ":" + std::to_string(y + b.rows) +
                      " are not one of the first pass's bands (a resumed run planned other "
                      "bands: other --band-rows, --mem-limit or device); run with the "
                      "interrupted run's options, or without --resume");
    return i;
  }

  // For a resume in pass 2 (after finish): the table, the bands' offsets and first rows to
  // `path`.table, and the words the job's state file keeps.
  std::vector<std::uint64_t> save(const std::string& path) {
    const std::uint64_t bands = band_offset.size();
    const std::uint64_t check = detail::save_words(
        path + ".table",
        {{table.data(), next}, {band_offset.data(), bands}, {band_row.data(), bands}});
    return {kStateMagic,
            next,
            bands,
            count,
            wide ? 1u : 0u,
            static_cast<std::uint64_t>(first_row),
            static_cast<std::uint64_t>(merged_rows),
            check};
  }
  void restore(const std::vector<std::uint64_t>& w, const std::string& path) {
    if (w.size() != 8 || w[0] != kStateMagic || w[4] != (wide ? 1u : 0u))
      throw Error(ErrorKind::input, "'" + path + "' is not this label stage's saved state: " +
                                        "remove it and run without --resume");
    next = w[1];
    table.resize(next);
    band_offset.resize(w[2]);
    band_row.resize(w[2]);
    if (!detail::load_words(
            path + ".table",
            {{table.data(), next}, {band_offset.data(), w[2]}, {band_row.data(), w[2]}}, w[7]))
      throw Error(ErrorKind::input, "'" + path + ".table' is missing or damaged: run without " +
                                        "--resume (the first pass again)");
    count = w[3];
    first_row = static_cast<std::int64_t>(w[5]);
    merged_rows = static_cast<std::int64_t>(w[6]);
    release();
  }
  static constexpr std::uint64_t kStateMagic = 0x6f6f636c61626c31ULL;  // "ooclabl1"

  // Pass 2 on the GPU: band b's slice of the table, as the labels' type, into `to` (of
  // `capacity` entries).
  std::uint64_t table_slice(const Band& b, void* to, std::uint64_t capacity) const {
    const std::size_t u = band_of(b);
    const auto i = b.index;
    const std::uint64_t off = band_offset[u];
    const std::uint64_t end = u + 1 < band_offset.size() ? band_offset[u + 1] : next;
    if (!to) return end - off;
    if (end - off > capacity)
      throw Error(ErrorKind::device, "label: band " + std::to_string(i) + " has " +
                                         std::to_string(end - off) + " components");
    const std::uint64_t* t = table.data();
    if (wide)
      std::copy(t + off, t + end, static_cast<std::uint64_t*>(to));
    else
      for (std::uint64_t k = off; k < end; ++k)
        static_cast<std::uint32_t*>(to)[k - off] = static_cast<std::uint32_t>(t[k]);
    return end - off;
  }

  void merge(const BandRuns& b, const SlotMeasures* m, const Band& band) {
    if (band.index == 0 && band_offset.empty()) first_row = band.stacked_y0;
    if (finished || band.stacked_y0 != first_row + merged_rows ||
        band.index != static_cast<std::int64_t>(band_offset.size()))
      not_in_parts();
    const std::uint64_t off = next;
    band_offset.push_back(off);
    band_row.push_back(static_cast<std::uint64_t>(band.stacked_y0));
    next += b.count;
    table.resize(next);
    std::uint64_t* t = table.data();
    for (std::uint64_t k = off; k < next; ++k) t[k] = k;
    if (measure) add_stats(*m, off);
    if (band.y0 > 0 && cur.has(band.y0 - 1)) link(b, 0, off, cur, band.y0 - 1, conn.diagonal);
    if (conn.across && band.z > 0)
      for (std::int64_t r = 0; r < band.rows; ++r)
        for (const Connectivity::Across& a : conn.before) {
          const std::int64_t y = band.y0 + r + a.dy;
          if (y >= 0 && y < in.height && prev.has(y)) link(b, r, off, prev, y, a.diagonal);
        }
    // The first rows, for the parts' merge: one, or in a volume the rows that reach back into
    // the plane before (stacked row numbers).
    if (band.index == 0) top.clear(band.stacked_y0);
    const std::int64_t top_rows = conn.across ? in.height + 1 : 1;
    for (std::int64_t r = 0; r < band.rows && top.rows() < top_rows; ++r) keep(b, r, off, top);
    // What later bands join to: the last row, or a volume's whole plane (from the part's first
    // row where it starts inside one).
    if (!conn.across) {
      cur.clear(band.y0 + band.rows - 1);
      keep(b, band.rows - 1, off, cur);
    } else {
      if (band.y0 == 0 || band.index == 0) {
        cur.clear(band.y0);
        cur_z = band.z;
      }
      for (std::int64_t r = 0; r < band.rows; ++r) keep(b, r, off, cur);
      if (band.y0 + band.rows == in.height) {
        std::swap(prev, cur);
        prev_z = cur_z;
        cur.clear(0);
        cur_z = band.z + 1;
      }
    }
    merged_rows += band.rows;
  }

  // The band's components are provisional labels off, off + 1, ... in order.
  void add_stats(const SlotMeasures& m, std::uint64_t off) {
    stats.resize(next * kShape);
    std::copy(m.shape.begin(), m.shape.end(), stats.data() + off * kShape);
    if (intensity) {
      istats.resize(next * kIntensity);
      std::memcpy(istats.data() + off * kIntensity, m.intensity.data(),
                  m.intensity.size() * sizeof(double));
    }
  }

  // Folds provisional label p's measurements into its root's.
  void fold(std::uint64_t p, std::uint64_t root) {
    add_measures(stats.data() + root * kShape,
                 intensity ? istats.data() + root * kIntensity : nullptr, stats.data() + p * kShape,
                 intensity ? istats.data() + p * kIntensity : nullptr);
  }
  // e's measurements (shape, intensity doubles' bits or none) into r's.
  static void add_measures(std::uint64_t* r, std::uint64_t* ir, const std::uint64_t* e,
                           const std::uint64_t* ie) {
    if (ir) {
      double a[kIntensity], b[kIntensity];
      std::memcpy(a, ir, sizeof a);
      std::memcpy(b, ie, sizeof b);
      kernels::combine_intensity(a, r[kArea], b, e[kArea]);
      std::memcpy(ir, a, sizeof a);
    }
    kernels::combine_shape(r, e);
  }

  // Every parent is below its child (roots are the smallest provisional label of a component, in
  // raster order of first samples), so one pass upwards numbers the roots and gives each entry
  // its root's number. Measurements first go up to the roots (a pass that points every entry at
  // its root), so that components under the minimum size get 0 and the rest their numbers.
  void finish(const detail::LabelSumFn& sum) {
    if (first_row != 0 || merged_rows != in.stacked_rows()) return finish_part(sum);
    std::uint64_t* t = table.data();
    std::uint64_t n = 0;
    if (!measure) {
      for (std::uint64_t p = 0; p < next; ++p) t[p] = t[p] == p ? ++n : t[t[p]];
    } else {
      for (std::uint64_t p = 0; p < next; ++p) {
        if (t[p] == p) continue;
        t[p] = t[t[p]];
        fold(p, t[p]);
      }
      std::optional<detail::RegionsCsv> file;
      if (!regions.empty()) file.emplace(regions, in.volume(), intensity != nullptr);
      for (std::uint64_t p = 0; p < next; ++p) {
        if (t[p] != p) {
          t[p] = t[t[p]];
          continue;
        }
        const std::uint64_t* e = stats.data() + p * kShape;
        t[p] = e[kArea] >= min_size ? ++n : 0;
        if (file && t[p]) file->row(n, e, intensity ? istats.data() + p * kIntensity : nullptr);
      }
      if (file && (wide || n <= max_label)) file->commit();
    }
    count = n;
    release();
  }

  // One part's rows (an MPI rank's, or a process's of --part/--rows with `faces`): the table's
  // roots, their faces' runs and measurements to the others, and the labels all the parts agree
  // on (label_parts.cpp); each part writes its rows of the regions table, joined in part order.
  void finish_part(const detail::LabelSumFn& sum) {
    if (!sum) throw Error(ErrorKind::usage, "label: the parts have no way to meet");
    std::uint64_t* t = table.data();
    for (std::uint64_t p = 0; p < next; ++p) {
      if (t[p] == p) continue;
      t[p] = t[t[p]];
      if (measure) fold(p, t[p]);
    }
    // Measurements: each root's (shape, then intensity), and this part's rows of the table in a
    // file of its own, joined in part order once every part's is there.
    detail::PartMeasures pm;
    const bool wi = intensity != nullptr;
    pm.words = kShape + (wi ? kIntensity : 0);
    pm.min_size = min_size;
    pm.get = [&](std::uint64_t p, std::uint64_t* w) {
      std::copy_n(stats.data() + p * kShape, kShape, w);
      if (wi) std::copy_n(istats.data() + p * kIntensity, kIntensity, w + kShape);
    };
    pm.add = [wi](std::uint64_t* a, const std::uint64_t* b) {
      add_measures(a, wi ? a + kShape : nullptr, b, wi ? b + kShape : nullptr);
    };
    std::optional<detail::RegionsCsv> rows;
    const std::string chunks = (faces.empty() ? regions : faces) + ".regions.";
    if (!regions.empty()) {
      rows.emplace(chunks + std::to_string(first_row), in.volume(), wi, false);
      pm.row = [&](std::uint64_t label, const std::uint64_t* w) {
        rows->row(label, w, wi ? w + kShape : nullptr);
      };
    }
    detail::LabelPart part;
    part.first_row = first_row;
    part.rows = merged_rows;
    part.total_rows = in.stacked_rows();
    part.plane_rows = in.height;
    part.connectivity = conn.n;
    // Rows [lo, hi) of `r`, whose row i is stacked row `first + i`.
    auto face = [&](const RowRuns& r, std::int64_t first, std::int64_t lo, std::int64_t hi,
                    detail::FaceRuns& f) {
      for (std::int64_t i = 0; i < r.rows(); ++i) {
        if (first + i < lo || first + i >= hi) continue;
        const auto u = static_cast<std::size_t>(i);
        for (std::uint64_t k = r.row_start[u]; k < r.row_start[u + 1]; ++k) {
          f.row.push_back(first + i);
          f.x0.push_back(r.x0[k]);
          f.x1.push_back(r.x1[k]);
          f.root.push_back(t[r.id[k]]);
        }
      }
    };
    const std::int64_t end = first_row + merged_rows;
    if (!conn.across) {
      face(top, first_row, first_row, first_row + 1, part.top);
      face(cur, end - 1, end - 1, end, part.bottom);
    } else {  // a plane and a row each way
      const std::int64_t reach = in.height + 1;
      face(top, top.first_row, first_row, first_row + reach, part.top);
      face(prev, prev_z * in.height + prev.first_row, end - reach, end, part.bottom);
      face(cur, cur_z * in.height + cur.first_row, end - reach, end, part.bottom);
    }
    const detail::PartMeasures* m = measure ? &pm : nullptr;
    std::vector<detail::PartFaces> all;
    if (faces.empty()) {
      all = detail::exchange_faces(detail::part_faces(part, t, next, m), part.total_rows, sum);
    } else {
      // Separate processes: this part's faces to its file, then every part's, once all are there.
      detail::save_faces(faces, part, detail::part_faces(part, t, next, m), m);
      bool complete = false;
      all = detail::load_faces(faces, part, complete);
      if (!complete)
        throw Error(ErrorKind::usage,
                    "rows " + std::to_string(first_row) + ":" +
                        std::to_string(first_row + merged_rows) +
                        " labelled (pass 1): their faces are in '" + faces + "." +
                        std::to_string(first_row) +
                        "'; once every part has run, run this part again to write its rows "
                        "(the last part to run writes them now), then --finish",
                    true);
    }
    count = detail::number_parts(all, part, t, next, m);
    if (rows && (wide || count <= max_label)) {
      rows->commit();
      // The table in place once every part's rows are: under MPI the first rank, after all
      // wrote theirs; as processes, the part that finds them all (there at --finish).
      std::vector<std::string> paths;
      for (const detail::PartFaces& f : all) paths.push_back(chunks + std::to_string(f.first_row));
      if (faces.empty()) {
        std::vector<std::uint64_t> barrier{1};
        sum(barrier);
        if (first_row == 0) detail::join_regions_csv(regions, in.volume(), wi, paths, true);
      } else if (std::all_of(paths.begin(), paths.end(),
                             [](const std::string& f) { return ::access(f.c_str(), F_OK) == 0; })) {
        detail::join_regions_csv(regions, in.volume(), wi, paths, false);
      }
    }
    release();
  }

  void release() {
    cur.clear(0);
    prev.clear(0);
    top.clear(0);
    RowRuns().x0.swap(cur.x0);
    std::vector<BandRuns>(slot_runs.size()).swap(slot_runs);
    std::vector<SlotMeasures>(slot_measures.size()).swap(slot_measures);
    gpu_runs = BandRuns();
    gpu_measures = SlotMeasures();
    finished = true;
    if (!wide && count > max_label)
      throw Error(ErrorKind::usage,
                  "the image has " + std::to_string(count) + " components, more than u32 labels " +
                      "hold (" + std::to_string(max_label) + "): ask for u64 labels " +
                      "(label-type=u64, ooclabel --label-type u64), or label-type=auto");
  }
};

}  // namespace ooc::detail::labels
