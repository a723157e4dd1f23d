// The label stage run in parts (MPI ranks or processes, each labelling its rows): after its first
// pass, each part's table holds its own components; the parts exchange their first and last rows'
// runs (a plane and a row of them in a volume),
// join the components that touch across the cuts, and number every component as one process
// would (raster order of first samples), so the second pass writes the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ooc::detail {

// Element-wise sums over the processes, the same on every one (ProcessGroup::sum).
using LabelSumFn = std::function<void(std::vector<std::uint64_t>&)>;

// Rows' runs: columns [x0[i], x1[i]) of stacked row row[i], of root label root[i] (an index into
// the part's table), in row order.
struct FaceRuns {
  std::vector<std::int64_t> row;
  std::vector<std::uint32_t> x0, x1;
  std::vector<std::uint64_t> root;
};

struct LabelPart {
  std::int64_t first_row = 0;  // stacked rows [first_row, first_row + rows) are this part's
  std::int64_t rows = 0;
  std::int64_t total_rows = 0;  // the image's stacked rows
  std::int64_t plane_rows = 0;  // rows of a plane
  int connectivity = 4;         // 4 or 8 (an image, or each plane apart), 6, 18 or 26 (a volume)
  // The part's first and last rows that others may touch: one each for an image, a plane and a
  // row each for a volume in 3-D (the rows that reach into the next plane).
  FaceRuns top, bottom;
};

// What a part tells the others: its rows, its count of roots and its faces' runs as (row, x0, x1,
// the root's rank among the part's roots) quads, the top rows' first; the roots it keeps that
// touch no face, and for each face root, in rank order, how many of those come before it, then
// its measurements (PartMeasures::words).
struct PartFaces {
  std::int64_t first_row = 0, rows = 0;
  std::uint64_t roots = 0;
  std::uint64_t top = 0;  // runs of the top rows (the rest are the bottom rows')
  std::vector<std::uint64_t> runs;
  std::uint64_t kept = 0;
  std::vector<std::uint64_t> info;
};

// The measurements of a part's roots (regions=, min-size=): `words` a root, its area first.
struct PartMeasures {
  std::size_t words = 0;
  std::uint64_t min_size = 0;                                         // 0: every root kept
  std::function<void(std::uint64_t root, std::uint64_t* out)> get;    // a root's words
  std::function<void(std::uint64_t* a, const std::uint64_t* b)> add;  // b's folded into a's
  // Called for each component this part numbers, in label order, with its whole measurements.
  std::function<void(std::uint64_t label, const std::uint64_t* words)> row;
};

// `t` holds the part's `n` provisional labels, each pointing at its root (t[r] == r for a root,
// roots in raster order of first samples); `m` its measurements, or null.
PartFaces part_faces(const LabelPart& part, const std::uint64_t* t, std::uint64_t n,
                     const PartMeasures* m = nullptr);

// Every part's faces, in row order, through the processes' sums (collective).
std::vector<PartFaces> exchange_faces(const PartFaces& mine, std::int64_t total_rows,
                                      const LabelSumFn& sum);

// Joins the faces of every part (`all`, in row order, covering the image: else a usage Error),
// rewrites this part's table (t as for part_faces) to the final labels over the whole image and
// returns the image's count of components (t may be null with n = 0: the count alone).
std::uint64_t number_parts(const std::vector<PartFaces>& all, const LabelPart& part,
                           std::uint64_t* t, std::uint64_t n, const PartMeasures* m = nullptr);

// The three above under MPI ranks: every rank must call it.
std::uint64_t finish_label_parts(const LabelPart& part, std::uint64_t* t, std::uint64_t n,
                                 const LabelSumFn& sum, const PartMeasures* m = nullptr);

// Parts run as separate processes (--part, --rows) keep their faces in files `prefix`.FIRST_ROW:
// save_faces writes this part's (atomically); load_faces reads every part's there, in row order,
// refusing a file of another image or connectivity, and says whether they cover the image.
// words and min_size: the measurements' (PartMeasures), saved with the faces.
void save_faces(const std::string& prefix, const LabelPart& part, const PartFaces& faces,
                const PartMeasures* m);
std::vector<PartFaces> load_faces(const std::string& prefix, LabelPart& part, bool& complete,
                                  std::size_t* words = nullptr, std::uint64_t* min_size = nullptr);
// The faces files under `prefix`.
std::vector<std::string> faces_files(const std::string& prefix);

}  // namespace ooc::detail
