// MPI behind World (see world.hpp); without MPI in the build, a world of one process.
#include "world.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/staging.hpp"
#include "ooc/error.hpp"

#if defined(OOC_HAVE_MPI)
#include <mpi.h>
#endif

namespace ooc::cli {
namespace {

using ooc::Error;
using ooc::ErrorKind;

// The most parts a run can have: --part I/N takes the same limit.
constexpr long long kMaxParts = 1 << 20;

// A whole number from the environment, checked: a launcher's variable that is set but not a
// number (or out of range) must stop the run, not quietly make it one part of one.
enum class Env { unset, ok };
Env env_number(const char* name, long long& v) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return Env::unset;
  char* end = nullptr;
  errno = 0;
  v = std::strtoll(s, &end, 10);
  const bool huge = errno == ERANGE;
  // Digits only (strtoll would also take blanks and a sign), and within 64 bits.
  if (*s < '0' || *s > '9' || *end != '\0' || huge)
    throw Error(ErrorKind::usage,
                std::string("--part auto: ") + name + "='" + s + "' is " +
                    (huge ? "too large for 64 bits" : "not a whole number of 0 or more") +
                    ": fix or unset it, or give --part I/N");
  return Env::ok;
}

std::string env_value(const char* name, long long v) {
  return std::string(name) + "=" + std::to_string(v);
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
  long long id = 0, n = 0, lo = 0, hi = 0;
  const auto usage = [](const std::string& what) {
    return Error(ErrorKind::usage, "--part auto: " + what);
  };
  // An array task is named by SLURM_ARRAY_TASK_ID alone: once it is set, the part comes from
  // the array or not at all (srun's SLURM_PROCID=0 of 1 would run the whole image).
  if (env_number("SLURM_ARRAY_TASK_ID", id) == Env::ok) {
    if (env_number("SLURM_ARRAY_TASK_COUNT", n) == Env::unset)
      throw usage(env_value("SLURM_ARRAY_TASK_ID", id) +
                  " is set but SLURM_ARRAY_TASK_COUNT is not: give --part I/N");
    if (n < 1 || n > kMaxParts)
      throw usage(env_value("SLURM_ARRAY_TASK_COUNT", n) + " is not a number of parts from 1 to " +
                  std::to_string(kMaxParts) + ": submit a smaller --array, or give --part I/N");
    const std::string min_text = env_number("SLURM_ARRAY_TASK_MIN", lo) == Env::ok
                                     ? env_value("SLURM_ARRAY_TASK_MIN", lo)
                                     : std::string("0 (SLURM_ARRAY_TASK_MIN unset)");
    // Parts are task id - min: only an array of consecutive ids (--array=0-7, 3-10) numbers
    // them all, once each.
    if (env_number("SLURM_ARRAY_TASK_MAX", hi) == Env::ok && hi - lo != n - 1)
      throw usage("the array's task ids " + min_text + " to " +
                  env_value("SLURM_ARRAY_TASK_MAX", hi) + " are not " +
                  env_value("SLURM_ARRAY_TASK_COUNT", n) + " consecutive ids: submit --array=0-" +
                  std::to_string(n - 1) + ", or give --part I/N");
    if (id < lo || id - lo >= n)
      throw usage(env_value("SLURM_ARRAY_TASK_ID", id) + " is not one of the ids from " + min_text +
                  " to " + std::to_string(static_cast<unsigned long long>(lo) + (n - 1)) + " (" +
                  env_value("SLURM_ARRAY_TASK_COUNT", n) + "): submit --array=0-" +
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
  for (const auto& l : launchers) {
    // Both checked before either is used: a garbled one of the pair is an error, not a skip.
    const bool has_rank = env_number(l.rank, id) == Env::ok;
    const bool has_size = env_number(l.size, n) == Env::ok;
    if (!has_rank || !has_size) continue;
    if (n < 1 || n > kMaxParts)
      throw usage(env_value(l.size, n) + " is not a number of parts from 1 to " +
                  std::to_string(kMaxParts) + ": give --part I/N");
    if (id >= n)
      throw usage(env_value(l.rank, id) + " is not below " + env_value(l.size, n) +
                  ": give --part I/N");
    index = static_cast<int>(id);
    count = static_cast<int>(n);
    source = std::string(l.what) + " " + std::to_string(id);
    return true;
  }
  return false;
}

}  // namespace ooc::cli
