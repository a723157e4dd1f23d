// ooccheck: judges images out of core, band by band, in bounded memory.
//   ooccheck OUT IN [filter options of oocconv]: recomputes in float64 what `oocconv IN OUT
//     <filter options>` must write, and compares OUT with it, sample by sample, against the
//     rounding bound of oocconv's arithmetic for that sample.
//   ooccheck OUT IN --kernel K [options of oocconv]: the same for the 2-D convolution
//     (scipy.ndimage.convolve), the full K x L sum per sample whatever path oocconv took.
//   ooccheck --equalize OUT IN: rebuilds ooceq's table (cv2.equalizeHist's) from its own
//     histogram of all of IN, and requires OUT = table[IN] exactly.
//   ooccheck --compare A B: compares two images of the same geometry.
//   ooccheck --atax Y A --x X: recomputes oocatax's y = A^T (A X) (--op ax: A X, atx: A^T X) in
//     float64 in one pass over the matrix A, and compares Y with it (atax.cpp).
// All report the max abs error and where it is, RMS error, PSNR, the worst error relative to its
// own tolerance and the samples over their tolerance, and exit 0 only when none is. --sample N
// checks N random bands, for files too large to read whole (--equalize still reads all of IN
// for the histogram).
//
// The reference is written apart from the library's code on purpose: a bug shared by the
// reference and the thing it checks would go unseen. It uses only ooc::open_source to read rows
// (also of a .npy kernel), ooc::map_border for coordinates outside the image, and the shared
// option parsing for the options themselves (so that they stay oocconv's) and for the border,
// output type and precision. The taps (Gaussian, box, explicit lists and taps files), the 2-D
// kernels (files and built-ins), the row, column and 2-D sums, the border padding along x, the
// conversion to the output type, the histogram and the equalization table are its own.
//
// This file is the command line; each checker lives in a file of its own (check.hpp lists them).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "atax.hpp"
#include "check.hpp"
#include "cli/filter_options.hpp"
#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"

namespace {

using ooc::Error;
using ooc::ErrorKind;
using ooc::check::run_compare;
using ooc::check::run_equalize;
using ooc::check::run_reference;
using ooc::check::run_reference2d;

constexpr const char* kFooter = R"(
The reference: oocconv convolves along x, then along y (scipy.ndimage.convolve1d semantics), with
the border rule along both axes. ooccheck recomputes that in float64 from taps it builds itself
(Gaussian sigma = R/3, or R = ceil(3 sigma); box 1/(2R+1); explicit lists parsed on their own),
64 output rows at a time, and converts each value to OUT's type as oocconv stores it (integers
rounded to nearest, ties to even, and saturated; NaN to 0). OUT's type comes from its header
(.npy, TIFF), or for a raw OUT from --out-type (default: the input's type). Pass the input and
filter options that made OUT.

Tolerance, per sample (--tolerance T: T for every sample instead):
  reference: the rounding bound of oocconv's arithmetic for that sample. With n = row taps +
    column taps, u = 2^-24 when oocconv accumulates in f32 (2^-53 in f64), and M = the sum over
    the sample's support of |column tap| x |row tap| x |input|:
      b = (n + 4) u M + (2n + 4) 2^-53 M + (n + 4) m max(1, sum |column tap|)
    (second term: the float64 reference's own rounding; third: underflow, m = the accumulator's
    smallest normal number, also the least a non-zero tap counts for in M). |OUT - expected| may
    be b + 1 for integer outputs, b (1 + 2^-24) + 2^-23 |expected| + 2^-149 for f32, and
    b + 2^-52 |expected| for f64. NaN and infinities must match exactly; where M overflows, only
    they are checked.
  --compare: 1 for integers; for floats 1e-5 x the largest finite |A| within 16 pixels of the
    sample along its row (same channel).

--kernel K (2-D): scipy.ndimage.convolve (K flipped), the border rule along both axes, every tap
of the K x L window summed in float64 whether or not oocconv runs K as rank-1 factors. K is read
or built here (text or .npy file; box:N taps 1/N^2; gaussian2d:S the outer product of the
normalized Gaussian of radius ceil(3 S); laplace; sobel-x; sobel-y). Tolerance as above with
n = K x L taps, M = sum |tap| x |input| over the window (sum |tap| in the underflow term), plus
2^-48 max|tap| x S, S = sum |input| over it (rank-1 factors are good to 2^-49 max|tap| only).

--equalize OUT IN: ooccheck counts every sample of IN itself (all bands, also with --sample), builds
cv2.equalizeHist's table per channel (65536 bins for u16; the formula of ooceq --help, float32
rounding emulated exactly) and requires OUT = table[IN] exactly. u8 and u16 only.

