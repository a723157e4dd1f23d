// The filter options of oocconv and ooccheck as command-line flags (the option groups "Filter"
// and "Result"); what they mean is ooc/filter_options.hpp's, from the stages' declarations.
#pragma once

#include <string>

#include "ooc/filter_options.hpp"

namespace CLI {
class App;
}

namespace ooc::cli {

// Adds the option groups "Filter" (taps and border) and "Result" (--out-type, --precision).
void add_filter_options(CLI::App& app, ooc::FilterOptions& f);
// --nodata V|nan|none into `text` (ooc::apply_nodata reads it): oocconv and oocrun, whose stages
// know holes; ooccheck's reference does not, so it is not among the filter options.
void add_nodata_option(CLI::App& group, std::string& text);

}  // namespace ooc::cli
