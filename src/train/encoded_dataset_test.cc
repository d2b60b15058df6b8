#include "train/encoded_dataset.h"

#include <gtest/gtest.h>

#include <vector>

namespace cpuft {
namespace {

EncodedDataset of_lengths(const std::vector<int>& lengths) {
  EncodedDataset d;
  for (int n : lengths) {
    d.input_ids.insert(d.input_ids.end(), static_cast<size_t>(n), 1);
    d.token_type_ids.insert(d.token_type_ids.end(), static_cast<size_t>(n), 0);
    d.offsets.push_back(static_cast<int64_t>(d.input_ids.size()));
  }
  return d;
}

// The model is sized by the most tokens a batch can hold: the sum of the batch's size of longest
// examples, never the batch size times the longest (trainer.cc, step 4).
TEST(EncodedDataset, LongestTokensSumsTheLongestExamples) {
  const EncodedDataset d = of_lengths({5, 9, 2, 9, 7, 1});
  EXPECT_EQ(d.longest_tokens(0), 0);
  EXPECT_EQ(d.longest_tokens(1), 9);
  EXPECT_EQ(d.longest_tokens(3), 9 + 9 + 7);
  EXPECT_EQ(d.longest_tokens(6), 33);
  EXPECT_EQ(d.longest_tokens(100), 33);
  EXPECT_EQ(d.max_length(), 9);
}

}  // namespace
}  // namespace cpuft