--atax Y A --x X: oocatax's y = A^T (A X) (--op ax: A X; --op atx: A^T X) for the matrix A (M
rows x N columns: raw with --width/--cols N and --height/--rows M, .npy (M, N), a one-channel
TIFF, or synth:low-rank), recomputed in float64 by ooccheck's own loops in one pass over A's rows
(memory: X, Y and the reference, never A whole). X and Y: .npy (n,) or (n, k) (Y f4 or f8), or
text (one row per line, k numbers between spaces or commas); --x ones or random regenerates
oocatax's X (n x --k; random: X[i, j] = 2 unit(mix(seed x 0x9E3779B97F4A7C15 + i k + j + 1)) - 1
with splitmix64's finalizer mix, unit = the top 53 bits / 2^53, seed = --seed). Tolerance per
element: gamma x bound + 4 (N + M + 64) x the smallest normal number, gamma = 4 (N + M + 64) x 2^-53
(--precision f64, the default) or 2^-24 (--precision f32: what oocatax accumulated in), bound = the
same product on |A| and |X|, plus the rounding of Y's stored values (f4: 2^-24 |y|; text: half a
unit of the most significant digits any number of the file shows). NaN and infinities must match
exactly. --sample S checks S random rows of y; for atax and atx all of A is still read (every
element of y depends on every row), for ax only those rows of A. A Y or X of the wrong shape is
an input error (exit 3) naming both shapes.

Examples:
  ooccheck out.raw in.raw --width 16384 --type u16 --radius 16
      Recompute `oocconv in.raw out.raw --width 16384 --type u16 --radius 16` and compare.
  ooccheck out.npy in.npy --taps 1,4,6,4,1 --border constant --border-value 10
  ooccheck out.raw synth:noise --width 65536 --height 200000 --seed 3 --sigma 2 --sample 20
      20 random bands of 64 rows of a huge image; --seed makes the synth: image, as it did for
      oocconv, and picks the bands.
  ooccheck out.tif in.tif --kernel laplace --border nearest --sample 10
  ooccheck --equalize eq.raw in.raw --width 65536 --type u16 --sample 20
  ooccheck --compare a.raw b.raw --width 16384 --type f32
  ooccheck --compare ours.raw peer.raw --width 16384 --type u8 --tolerance 1 --margin 16
  ooccheck --atax y.npy A.raw --cols 16384 --rows 65536 --type f32 --x random --k 8 --seed 3
  ooccheck --atax y.npy A.npy --x x.npy --op ax --sample 1000 --precision f32

