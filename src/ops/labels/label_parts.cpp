// The parts' merge of the label stage (label_parts.hpp). Everything goes through sums: a bit per
// row where a part begins gives every part the order of all of them; then each part's counts,
// then its face runs, each in its own place of a vector the others leave at zero. Every part then
// joins the same face roots the same way, so they agree on the numbering without a leader.
#include "ops/labels/label_parts.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "kernels/cpu/labels/runs.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/label.hpp"
#include "ops/labels/label_rows.hpp"

namespace ooc::detail {

namespace {

// A component's root as the parts know it: its part and its rank among the part's roots. Their
// order is the order of the roots' provisional labels over the whole image.
using Key = std::pair<std::uint64_t, std::uint64_t>;

}  // namespace

PartFaces part_faces(const LabelPart& part, const std::uint64_t* t, std::uint64_t n) {
  // This part's face roots, ranked among its roots (a scan of the table, in order).
  std::vector<std::uint64_t> face;
  for (const FaceRuns* f : {&part.top, &part.bottom})
    face.insert(face.end(), f->root.begin(), f->root.end());
  std::sort(face.begin(), face.end());
  face.erase(std::unique(face.begin(), face.end()), face.end());
  std::vector<std::uint64_t> face_rank(face.size());
  PartFaces out;
  out.first_row = part.first_row;
  out.rows = part.rows;
  for (std::uint64_t p = 0, k = 0; p < n; ++p) {
    if (t[p] != p) continue;
    if (k < face.size() && face[k] == p) face_rank[k++] = out.roots;
    ++out.roots;
  }
  auto rank_of = [&](std::uint64_t root) {
    return face_rank[static_cast<std::size_t>(std::lower_bound(face.begin(), face.end(), root) -
                                              face.begin())];
  };
  out.top = part.top.x0.size();
  for (const FaceRuns* f : {&part.top, &part.bottom})
    for (std::size_t i = 0; i < f->x0.size(); ++i)
      out.runs.insert(out.runs.end(), {static_cast<std::uint64_t>(f->row[i]), f->x0[i], f->x1[i],
                                       rank_of(f->root[i])});
  return out;
}

std::vector<PartFaces> exchange_faces(const PartFaces& mine, std::int64_t total_rows,
                                      const LabelSumFn& sum) {
  // Where every part begins (distinct rows: the sum of the bits is their union).
  std::vector<std::uint64_t> starts(static_cast<std::size_t>((total_rows + 63) / 64), 0);
  starts[static_cast<std::size_t>(mine.first_row / 64)] |= std::uint64_t{1}
                                                           << (mine.first_row % 64);
  sum(starts);
  std::vector<PartFaces> all;
  for (std::size_t w = 0; w < starts.size(); ++w)
    for (std::uint64_t bits = starts[w]; bits; bits &= bits - 1)
      all.emplace_back().first_row = static_cast<std::int64_t>(w * 64) + __builtin_ctzll(bits);
  const std::size_t parts = all.size();
  std::size_t me = 0;
  while (all[me].first_row != mine.first_row) ++me;
  // Each part's rows, roots and face runs, then the runs (x0, x1, root's rank), top row first.
  std::vector<std::uint64_t> sizes(4 * parts, 0);
  sizes[4 * me] = static_cast<std::uint64_t>(mine.rows);
  sizes[4 * me + 1] = mine.roots;
  sizes[4 * me + 2] = mine.top;
  sizes[4 * me + 3] = mine.runs.size() / 4 - mine.top;
  sum(sizes);
  std::vector<std::uint64_t> at(parts + 1, 0);
  for (std::size_t j = 0; j < parts; ++j)
    at[j + 1] = at[j] + 4 * (sizes[4 * j + 2] + sizes[4 * j + 3]);
  std::vector<std::uint64_t> runs(static_cast<std::size_t>(at[parts]), 0);
  std::copy(mine.runs.begin(), mine.runs.end(), runs.begin() + static_cast<std::ptrdiff_t>(at[me]));
  sum(runs);
  for (std::size_t j = 0; j < parts; ++j) {
    all[j].rows = static_cast<std::int64_t>(sizes[4 * j]);
    all[j].roots = sizes[4 * j + 1];
    all[j].top = sizes[4 * j + 2];
    all[j].runs.assign(runs.begin() + static_cast<std::ptrdiff_t>(at[j]),
                       runs.begin() + static_cast<std::ptrdiff_t>(at[j + 1]));
  }
  return all;
}

std::uint64_t number_parts(const std::vector<PartFaces>& all, const LabelPart& part,
                           std::uint64_t* t, std::uint64_t n) {
  const std::size_t parts = all.size();
  std::size_t me = 0;
  while (me < parts && all[me].first_row != part.first_row) ++me;
  std::int64_t row = 0;
  for (std::size_t j = 0; j < parts; ++j) {
    if (all[j].first_row != row || all[j].rows <= 0)
      throw Error(ErrorKind::usage,
                  "label: the parts' rows do not cover the image: no part begins at row " +
                      std::to_string(row) + "; run every part of the same split");
    row += all[j].rows;
  }
  if (me == parts || row != part.total_rows)
    throw Error(ErrorKind::usage, "label: the parts' rows end at " + std::to_string(row) +
                                      ", the image has " + std::to_string(part.total_rows) +
                                      ": run every part of the same split");
  // Every face root of every part, in the image's order.
  std::vector<std::uint64_t> sizes(parts);
  std::vector<Key> keys;
  for (std::size_t j = 0; j < parts; ++j) {
    sizes[j] = all[j].roots;
    for (std::size_t i = 0; i + 3 < all[j].runs.size(); i += 4)
      keys.emplace_back(j, all[j].runs[i + 3]);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto node = [&](std::size_t j, std::uint64_t rank) {
    return static_cast<std::uint64_t>(std::lower_bound(keys.begin(), keys.end(), Key(j, rank)) -
                                      keys.begin());
  };
  std::vector<std::uint64_t> parent(keys.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  // The bottom rows' runs of every part by row: (row, part, first run, end) spans.
  struct Span {
    std::int64_t row;
    std::size_t part, begin, end;  // runs [begin, end) of all[part].runs, 4 words each
  };
  auto spans_of = [&](std::size_t j, std::size_t from, std::size_t to, std::vector<Span>& out) {
    const std::vector<std::uint64_t>& r = all[j].runs;
    for (std::size_t i = from; i < to;) {
      std::size_t e = i;
      while (e < to && r[4 * e] == r[4 * i]) ++e;
      out.push_back({static_cast<std::int64_t>(r[4 * i]), j, i, e});
      i = e;
    }
  };
  std::vector<Span> bottoms;
  for (std::size_t j = 0; j < parts; ++j)
    spans_of(j, static_cast<std::size_t>(all[j].top), all[j].runs.size() / 4, bottoms);
  std::stable_sort(bottoms.begin(), bottoms.end(),
                   [](const Span& x, const Span& y) { return x.row < y.row; });
  // Each part's top rows joined to the rows before its first that they touch (the same rule as
  // between two bands: the row above in the plane, and in a volume the previous plane's rows).
  const Connectivity conn(part.connectivity);
  const std::int64_t h = part.plane_rows;
  for (std::size_t j = 1; j < parts; ++j) {
    std::vector<Span> tops;
    spans_of(j, 0, static_cast<std::size_t>(all[j].top), tops);
    for (const Span& s : tops) {
      const std::int64_t r = s.row, y = r % h;
      std::vector<std::pair<std::int64_t, bool>> above;  // (row, diagonal)
      if (y > 0) above.emplace_back(r - 1, conn.diagonal);
      if (conn.across && r >= h)
        for (const Connectivity::Across& a : conn.before)
          if (y + a.dy >= 0 && y + a.dy < h) above.emplace_back(r - h + a.dy, a.diagonal);
      for (const auto& [q, diagonal] : above) {
        if (q >= all[j].first_row) continue;  // this part's own row: joined in its table
        auto it = std::lower_bound(bottoms.begin(), bottoms.end(), q,
                                   [](const Span& x, std::int64_t v) { return x.row < v; });
        for (; it != bottoms.end() && it->row == q; ++it) {
          const std::uint64_t* up = all[it->part].runs.data();
          const std::uint64_t* down = all[j].runs.data();
          kernels::merge_touching(
              it->begin, it->end,
              [&](std::uint64_t i) {
                return std::pair{up[4 * i + 1], up[4 * i + 2]};
              },
              s.begin, s.end,
              [&](std::uint64_t i) {
                return std::pair{down[4 * i + 1], down[4 * i + 2]};
              },
              diagonal,
              [&](std::uint64_t a, std::uint64_t b) {
                kernels::unite(parent.data(), node(it->part, up[4 * a + 3]),
                               node(j, down[4 * b + 3]));
              });
        }
      }
    }
  }

  // A root joined to an earlier one is no new component: each part's new components are its
  // roots less those, numbered on from the parts before it.
  std::vector<std::uint64_t> joined(parts, 0), before(parts + 1, 0);
  std::vector<bool> is_joined(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (kernels::find_root(parent.data(), static_cast<std::uint64_t>(i)) != i) {
      is_joined[i] = true;
      ++joined[static_cast<std::size_t>(keys[i].first)];
    }
  for (std::size_t j = 0; j < parts; ++j) before[j + 1] = before[j] + sizes[j] - joined[j];
  // Final labels of the face roots, in order (a joined one takes its root's, numbered before).
  std::vector<std::uint64_t> label(keys.size());
  for (std::size_t i = 0, j = 0, gone = 0; i < keys.size(); ++i) {
    if (keys[i].first != j) {
      j = static_cast<std::size_t>(keys[i].first);
      gone = 0;
    }
    if (is_joined[i]) {
      label[i] = label[kernels::find_root(parent.data(), static_cast<std::uint64_t>(i))];
      ++gone;
    } else {
      label[i] = before[j] + keys[i].second - gone + 1;
    }
  }

  // This part's table: every root its label, every other entry its root's.
  const std::uint64_t first = node(me, 0);
  std::uint64_t k = first, gone = 0, rank = 0;
  for (std::uint64_t p = 0; p < n; ++p) {
    if (t[p] != p) {
      t[p] = t[t[p]];
      continue;
    }
    if (k < keys.size() && keys[k].first == me && keys[k].second == rank) {
      t[p] = label[k];
      if (is_joined[k++]) ++gone;
    } else {
      t[p] = before[me] + rank - gone + 1;
    }
    ++rank;
  }
  return before[parts];
}

std::uint64_t finish_label_parts(const LabelPart& part, std::uint64_t* t, std::uint64_t n,
                                 const LabelSumFn& sum) {
  return number_parts(exchange_faces(part_faces(part, t, n), part.total_rows, sum), part, t, n);
}

namespace {

// A faces file: this word, the image's rows, a plane's rows, the connectivity, then the part's
// first row, rows, roots, top runs and all its runs' words.
constexpr std::uint64_t kFacesMagic = 0x3273656361466c4fULL;  // "OlFaces2"

std::string dir_of(const std::string& prefix) {
  const std::size_t slash = prefix.rfind('/');
  return slash == std::string::npos ? "." : prefix.substr(0, slash == 0 ? 1 : slash);
}

}  // namespace

std::vector<std::string> faces_files(const std::string& prefix) {
  std::vector<std::string> out;
  const std::string dir = dir_of(prefix);
  const std::string base = prefix.substr(prefix.rfind('/') + 1) + ".";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > base.size() && name.compare(0, base.size(), base) == 0 &&
        name.find_first_not_of("0123456789", base.size()) == std::string::npos)
      out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  return out;
}

void save_faces(const std::string& prefix, const LabelPart& part, const PartFaces& f) {
  std::vector<std::uint64_t> w{kFacesMagic,
                               static_cast<std::uint64_t>(part.total_rows),
                               static_cast<std::uint64_t>(part.plane_rows),
                               static_cast<std::uint64_t>(part.connectivity),
                               static_cast<std::uint64_t>(f.first_row),
                               static_cast<std::uint64_t>(f.rows),
                               f.roots,
                               f.top,
                               f.runs.size()};
  w.insert(w.end(), f.runs.begin(), f.runs.end());
  const std::string path = prefix + "." + std::to_string(f.first_row);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  bool ok = file && std::fwrite(w.data(), sizeof w[0], w.size(), file) == w.size();
  const int err = errno;
  if (file) ok = std::fclose(file) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::io, system_message("label: cannot write the part's faces", path, err));
  }
}

std::vector<PartFaces> load_faces(const std::string& prefix, LabelPart& part, bool& complete) {
  std::vector<PartFaces> all;
  for (const std::string& path : faces_files(prefix)) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) throw Error(ErrorKind::io, system_message("label: cannot read", path, errno));
    std::uint64_t h[9] = {};
    bool ok = std::fread(h, sizeof h[0], 9, file) == 9 && h[0] == kFacesMagic;
    PartFaces f;
    if (ok) {
      f.first_row = static_cast<std::int64_t>(h[4]);
      f.rows = static_cast<std::int64_t>(h[5]);
      f.roots = h[6];
      f.top = h[7];
      f.runs.resize(static_cast<std::size_t>(h[8]));
      ok = std::fread(f.runs.data(), sizeof h[0], f.runs.size(), file) == f.runs.size();
    }
    std::fclose(file);
    const bool same =
        part.total_rows == 0 || (h[1] == static_cast<std::uint64_t>(part.total_rows) &&
                                 h[2] == static_cast<std::uint64_t>(part.plane_rows) &&
                                 h[3] == static_cast<std::uint64_t>(part.connectivity));
    if (!ok || !same)
      throw Error(ErrorKind::usage,
                  "label: '" + path + "' is " +
                      (ok ? "the faces of another image or connectivity" : "not a part's faces") +
                      ": remove it (and run that part again)");
    if (part.total_rows == 0) {  // taken from the first file (ooclabel --finish)
      part.total_rows = static_cast<std::int64_t>(h[1]);
      part.plane_rows = static_cast<std::int64_t>(h[2]);
      part.connectivity = static_cast<int>(h[3]);
    }
    all.push_back(std::move(f));
  }
  std::sort(all.begin(), all.end(),
            [](const PartFaces& a, const PartFaces& b) { return a.first_row < b.first_row; });
  std::int64_t row = 0;
  for (const PartFaces& f : all)
    if (f.first_row == row) row += f.rows;
  complete = !all.empty() && row == part.total_rows;
  return all;
}

}  // namespace ooc::detail

