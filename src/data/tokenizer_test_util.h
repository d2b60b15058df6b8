// Shared helpers of the tokenizer tests: where the repository and the shared data are.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#ifndef CPUFT_DEFAULT_SOURCE_DIR
#define CPUFT_DEFAULT_SOURCE_DIR "."
#endif

namespace cpuft::testing {

inline std::string source_dir() {
  const char* env = std::getenv("CPUFT_SOURCE_DIR");
  return env && *env ? env : CPUFT_DEFAULT_SOURCE_DIR;
}

// CPUFT_SHARED_DIR, else <source>/../shared. Tests that need it fail (not skip) without it: CI
// has it, so its absence is a broken setup.
inline std::string shared_dir() {
  const char* env = std::getenv("CPUFT_SHARED_DIR");
  return env && *env ? std::string(env) : source_dir() + "/../shared";
}

inline ::testing::AssertionResult shared_data_present() {
  const std::string vocab = shared_dir() + "/data/vocab/bert-base-uncased-vocab.txt";
  if (std::filesystem::exists(vocab)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "shared data not found: " << vocab
         << " is missing; set CPUFT_SHARED_DIR to the folder holding data/ (default "
            "<source>/../shared)";
}

}  // namespace cpuft::testing
