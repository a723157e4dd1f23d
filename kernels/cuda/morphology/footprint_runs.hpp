// A footprint's runs of ones (a 0/1 mask over the window's rectangle, row-major), as the CUDA
// kernels read them: along its rows (the minimum/maximum, the rank histograms' first fill and
// rebuild) and along its columns (the rank histograms' slide down a column). Host code that makes
// the tables; the kernels read copies of them in device memory.
#pragma once

#include <cstdint>
#include <vector>

namespace ooc::cuda {

// Columns [col, col + len) of window row `row` are ones.
struct RowRun {
  std::int32_t row = 0, col = 0, len = 0;
};
// Rows [first, last] of window column `col` are ones.
struct ColumnRun {
  std::int32_t col = 0, first = 0, last = 0;
};

// f(line, start, length) for each run of ones along the rows (line: a row, start: a column) or
// along the columns (line: a column, start: a row), line by line.
template <class F>
void scan_runs(const std::uint8_t* mask, int rows, int cols, bool along_rows, const F& f) {
  const int lines = along_rows ? rows : cols, length = along_rows ? cols : rows;
  auto one = [&](int line, int i) {
    return mask[along_rows ? line * cols + i : i * cols + line] != 0;
  };
  for (int line = 0; line < lines; ++line)
    for (int i = 0; i < length;) {
      if (!one(line, i)) {
        ++i;
        continue;
      }
      const int start = i;
      while (i < length && one(line, i)) ++i;
      f(line, start, i - start);
    }
}

// The runs along the rows, row by row.
inline std::vector<RowRun> row_runs(const std::uint8_t* mask, int rows, int cols) {
  std::vector<RowRun> v;
  scan_runs(mask, rows, cols, true, [&](int k, int q, int n) { v.push_back({k, q, n}); });
  return v;
}

// The runs along the columns, column by column.
inline std::vector<ColumnRun> column_runs(const std::uint8_t* mask, int rows, int cols) {
  std::vector<ColumnRun> v;
  scan_runs(mask, rows, cols, false, [&](int q, int k, int n) { v.push_back({q, k, k + n - 1}); });
  return v;
}

}  // namespace ooc::cuda
