// MPI behind World (see world.hpp); without MPI in the build, a world of one process.
#include "world.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../pipeline/staging.hpp"
#include "ooc/error.hpp"

#if defined(OOC_HAVE_MPI)
#include <mpi.h>
#endif

namespace ooc::cli {
namespace {

using ooc::Error;
using ooc::ErrorKind;

bool env_int(const char* name, long& v) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  v = std::strtol(s, &end, 10);
  return *end == '\0';
}

}  // namespace

namespace {
bool g_started = false;
}

World& World::get() {
  static World world;
  g_started = true;
  return world;
}

bool World::started() noexcept {
  return g_started;
}

World::World() {
#if defined(OOC_HAVE_MPI)
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr &&
      std::getenv("PMIX_RANK") == nullptr)
    return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  initialized_ = true;
  // MPI_Finalize runs at exit: every thread must be joined before it (see guarded_main).
  detail::set_background_may_outlive(false);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // The node-local rank picks the GPU: ranks that share a node share its devices.
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_free(&local);
#endif
}

World::~World() {
#if defined(OOC_HAVE_MPI)
  if (initialized_) MPI_Finalize();
#endif
}

bool World::all_ok(bool ok) {
#if defined(OOC_HAVE_MPI)
  if (initialized_) {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all == 1;
  }
#endif
  return ok;
}

void World::sum(std::vector<std::uint64_t>& values) {
#if defined(OOC_HAVE_MPI)
  if (initialized_ && size_ > 1)
    MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T,
                  MPI_SUM, MPI_COMM_WORLD);
#else
  (void)values;
#endif
}

std::vector<double> World::gather(const std::vector<double>& mine) {
#if defined(OOC_HAVE_MPI)
  if (initialized_ && size_ > 1) {
    std::vector<double> all(rank_ == 0 ? mine.size() * static_cast<std::size_t>(size_) : 0);
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
               static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return all;
  }
#endif
  return mine;
}

void World::abort(int code) {
#if defined(OOC_HAVE_MPI)
  if (initialized_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

bool part_from_environment(int& index, int& count, std::string& source) {
  long id = 0, n = 0, lo = 0, hi = 0;
  if (env_int("SLURM_ARRAY_TASK_ID", id) && env_int("SLURM_ARRAY_TASK_COUNT", n)) {
    if (!env_int("SLURM_ARRAY_TASK_MIN", lo)) lo = 0;
    // Parts are task id - min: only an array of consecutive ids (--array=0-7, 3-10) numbers
    // them all, once each.
    if (env_int("SLURM_ARRAY_TASK_MAX", hi) && hi - lo + 1 != n)
      throw Error(ErrorKind::usage, "--part auto: the array's task ids " + std::to_string(lo) +
                                        ".." + std::to_string(hi) + " are not " +
                                        std::to_string(n) + " consecutive ids: submit --array=0-" +
                                        std::to_string(n - 1) + ", or give --part I/N");
    index = static_cast<int>(id - lo);
    count = static_cast<int>(n);
    source = "Slurm array task " + std::to_string(id);
    return true;
  }
  const struct {
    const char *rank, *size, *what;
  } launchers[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OpenMPI rank"},
                   {"PMI_RANK", "PMI_SIZE", "PMI rank"},
                   {"SLURM_PROCID", "SLURM_NTASKS", "srun task"}};
  for (const auto& l : launchers)
    if (env_int(l.rank, id) && env_int(l.size, n)) {
      index = static_cast<int>(id);
      count = static_cast<int>(n);
      source = std::string(l.what) + " " + std::to_string(id);
      return true;
    }
  return false;
}

}  // namespace ooc::cli