Exit codes: 0 within tolerance, 1 over it, 2 usage, 3 bad input (geometry mismatch included).
)";

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("ooccheck", [&]() -> int {
    CLI::App app{
        "ooccheck: check oocconv's output against a float64 reference computed out of core\n"
        "(ooccheck OUT IN [input and filter or --kernel options of oocconv]), ooceq's against\n"
        "its own equalization (ooccheck --equalize OUT IN [input options]), oocatax's against\n"
        "its own float64 product (ooccheck --atax Y A --x X), or compare two images\n"
        "(ooccheck --compare A B)."};
    app.footer(kFooter);
    app.get_formatter()->column_width(34);

    std::vector<std::string> files;
    bool compare = false, equalize = false, atax = false;
    app.add_option("FILES", files,
                   "OUT IN (OUT made from IN by oocconv or ooceq), A B, or Y A (--atax)")
        ->expected(2)
        ->required();
    app.add_flag("--compare", compare, "compare two images A B instead");
    app.add_flag("--equalize", equalize, "check ooceq's OUT (histogram equalization) of IN");
    app.add_flag("--atax", atax, "check oocatax's Y (A^T (A X), or --op) of the matrix A");

    ooc::RawHints hints;
    std::string type = "f32";
    std::uint64_t seed = 1;
    auto* g_in = app.add_option_group("Input");
    g_in->add_option("--width,--cols", hints.width,
                     "samples per row (raw files; .npy headers say it)");
    g_in->add_option("--height,--rows", hints.height, "rows (checked against the file size)");
    auto* type_opt = g_in->add_option("--type", type,
                                      "sample type of IN (of A and B): u8 u16 i16 u32 i32 f32 f64")
                         ->default_str("f32");
    auto* channels_opt =
        g_in->add_option("--channels", hints.channels, "interleaved channels, 1 to 4")
            ->default_str("1");
    g_in->add_option("--in-format", hints.format, "auto (magic bytes), raw, npy or tiff")
        ->default_str("auto");
    g_in->add_option("--page", hints.page, "TIFF: the page of IN (of A and B with --compare)")
        ->default_str("0")
        ->each([&hints](const std::string&) { hints.page_given = true; });
    g_in->add_option("--seed", seed, "seed of a synth: input and of --sample")->default_str("1");

    ooc::FilterOptions filter;
    ooc::cli::add_filter_options(app, filter);
    ooc::check::AtaxCli atax_cli;
    ooc::check::add_atax_options(app, atax_cli);

    double tolerance = -1;
    std::int64_t margin = 0, sample = 0;
    auto* g_c = app.add_option_group("Check");
    auto* tolerance_opt =
        g_c->add_option("--tolerance", tolerance,
                        "largest allowed |error| of every sample (default: per sample, see below)");
    g_c->add_option("--sample", sample,
                    "check N random bands of 64 rows (--atax: N rows of y), picked by --seed "
                    "(default: all)");
    auto* margin_opt =
        g_c->add_option("--margin", margin,
                        "--compare: ignore this many pixels at every edge (other border rules)");

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "ooccheck")) return *code;
    hints.type = ooc::parse_sample_type(type);
    hints.type_given = type_opt->count() > 0;
    hints.channels_given = channels_opt->count() > 0;
    if (sample < 0) throw Error(ErrorKind::usage, "--sample must be >= 0 (0: every band)");
    if (tolerance_opt->count() > 0 && !(tolerance >= 0))
      throw Error(ErrorKind::usage, "--tolerance must be >= 0, got " + std::to_string(tolerance));
    if (int(compare) + int(equalize) + int(atax) > 1)
      throw Error(ErrorKind::usage, "give one of --compare, --equalize and --atax");
    if (atax) {
      for (const char* opt :
           {"--radius", "--sigma", "--filter", "--taps", "--row-taps", "--col-taps", "--taps-file",
            "--kernel", "--border", "--border-value", "--out-type", "--tolerance", "--margin"}) {
        if (app.get_option(opt)->count() > 0)
          throw Error(ErrorKind::usage,
                      std::string(opt) +
                          " has no meaning for --atax: the tolerance comes from --precision (what "
                          "oocatax accumulated in) and the sizes of A");
      }
      return ooc::check::run_atax(files, hints, seed, atax_cli, filter.precision, sample);
    }
    if (const std::string opt = ooc::check::given_atax_option(app); !opt.empty())
      throw Error(ErrorKind::usage, opt + " belongs to --atax (ooccheck --atax Y A --x X)");
    if (equalize) {
      for (const char* opt : {"--radius", "--sigma", "--filter", "--taps", "--row-taps",
                              "--col-taps", "--taps-file", "--kernel", "--border", "--border-value",
                              "--out-type", "--precision", "--tolerance", "--margin"}) {
        if (app.get_option(opt)->count() > 0)
          throw Error(ErrorKind::usage,
                      std::string(opt) +
                          " has no meaning for --equalize: ooceq takes no filter and OUT must "
                          "equal the table of IN exactly");
      }
      return run_equalize(files, hints, seed, sample);
    }
    if (compare) {
      for (const char* opt :
           {"--radius", "--sigma", "--filter", "--taps", "--row-taps", "--col-taps", "--taps-file",
            "--kernel", "--border", "--border-value", "--out-type", "--precision"}) {
        if (app.get_option(opt)->count() > 0)
          throw Error(ErrorKind::usage, std::string(opt) +
                                            " belongs to the reference mode (ooccheck OUT IN), "
                                            "not to --compare");
      }
      return run_compare(files, hints, seed, tolerance, margin, sample);
    }
    if (margin_opt->count() > 0)
      throw Error(ErrorKind::usage,
                  "--margin belongs to --compare: the reference computes the borders exactly");
    if (!filter.kernel.empty())
      return run_reference2d(files, hints, seed, filter, tolerance, sample);
    return run_reference(files, hints, seed, filter, tolerance, sample);
  });
}