namespace ooc {

std::string label_faces_prefix(std::string output) {
  while (output.size() > 1 && output.back() == '/') output.pop_back();  // "x.zarr/"
  return output + ".label-faces";
}

LabelFaces label_faces(const std::string& output) {
  detail::LabelPart part;  // total_rows 0: the files say
  LabelFaces r;
  const std::vector<detail::PartFaces> all =
      detail::load_faces(label_faces_prefix(output), part, r.complete);
  r.parts = all.size();
  if (r.complete) {
    part.first_row = all.front().first_row;
    r.components = detail::number_parts(all, part, nullptr, 0);
    return r;
  }
  std::int64_t row = 0;
  for (const detail::PartFaces& f : all) {
    if (f.first_row > row)
      r.missing +=
          (r.missing.empty() ? "" : ", ") + std::to_string(row) + ":" + std::to_string(f.first_row);
    row = std::max(row, f.first_row + f.rows);
  }
  if (part.total_rows > row || all.empty())
    r.missing += (r.missing.empty() ? "" : ", ") + std::to_string(row) + ":" +
                 (all.empty() ? std::string("end") : std::to_string(part.total_rows));
  return r;
}

void remove_label_faces(const std::string& output) {
  for (const std::string& f : detail::faces_files(label_faces_prefix(output))) ::unlink(f.c_str());
}

}  // namespace ooc
