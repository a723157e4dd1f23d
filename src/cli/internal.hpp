// What the files of src/cli share and the tools do not need: the running tool's name (kept for
// the signal handler) and the MPI rank mapping used by apply_run_options.
#pragma once

#include "common.hpp"

namespace ooc::cli {

// The name given to guarded_main ("ooc" before it runs), for messages printed outside it.
const char* program_name();
// Whether stdout was closed when the tool started (guarded_main parks /dev/null there, so that
// writes to it succeed): a --stats report would be lost.
bool stdout_was_closed();

// Under an MPI launcher: the ranks are the parts (--part and --rows refused), one GPU per rank by
// its rank on the node unless --devices names them.
void apply_mpi_ranks(const RunCli& r, ooc::JobOptions& jo);

}  // namespace ooc::cli
