// The synthetic images (synthetic.cpp): their patterns and source. Not public API: a library user
// asks for one through open_source("synth:PATTERN"); oocgen and the tests name the patterns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc {

// The synthetic image generator behind "synth:" inputs (and oocgen): deterministic for a seed,
// independent of how rows are split between calls or threads.
enum class Pattern { noise, gradient, checker, gaussian_spots, low_contrast, low_rank };
// What a pattern takes besides the seed: low-rank's rank and noise ("low-rank:R:S"; the
// definition is in synthetic.cpp and oocgen --help).
struct PatternParams {
  int rank = 8;
  double noise = 0.01;
};
// Throws a usage Error; fills *params (the defaults for a pattern without any) when given.
Pattern parse_pattern(const std::string& name, PatternParams* params = nullptr);
// "low-rank:R:S", S written so that it reads back exactly.
std::string low_rank_pattern(int rank, double noise);
// Writes row y of plane z (width x channels samples of `type`) of the pattern to dst; plane 0 is
// the 2-D image. low-rank takes only f32 and f64 (a usage Error otherwise).
void fill_synthetic_row(Pattern pattern, std::uint64_t seed, std::int64_t y, std::int64_t width,
                        int channels, SampleType type, std::byte* dst,
                        const PatternParams& params = {}, std::int64_t z = 0);

// The source behind "synth:PATTERN" (open_source): `pattern` without the prefix, "" for noise.
std::unique_ptr<Source> make_synthetic_source(const std::string& pattern, const RawHints& hints,
                                              std::uint64_t seed);

}  // namespace ooc
