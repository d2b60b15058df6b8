// start_distributed's defaults that do not need a launcher (the launched paths are the dist tests:
// tests/parallel).
#include "train/distributed.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace cpuft {
namespace {

// oneCCL's worker thread only where the rank leaves a core without a compute thread, and never
// against the user's own setting.
TEST(Distributed, OneCclWorkerOnlyWhereACoreIsFree) {
  const char* saved = std::getenv("CCL_WORKER_OFFLOAD");
  const bool was_set = saved != nullptr;
  char before[64] = {};
  if (was_set) std::snprintf(before, sizeof before, "%s", saved);
  auto offload_after = [](int threads, size_t cores) -> const char* {
    default_ccl_worker_offload(threads, cores);
    const char* v = std::getenv("CCL_WORKER_OFFLOAD");
    return v != nullptr ? v : "unset";
  };
  unsetenv("CCL_WORKER_OFFLOAD");
  EXPECT_STREQ(offload_after(1, 1), "0");
  unsetenv("CCL_WORKER_OFFLOAD");
  EXPECT_STREQ(offload_after(32, 32), "0");
  unsetenv("CCL_WORKER_OFFLOAD");
  EXPECT_STREQ(offload_after(31, 32), "unset");  // a core left for the worker
  setenv("CCL_WORKER_OFFLOAD", "1", 1);
  EXPECT_STREQ(offload_after(1, 1), "1");  // the user's choice stands
  if (was_set) {
    setenv("CCL_WORKER_OFFLOAD", before, 1);
  } else {
    unsetenv("CCL_WORKER_OFFLOAD");
  }
}

}  // namespace
}  // namespace cpuft
