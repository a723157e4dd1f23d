// machine_limits(): the defaults follow the job's cgroup (v1 and v2, the tightest level wins), CPU
// quota and Slurm allocation, read from fake /proc and /sys/fs/cgroup trees and a fake environment;
// and the real affinity mask. default_budget(): the default --mem-limit and where it came from.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "ooc/limits.hpp"

namespace fs = std::filesystem;

namespace ooc {
namespace {

class FakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ooc_limits_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc/self");
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text << "\n";
  }
  // Under `env` alone: the environment of whatever runs the tests (a Slurm job's) is not seen.
  MachineLimits limits(const std::map<std::string, std::string>& env = {}) {
    return machine_limits((root_ / "proc").string(), (root_ / "cg").string(),
                          [&env](const char* name) -> const char* {
                            const auto it = env.find(name);
                            return it == env.end() ? nullptr : it->second.c_str();
                          });
  }
  fs::path root_;
};

std::uint64_t physical() {
  return std::uint64_t(::sysconf(_SC_PHYS_PAGES)) * std::uint64_t(::sysconf(_SC_PAGE_SIZE));
}

TEST_F(FakeTree, V2TightestLevelWins) {
  put("proc/self/cgroup", "0::/job/step");
  put("cg/job/memory.max", "268435456");
  put("cg/job/step/memory.max", "max");
  const MachineLimits m = limits();
  EXPECT_EQ(m.memory, 268435456u);
  EXPECT_NE(m.memory_from.find("job/memory.max"), std::string::npos) << m.memory_from;
}

TEST_F(FakeTree, V2InnerLimitBelowOuter) {
  put("proc/self/cgroup", "0::/job/step");
  put("cg/job/memory.max", "1073741824");
  put("cg/job/step/memory.max", "100000000");
  EXPECT_EQ(limits().memory, 100000000u);
}

TEST_F(FakeTree, V1MemoryController) {
  put("proc/self/cgroup", "5:cpuacct,cpu:/\n4:memory:/slurm/uid_0/job_7\n1:name=systemd:/");
  put("cg/memory/slurm/uid_0/job_7/memory.limit_in_bytes", "536870912");
  put("cg/memory/slurm/memory.limit_in_bytes", "9223372036854771712");  // v1's "no limit"
  const MachineLimits m = limits();
  EXPECT_EQ(m.memory, 536870912u);
  EXPECT_NE(m.memory_from.find("job_7/memory.limit_in_bytes"), std::string::npos);
}

TEST_F(FakeTree, NoLimitIsPhysicalMemory) {
  put("proc/self/cgroup", "0::/");
  put("cg/memory.max", "max");
  const MachineLimits m = limits();
  EXPECT_EQ(m.memory, physical());
  EXPECT_EQ(m.memory_from, "physical memory");
}

TEST_F(FakeTree, LimitAbovePhysicalMemoryIsIgnored) {
  put("proc/self/cgroup", "0::/big");
  put("cg/big/memory.max", std::to_string(physical() * 2));
  EXPECT_EQ(limits().memory, physical());
}

TEST_F(FakeTree, GarbageIsNoLimit) {
  put("proc/self/cgroup", "0::/x");
  put("cg/x/memory.max", "lots");
  EXPECT_EQ(limits().memory, physical());
  put("proc/self/cgroup", "nonsense without colons");
  EXPECT_EQ(limits().memory, physical());
}

