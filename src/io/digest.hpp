// A 64-bit FNV-1a digest: the checksums of journals and the exact values (taps, kernels, border
// values) in the options fingerprint. It catches edits and mix-ups, not adversaries.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ooc::detail {

class Digest {
 public:
  Digest& add(const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
    return *this;
  }
  Digest& add(std::string_view s) noexcept { return add(s.data(), s.size()); }
  // Doubles by their bits: 0.1 and 0.10000000000000002 differ, -0 and 0 too.
  Digest& add(double v) noexcept { return add(&v, sizeof v); }
  Digest& add(const std::vector<double>& v) noexcept {
    const std::uint64_t n = v.size();
    add(&n, sizeof n);
    return add(v.data(), v.size() * sizeof(double));
  }
  std::string hex() const {
    char s[17];
    std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(h_));
    return s;
  }

 private:
  std::uint64_t h_ = 14695981039346656037ull;
};

}  // namespace ooc::detail
