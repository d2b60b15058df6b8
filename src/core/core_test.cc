#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/buffer.h"
#include "core/check.h"
#include "core/rng.h"

namespace cpuft {
namespace {

TEST(Check, RequireThrowsErrorWithMessageOnly) {
  try {
    CPUFT_REQUIRE(1 + 1 == 3, "config.json: field 'x' is ", 7);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "config.json: field 'x' is 7");
  }
}

TEST(Check, CheckNamesFileAndLine) {
  try {
    CPUFT_CHECK(false, "n=", 3);
    FAIL() << "no throw";
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("core_test.cc:"), std::string::npos) << text;
    EXPECT_NE(text.find("n=3"), std::string::npos) << text;
  }
}

TEST(AlignedBuffer, IsAlignedAndZeroed) {
  AlignedBuffer<float> small(17), big(3 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % (2u << 20), 0u);
  for (size_t i = 0; i < big.size(); i += 4099) EXPECT_EQ(big[i], 0.0f);
  big[5] = 1;
  AlignedBuffer<float> moved = std::move(big);
  EXPECT_EQ(moved[5], 1.0f);
  EXPECT_EQ(big.data(), nullptr);
}

// Known-answer test from the Random123 distribution (philox4x32_10, kat_vectors):
// counter = key = 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
TEST(Philox, KnownAnswer) {
  const auto out = philox4x32(RngKey{0, 0}, 0);
  EXPECT_EQ(out[0], 0x6627e8d5u);
  EXPECT_EQ(out[1], 0xe169c58du);
  EXPECT_EQ(out[2], 0xbc57ac4cu);
  EXPECT_EQ(out[3], 0x9b00dbd8u);
}

TEST(Philox, UniformIsInRangeAndRoughlyUniform) {
  RngKey key{42, dropout_stream(3, 2, 0)};
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = uniform_at(key, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(Philox, StreamsDiffer) {
  std::set<uint64_t> streams;
  for (uint64_t step = 0; step < 8; ++step)
    for (uint32_t layer = 0; layer < 24; ++layer)
      for (uint32_t site = 0; site < 4; ++site) streams.insert(dropout_stream(step, layer, site));
  EXPECT_EQ(streams.size(), 8u * 24u * 4u);
}

TEST(Normal, MomentsAreStandard) {
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = normal_at(RngKey{1, 2}, static_cast<uint64_t>(i));
    s += x;
    s2 += x * x;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
}

}  // namespace
}  // namespace cpuft