TEST_F(FakeTree, CpuQuotaV2AndV1) {
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
  const int allowed = CPU_COUNT(&mask);
  put("proc/self/cgroup", "0::/q");
  put("cg/q/cpu.max", "150000 100000");  // 1.5 cores: 2 threads
  MachineLimits m = limits();
  EXPECT_EQ(m.cpus, std::min(allowed, 2));
  if (allowed > 2) {
    EXPECT_NE(m.cpus_from.find("cpu.max"), std::string::npos) << m.cpus_from;
  }
  put("cg/q/cpu.max", "max 100000");
  EXPECT_EQ(limits().cpus, allowed);
  put("proc/self/cgroup", "3:cpu,cpuacct:/j\n2:memory:/j");
  put("cg/cpu/j/cpu.cfs_quota_us", "100000");
  put("cg/cpu/j/cpu.cfs_period_us", "100000");
  EXPECT_EQ(limits().cpus, 1);
  put("cg/cpu/j/cpu.cfs_quota_us", "-1");
  EXPECT_EQ(limits().cpus, allowed);
  (void)online;
}

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20, kGiB = std::uint64_t{1} << 30;

int affinity_cores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  return ::sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : 0;
}

TEST_F(FakeTree, SlurmMemPerNode) {
  put("proc/self/cgroup", "0::/");
  const MachineLimits m = limits({{"SLURM_MEM_PER_NODE", "2048"}});
  EXPECT_EQ(m.allocation, 2 * kGiB);
  EXPECT_EQ(m.allocation_from, "SLURM_MEM_PER_NODE 2048 MiB");
  const DefaultBudget b = default_budget(m);
  EXPECT_EQ(b.bytes, kGiB);
  EXPECT_EQ(b.from, "half of SLURM_MEM_PER_NODE 2048 MiB");
}

TEST_F(FakeTree, SlurmMemPerCpuTimesTheJobsCores) {
  put("proc/self/cgroup", "0::/");
  // SLURM_CPUS_ON_NODE first, then SLURM_CPUS_PER_TASK, then the affinity mask.
  MachineLimits m = limits(
      {{"SLURM_MEM_PER_CPU", "4096"}, {"SLURM_CPUS_ON_NODE", "8"}, {"SLURM_CPUS_PER_TASK", "2"}});
  EXPECT_EQ(m.allocation, 32 * kGiB);
  EXPECT_EQ(m.allocation_from, "SLURM_MEM_PER_CPU 4096 MiB x 8 cores (SLURM_CPUS_ON_NODE)");
  EXPECT_EQ(default_budget(m).bytes, 16 * kGiB);
  m = limits({{"SLURM_MEM_PER_CPU", "1000"}, {"SLURM_CPUS_PER_TASK", "3"}});
  EXPECT_EQ(m.allocation, 3000 * kMiB);
  EXPECT_EQ(m.allocation_from, "SLURM_MEM_PER_CPU 1000 MiB x 3 cores (SLURM_CPUS_PER_TASK)");
  const int cores = affinity_cores();
  ASSERT_GT(cores, 0);
  m = limits({{"SLURM_MEM_PER_CPU", "512"}});
  EXPECT_EQ(m.allocation, 512 * kMiB * std::uint64_t(cores));
  EXPECT_NE(m.allocation_from.find("(the CPU affinity mask)"), std::string::npos)
      << m.allocation_from;
}

TEST_F(FakeTree, TightestAllocationWins) {
  // A cgroup limit below Slurm's figure (and below physical memory on any machine running this).
  put("proc/self/cgroup", "0::/job/step");
  put("cg/job/memory.max", std::to_string(512 * kMiB));
  MachineLimits m = limits({{"SLURM_MEM_PER_NODE", "4096"}});
  EXPECT_EQ(m.allocation, 512 * kMiB);
  EXPECT_NE(m.allocation_from.find("job/memory.max (512.0 MiB)"), std::string::npos)
      << m.allocation_from;
  DefaultBudget b = default_budget(m);
  EXPECT_EQ(b.bytes, 256 * kMiB);
  EXPECT_EQ(b.from.rfind("half of cgroup limit ", 0), 0u) << b.from;
  // Slurm's below the cgroup's.
  m = limits(
      {{"SLURM_MEM_PER_NODE", "4096"}, {"SLURM_MEM_PER_CPU", "100"}, {"SLURM_CPUS_ON_NODE", "4"}});
  EXPECT_EQ(m.allocation, 400 * kMiB);
  EXPECT_EQ(m.allocation_from, "SLURM_MEM_PER_CPU 100 MiB x 4 cores (SLURM_CPUS_ON_NODE)");
  EXPECT_EQ(m.memory, 512 * kMiB);  // what the cgroup enforces is still the memory limit
}

