// What guarded_main records for the rest of src/cli (the running tool's name, kept for the signal
// handler; whether stdout was closed at start), and the MPI rank mapping apply_run_options uses.
// The tools do not need it.
#pragma once

#include "options.hpp"

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
