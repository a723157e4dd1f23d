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

PartFaces part_faces(const LabelPart& part, const std::uint64_t* t, std::uint64_t n,
                     const PartMeasures* m) {
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
  // Each face root: the kept roots before it that touch no face, then its measurements.
  const std::size_t words = m ? m->words : 0;
  std::vector<std::uint64_t> w(words);
  for (std::uint64_t p = 0, k = 0; p < n; ++p) {
    if (t[p] != p) continue;
    if (k < face.size() && face[k] == p) {
      face_rank[k++] = out.roots;
      out.info.push_back(out.kept);
      if (m) {
        m->get(p, w.data());
        out.info.insert(out.info.end(), w.begin(), w.end());
      }
    } else if (!m || m->min_size == 0 || (m->get(p, w.data()), w[0] >= m->min_size)) {
      ++out.kept;
    }
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
  // Each part's rows, roots, face runs, kept roots and face roots' words, then the runs (row,
  // x0, x1, root's rank; top rows first) and the face roots' words.
  constexpr std::size_t S = 6;
  std::vector<std::uint64_t> sizes(S * parts, 0);
  sizes[S * me] = static_cast<std::uint64_t>(mine.rows);
  sizes[S * me + 1] = mine.roots;
  sizes[S * me + 2] = mine.top;
  sizes[S * me + 3] = mine.runs.size() / 4 - mine.top;
  sizes[S * me + 4] = mine.kept;
  sizes[S * me + 5] = mine.info.size();
  sum(sizes);
  std::vector<std::uint64_t> at(parts + 1, 0), info_at(parts + 1, 0);
  for (std::size_t j = 0; j < parts; ++j) {
    at[j + 1] = at[j] + 4 * (sizes[S * j + 2] + sizes[S * j + 3]);
    info_at[j + 1] = info_at[j] + sizes[S * j + 5];
  }
  std::vector<std::uint64_t> runs(static_cast<std::size_t>(at[parts]), 0);
  std::copy(mine.runs.begin(), mine.runs.end(), runs.begin() + static_cast<std::ptrdiff_t>(at[me]));
  sum(runs);
  std::vector<std::uint64_t> info(static_cast<std::size_t>(info_at[parts]), 0);
  std::copy(mine.info.begin(), mine.info.end(),
            info.begin() + static_cast<std::ptrdiff_t>(info_at[me]));
  sum(info);
  for (std::size_t j = 0; j < parts; ++j) {
    all[j].rows = static_cast<std::int64_t>(sizes[S * j]);
    all[j].roots = sizes[S * j + 1];
    all[j].top = sizes[S * j + 2];
    all[j].kept = sizes[S * j + 4];
    all[j].runs.assign(runs.begin() + static_cast<std::ptrdiff_t>(at[j]),
                       runs.begin() + static_cast<std::ptrdiff_t>(at[j + 1]));
    all[j].info.assign(info.begin() + static_cast<std::ptrdiff_t>(info_at[j]),
                       info.begin() + static_cast<std::ptrdiff_t>(info_at[j + 1]));
  }
  return all;
}

std::uint64_t number_parts(const std::vector<PartFaces>& all, const LabelPart& part,
                           std::uint64_t* t, std::uint64_t n, const PartMeasures* m) {
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
  std::vector<Key> keys;
  for (std::size_t j = 0; j < parts; ++j) {
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

  // A face root joined to an earlier one is no new component; a union's measurements are its
  // roots' folded in key order, and it is kept at the minimum size. Each part's new components:
  // its kept roots that touch no face and its kept union roots, numbered on from the parts before.
  const std::size_t words = m ? m->words : 0, stride = 1 + words;
  std::vector<std::uint64_t> root(keys.size()), acc(keys.size() * words);
  std::vector<std::size_t> first_key(parts + 1, keys.size());
  for (std::size_t i = keys.size(); i-- > 0;) first_key[keys[i].first] = i;
  for (std::size_t j = parts; j-- > 0;) first_key[j] = std::min(first_key[j], first_key[j + 1]);
  auto info_of = [&](std::size_t i) {  // key i's words in its part's info
    const std::size_t j = keys[i].first;
    return all[j].info.data() + (i - first_key[j]) * stride;
  };
  for (std::size_t i = 0; i < keys.size(); ++i) {
    root[i] = kernels::find_root(parent.data(), static_cast<std::uint64_t>(i));
    if (words == 0) continue;
    std::uint64_t* a = acc.data() + root[i] * words;
    if (root[i] == i)
      std::copy_n(info_of(i) + 1, words, a);
    else
      m->add(a, info_of(i) + 1);
  }
  auto kept = [&](std::size_t r) {
    return !m || m->min_size == 0 || acc[r * words] >= m->min_size;
  };
  std::vector<std::uint64_t> before(parts + 1, 0), label(keys.size(), 0);
  for (std::size_t j = 0, i = 0; j < parts; ++j) {
    std::uint64_t unions = 0;
    for (; i < first_key[j + 1]; ++i)
      if (root[i] == i && kept(i))
        label[i] = before[j] + info_of(i)[0] + ++unions;  // the kept roots before it, then these
    before[j + 1] = before[j] + all[j].kept + unions;
  }
  for (std::size_t i = 0; i < keys.size(); ++i) label[i] = label[root[i]];

  // This part's table: every root its label (0: dropped), every other entry its root's; its
  // components' rows in label order.
  std::uint64_t k = first_key[me], rank = 0, counted = before[me];
  std::vector<std::uint64_t> w(words);
  for (std::uint64_t p = 0; p < n; ++p) {
    if (t[p] != p) {
      t[p] = t[t[p]];
      continue;
    }
    if (k < first_key[me + 1] && keys[k].second == rank) {
      t[p] = label[k];
      if (root[k] == k && t[p]) {
        ++counted;
        if (m && m->row) m->row(t[p], acc.data() + k * words);
      }
      ++k;
    } else {
      if (m) m->get(p, w.data());
      const bool keep = !m || m->min_size == 0 || w[0] >= m->min_size;
      t[p] = keep ? ++counted : 0;
      if (keep && m && m->row) m->row(t[p], w.data());
    }
    ++rank;
  }
  return before[parts];
}

std::uint64_t finish_label_parts(const LabelPart& part, std::uint64_t* t, std::uint64_t n,
                                 const LabelSumFn& sum, const PartMeasures* m) {
  return number_parts(exchange_faces(part_faces(part, t, n, m), part.total_rows, sum), part, t, n,
                      m);
}

namespace {

// A faces file: this word, the image's rows, a plane's rows, the connectivity, then the part's
// first row, rows, roots, top runs, its runs' words, kept roots, info words, the measurements'
// words and minimum size, then the runs' and info words.
constexpr std::uint64_t kFacesMagic = 0x3373656361466c4fULL;  // "OlFaces3"

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

void save_faces(const std::string& prefix, const LabelPart& part, const PartFaces& f,
                const PartMeasures* m) {
  std::vector<std::uint64_t> w{kFacesMagic,
                               static_cast<std::uint64_t>(part.total_rows),
                               static_cast<std::uint64_t>(part.plane_rows),
                               static_cast<std::uint64_t>(part.connectivity),
                               static_cast<std::uint64_t>(f.first_row),
                               static_cast<std::uint64_t>(f.rows),
                               f.roots,
                               f.top,
                               f.runs.size(),
                               f.kept,
                               f.info.size(),
                               m ? m->words : 0,
                               m ? m->min_size : 0};
  w.insert(w.end(), f.runs.begin(), f.runs.end());
  w.insert(w.end(), f.info.begin(), f.info.end());
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

std::vector<PartFaces> load_faces(const std::string& prefix, LabelPart& part, bool& complete,
                                  std::size_t* words, std::uint64_t* min_size) {
  std::vector<PartFaces> all;
  for (const std::string& path : faces_files(prefix)) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) throw Error(ErrorKind::io, system_message("label: cannot read", path, errno));
    std::uint64_t h[13] = {};
    bool ok = std::fread(h, sizeof h[0], 13, file) == 13 && h[0] == kFacesMagic;
    if (words) *words = static_cast<std::size_t>(h[11]);
    if (min_size) *min_size = h[12];
    PartFaces f;
    if (ok) {
      f.first_row = static_cast<std::int64_t>(h[4]);
      f.rows = static_cast<std::int64_t>(h[5]);
      f.roots = h[6];
      f.top = h[7];
      f.runs.resize(static_cast<std::size_t>(h[8]));
      f.kept = h[9];
      f.info.resize(static_cast<std::size_t>(h[10]));
      ok = std::fread(f.runs.data(), sizeof h[0], f.runs.size(), file) == f.runs.size() &&
           std::fread(f.info.data(), sizeof h[0], f.info.size(), file) == f.info.size();
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
  detail::PartMeasures m;  // areas alone decide what is kept: the count
  const std::vector<detail::PartFaces> all =
      detail::load_faces(label_faces_prefix(output), part, r.complete, &m.words, &m.min_size);
  r.parts = all.size();
  if (r.complete) {
    part.first_row = all.front().first_row;
    m.add = [](std::uint64_t* a, const std::uint64_t* b) { a[0] += b[0]; };
    r.components = detail::number_parts(all, part, nullptr, 0, m.words ? &m : nullptr);
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
  const std::string prefix = label_faces_prefix(output);
  for (const std::string& f : detail::faces_files(prefix)) ::unlink(f.c_str());
  for (const std::string& f : detail::faces_files(prefix + ".regions")) ::unlink(f.c_str());
}

}  // namespace ooc
