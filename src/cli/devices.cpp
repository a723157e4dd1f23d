// Under an MPI launcher (mpirun, srun): the ranks are the parts of the run, each on the GPU of
// its rank on the node.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "main.hpp"
#include "main_state.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "options.hpp"
#include "report.hpp"
#include "world.hpp"

namespace ooc::cli {

void apply_mpi_ranks(const RunCli& r, ooc::JobOptions& jo) {
  World& world = World::get();
  if (!r.part.empty() || !r.rows.empty())
    throw Error(ErrorKind::usage,
                "under mpirun/srun the ranks are the parts: drop --part and "
                "--rows");
  jo.part_index = world.rank();
  jo.part_count = world.size();
  // mpirun binds each rank to one core by default when there are few ranks: the engine's
  // threads would then share that core.
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (world.rank() == 0 && ::sched_getaffinity(0, sizeof mask, &mask) == 0 &&
      CPU_COUNT(&mask) < 4 && cores >= 4 * world.size())
    std::fprintf(stderr,
                 "%s: warning: rank 0 may use %d of the %ld cores (the launcher bound it): "
                 "use mpirun --bind-to none, or srun --cpus-per-task=N\n",
                 program_name(), CPU_COUNT(&mask), cores);
  // One GPU per rank, by its rank on the node, unless --devices names them.
  if (jo.devices == "all") {
    const int gpus = ooc::cuda_device_count();
    if (gpus > 0) jo.devices = std::to_string(world.local_rank() % gpus);
  }
}

}  // namespace ooc::cli
