// The processes of one run: this process alone, or the ranks of an MPI job (mpirun, srun) when
// the tools are built with MPI and started by a launcher. Parts, devices, reductions across
// ranks and the one summary of an MPI run go through here; a tool never calls MPI itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ooc/run.hpp"

namespace ooc::cli {

class World : public ooc::ProcessGroup {
 public:
  // MPI starts only under a launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set), so that a
  // plain run never pays for it or depends on it.
  static World& get();
  // Whether get() ran: error paths ask this, so that they never start MPI themselves.
  static bool started() noexcept;
  ~World() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  int local_rank() const noexcept { return local_rank_; }
  bool mpi() const noexcept { return size_ > 1; }
  // MPI_Init was called (under mpirun, one rank included): MPI_Finalize must be too.
  bool mpi_initialized() const noexcept { return initialized_; }

  // Whether every rank got here with ok; a collective, so it also waits for all of them.
  bool all_ok(bool ok) override;
  // Element-wise sums over the ranks, the same on every rank; integers, so the result does not
  // depend on the order ranks are combined in.
  void sum(std::vector<std::uint64_t>& values) override;
  // Every rank's values, on rank 0 (empty elsewhere), rank by rank.
  std::vector<double> gather(const std::vector<double>& mine) override;
  // Ends every rank: a failed rank must not leave the others waiting in a collective.
  [[noreturn]] void abort(int code) override;

 private:
  World();
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool initialized_ = false;
};

// I and N of `--part auto` from the environment: a Slurm array task, an srun task, an OpenMPI or
// MPICH rank. False when none is set.
bool part_from_environment(int& index, int& count, std::string& source);

}  // namespace ooc::cli
