// The label stage run as parts in separate processes (ooclabel --part/--rows): each part keeps
// its first and last rows' components in a faces file beside the output, which the others read
// to agree on scipy's numbering; ooclabel --finish reports on them and removes them once the
// output is in place (docs/design.md, "Labels: two passes and a table").
#pragma once

#include <cstdint>
#include <string>

namespace ooc {

// The faces files' prefix for an output (files PREFIX.FIRST_ROW).
std::string label_faces_prefix(std::string output);

struct LabelFaces {
  std::size_t parts = 0;         // faces files found
  bool complete = false;         // they cover the image
  std::uint64_t components = 0;  // the image's count, where complete
  std::string missing;           // rows no part has labelled yet ("A:B, ..."), where not
};

// What the parts of `output` have labelled so far (throws a usage Error for a stale file).
LabelFaces label_faces(const std::string& output);

// Removes the faces files of `output`.
void remove_label_faces(const std::string& output);

}  // namespace ooc
