// Helpers shared by the kernels tests: seeded random arrays and tolerance checks.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace cpuft::testing {

// Float epsilon (2^-23): the unit of the tolerances below.
inline constexpr double kEps = std::numeric_limits<float>::epsilon();

template <typename T>
std::vector<T> random_normal(std::mt19937& rng, std::size_t n, double mean = 0, double sd = 1) {
  std::normal_distribution<double> dist(mean, sd);
  std::vector<T> out(n);
  for (auto& v : out) v = static_cast<T>(dist(rng));
  return out;
}

template <typename T>
std::vector<T> random_uniform(std::mt19937& rng, std::size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> out(n);
  for (auto& v : out) v = static_cast<T>(dist(rng));
  return out;
}

inline std::vector<int32_t> random_ids(std::mt19937& rng, std::size_t n, int32_t count) {
  std::uniform_int_distribution<int32_t> dist(0, count - 1);
  std::vector<int32_t> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

// Expects |got[i] - want[i]| <= tol(i) for all i; reports the first few failures with context.
template <typename Got, typename Want, typename Tol>
void expect_close(const Got& got, const Want& want, Tol tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    const double t = tol(i);
    if (!(std::abs(g - w) <= t)) {  // also fails on NaN
      ++failures;
      ADD_FAILURE() << what << " [" << i << "]: got " << g << ", want " << w << ", |diff| "
                    << std::abs(g - w) << " > tol " << t;
    }
  }
}

// Bitwise equality of two float arrays (NaN payloads included).
inline void expect_bitwise_equal(const std::vector<float>& got, const std::vector<float>& want,
                                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ++failures;
      ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
    }
  }
}

}  // namespace cpuft::testing
