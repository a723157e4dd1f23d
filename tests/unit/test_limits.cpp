// machine_limits(): the defaults follow the job's cgroup (v1 and v2, the tightest level wins) and
// CPU quota, read from fake /proc and /sys/fs/cgroup trees; and the real affinity mask.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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
  MachineLimits limits() {
    return machine_limits((root_ / "proc").string(), (root_ / "cg").string());
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

TEST(MachineLimits, AffinityMaskOfThisProcess) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
  EXPECT_LE(machine_limits().cpus, CPU_COUNT(&mask));
  EXPECT_GE(default_threads(), 1);
  EXPECT_LE(default_mem_limit(), std::size_t{1} << 30);
}

}  // namespace
}  // namespace ooc
