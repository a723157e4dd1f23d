// oocgen: writes a synthetic image of any size (deterministic for a seed), in parallel, band by
// band in bounded memory, with a progress bar; raw, .npy or TIFF by the extension. The same
// generator backs the "synth:" input of oocconv.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "io/synthetic.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/ops/convert.hpp"

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("oocgen", [&]() -> int {
    CLI::App app{
        "oocgen: write a synthetic image of any size (raw, .npy or TIFF by the extension), "
        "deterministic for a seed."};
    app.footer(R"(
Examples:
  oocgen big.raw --width 65536 --height 262144 --type f32
  oocgen rgb.raw --width 20000 --height 20000 --type u16 --channels 3 --pattern gradient --seed 7
  oocgen cells.tif --width 100000 --height 100000 --type u16 --pattern gaussian-spots --tile 512
  oocgen scene.tif --width 30000 --height 30000 --channels 3 --type u8 --compress zstd
  oocgen dim.raw --width 65536 --height 65536 --type u8 --pattern low-contrast   (for ooceq)
  oocgen stack.tif --width 2048 --height 2048 --depth 64 --type u16 --pattern gaussian-spots
  oocgen A.raw --width 16384 --height 65536 --pattern low-rank --rank 16   (a matrix for oocatax)

gaussian-spots: a dark background with one blurred spot (sigma 2.5 to 5 px) in every 64 x 64 cell,
so about a tenth of the pixels are non-zero whatever the size.

low-rank: a real matrix (width = columns N, height = rows M) of known structure, f32 or f64 only
(integer types are refused). With R = --rank (default 8) and s = --noise (default 0.01):
  A[r, c] = (1 / sqrt(R)) sum_{i<R} u_i(r) v_i(c) + s e(r, c)
u_i(r), v_i(c) and e(r, c) are independent uniform values in [-1, 1), hashed from (seed, which of
u/v/e, i, r or c), so entries have a standard deviation of about 1/3 whatever R, and A^T A has R
large eigenvalues over a floor set by s. c counts samples, so --channels C makes an N C-column
matrix. As an input elsewhere: synth:low-rank (defaults), synth:low-rank:R or synth:low-rank:R:S.
)");
    std::string out, type = "f32", pattern = "noise";
    std::optional<std::string> mem_limit;
    ooc::RawHints hints;
    std::uint64_t seed = 1;
    ooc::cli::ProgressCli progress;
    bool quiet = false;
    app.add_option("OUTPUT", out, "image file to write (OUTPUT.partial until complete)")
        ->required();
    app.add_option("--width", hints.width, "samples per row")
        ->required()
        ->check(ooc::cli::positive());
    app.add_option("--height", hints.height, "rows (of a plane)")
        ->required()
        ->check(ooc::cli::positive());
    app.add_option("--depth", hints.depth,
                   "planes: a volume (the patterns vary with the plane; plane 0 is the 2-D "
                   "image)")
        ->check(ooc::cli::positive());
    app.add_option("--type", type, "u8 u16 i16 u32 i32 f32 f64")->default_str("f32");
    app.add_option("--channels", hints.channels, "interleaved channels, 1 to 4")->default_str("1");
    app.add_option("--pattern", pattern,
                   "noise, gradient, checker, gaussian-spots, low-contrast or low-rank")
        ->default_str("noise");
    ooc::PatternParams low_rank;
    auto* rank_opt =
        app.add_option("--rank", low_rank.rank, "low-rank: rank R, 1 to 4096")->default_str("8");
    auto* noise_opt = app.add_option("--noise", low_rank.noise, "low-rank: noise amplitude s >= 0")
                          ->default_str("0.01");
    app.add_option("--seed", seed, "seed")->default_str("1");
    ooc::SinkOptions out_options;
    ooc::cli::add_output_options(app, out_options);
    app.add_option("--mem-limit", mem_limit, "memory for the band ring (default: as for oocconv)");
    ooc::cli::add_progress_options(app, progress);
    app.add_flag("-q,--quiet", quiet,
                 "no summary line and no progress (an explicit --progress or --progress-log "
                 "still reports)");
    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "oocgen")) return *code;
    progress.quiet = quiet;
    hints.type = ooc::parse_sample_type(type);
    if (pattern == "low-rank") {
      // Checked by the pattern's own parser, so that --rank and low-rank:R say the same.
      pattern = ooc::low_rank_pattern(low_rank.rank, low_rank.noise);
    } else if (rank_opt->count() > 0 || noise_opt->count() > 0) {
      throw ooc::Error(ooc::ErrorKind::usage,
                       std::string(rank_opt->count() > 0 ? "--rank" : "--noise") +
                           " belongs to --pattern low-rank, not to --pattern " + pattern);
    }
    ooc::EngineOptions popt;
    if (mem_limit) popt.mem_limit = ooc::parse_size(*mem_limit, "--mem-limit");

    ooc::JobOptions jo;
    jo.input = "synth:" + pattern;
    jo.hints = hints;
    jo.seed = seed;
    jo.output = out;
    jo.sink = out_options;
    jo.pipeline = popt;
    jo.device = "cpu";  // the generator runs on the CPU; the copy is all the job does
    ooc::Job job(jo);
    auto op = ooc::make_convert(job.source().spec(), hints.type);
    job.start({op.get()});
    ooc::cli::Progress bar(progress, job.source().spec().total_bytes(), "oocgen");
    const auto st = job.run(*op, [&](std::int64_t d, std::int64_t t) { bar.update(d, t); });
    bar.finish();
    job.commit();
    if (!quiet)
      std::fprintf(stderr, "oocgen: wrote %s (%s, %s) in %.2f s, %.1f MB/s\n", out.c_str(),
                   job.source().describe().c_str(),
                   ooc::format_bytes(double(st.bytes_written)).c_str(), st.seconds,
                   double(st.bytes_written) / st.seconds / 1e6);
    return 0;
  });
}
