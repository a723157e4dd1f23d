// ooccheck --atax: judges oocatax's y = A^T (A X), A X or A^T X against ooccheck's own float64
// product, computed in one streaming pass over the matrix A. What main.cpp needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ooc/io.hpp"

namespace CLI {
class App;
}

namespace ooc::check {

// `sample` distinct indices of [0, n) picked at random from `seed`, ascending; all of them when
// sample <= 0 or >= n. What --sample checks: bands (tally.cpp, where it is defined) or rows of
// y (--atax).
std::vector<std::int64_t> pick_sample(std::int64_t n, std::int64_t sample, std::uint64_t seed);

// The words of a line of a text file of numbers (a kernel, X): what lies between commas and white
// space, with everything from a '#' on dropped. Defined in tally.cpp.
std::vector<std::string> line_tokens(std::string line);

// The options of --atax, as given.
struct AtaxCli {
  std::string op = "atax";        // atax, ax or atx
  std::string x;                  // a file (.npy or text), "ones" or "random"
  std::optional<std::int64_t> k;  // columns of a generated X (default 1); an X file's own
};

// Adds the option group "Matrix (--atax)": --op, --x, --k.
void add_atax_options(CLI::App& app, AtaxCli& a);

// The first of --op, --x, --k given on the command line, or an empty string: they mean nothing
// outside --atax.
std::string given_atax_option(const CLI::App& app);

// Checks Y (files[0]) against the product of A (files[1], read through ooc::open_source with
// `hints` and `seed`) and X. precision: --precision as given (auto and f64: f64; f32); sample:
// output rows of y to check (0: all). Returns the exit code (0 pass, 1 over the tolerance);
// throws ooc::Error for usage (2) and input (3) errors.
int run_atax(const std::vector<std::string>& files, const ooc::RawHints& hints, std::uint64_t seed,
             const AtaxCli& a, const std::string& precision, std::int64_t sample);

}  // namespace ooc::check