TEST_F(FakeTree, NodeAllocationSharedByTheStepsTasks) {
  put("proc/self/cgroup", "0::/");
  MachineLimits m =
      limits({{"SLURM_MEM_PER_NODE", "16384"}, {"SLURM_STEP_TASKS_PER_NODE", "4(x2),2"}});
  EXPECT_EQ(m.allocation, 4 * kGiB);
  EXPECT_EQ(m.allocation_from,
            "SLURM_MEM_PER_NODE 16384 MiB / 4 tasks on the node (SLURM_STEP_TASKS_PER_NODE)");
  m = limits({{"SLURM_MEM_PER_NODE", "16384"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}});
  EXPECT_EQ(m.allocation, 2 * kGiB);
  // A task's own cores are its share already.
  m = limits({{"SLURM_MEM_PER_CPU", "1024"},
              {"SLURM_CPUS_PER_TASK", "3"},
              {"SLURM_STEP_TASKS_PER_NODE", "8"}});
  EXPECT_EQ(m.allocation, 3 * kGiB);
}

TEST_F(FakeTree, NothingKnownIsTheWorkstationRule) {
  put("proc/self/cgroup", "0::/");
  put("cg/memory.max", "max");
  // Variables that are not whole numbers of MiB, or zero (--mem=0: the whole node), say nothing.
  const MachineLimits m = limits(
      {{"SLURM_MEM_PER_NODE", "4G"}, {"SLURM_MEM_PER_CPU", "0"}, {"SLURM_CPUS_ON_NODE", "-3"}});
  EXPECT_EQ(m.allocation, 0u);
  const DefaultBudget b = default_budget(m);
  EXPECT_EQ(b.bytes, std::min<std::uint64_t>(kGiB, physical() / 4));
  EXPECT_EQ(b.from.rfind("the smaller of 1 GiB and a quarter of ", 0), 0u) << b.from;
  EXPECT_NE(b.from.find("(physical memory), no allocation known"), std::string::npos) << b.from;
}

TEST(DefaultBudget, Bounds) {
  MachineLimits m;
  m.memory = 512 * kGiB;
  m.allocation_from = "X";
  const auto bytes = [&](std::uint64_t allocation) {
    m.allocation = allocation;
    return std::uint64_t(default_budget(m).bytes);
  };
  EXPECT_EQ(bytes(200 * kGiB), 64 * kGiB);  // at most 64 GiB
  EXPECT_EQ(default_budget(m).from, "64 GiB, the most a default takes (half of X is more)");
  EXPECT_EQ(bytes(128 * kGiB), 64 * kGiB);
  EXPECT_EQ(bytes(1 * kGiB), 512 * kMiB);    // half
  EXPECT_EQ(bytes(200 * kMiB), 100 * kMiB);  // no floor: more than half risks the OOM killer
  EXPECT_EQ(default_budget(m).from, "half of X");
  m.allocation = 0;
  m.memory = 0;
  EXPECT_EQ(default_budget(m).bytes, kGiB);
  m.memory = 2 * kGiB;
  EXPECT_EQ(default_budget(m).bytes, 512 * kMiB);
  m.memory = 64 * kGiB;
  EXPECT_EQ(default_budget(m).bytes, kGiB);
}

TEST(MachineLimits, AffinityMaskOfThisProcess) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
  EXPECT_LE(machine_limits().cpus, CPU_COUNT(&mask));
  EXPECT_GE(default_threads(), 1);
  EXPECT_LE(default_mem_limit(), std::size_t{64} << 30);
  EXPECT_EQ(default_mem_limit(), default_budget().bytes);
  EXPECT_FALSE(default_budget().from.empty());
}

}  // namespace
}  // namespace ooc
