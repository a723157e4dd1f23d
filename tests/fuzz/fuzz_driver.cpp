// A main for a fuzz target where libFuzzer is not linked (gcc builds, CI): runs the target on the
// files named (a corpus, the regressions) and on N random inputs of a fixed seed, so that the
// release suite checks the target's oracle and the sanitize preset runs it under ASan and UBSan.
//   fuzz_pipeline_run [--random N] [--seed S] [FILE...]
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  long random = 0;
  unsigned long seed = 1;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--random" && i + 1 < argc) {
      random = std::atol(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoul(argv[++i], nullptr, 10);
    } else {
      files.push_back(a);
    }
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read '%s'\n", f.c_str());
      return 2;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::mt19937_64 rng(seed);
  for (long n = 0; n < random; ++n) {
    std::vector<std::uint8_t> bytes(16 + rng() % 512);
    for (auto& x : bytes) x = static_cast<std::uint8_t>(rng());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("%zu files and %ld random inputs ran\n", files.size(), random);
  return 0;
}
