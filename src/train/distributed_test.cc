// start_distributed's defaults that do not need a launcher (the launched paths are the dist tests:
// tests/parallel).
#include "train/distributed.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "core/scoped_env.h"

namespace cpuft {
namespace {

// oneCCL's worker thread only where the rank leaves a core without a compute thread, and never
// against the user's own setting.
TEST(Distributed, OneCclWorkerOnlyWhereACoreIsFree) {
  const ScopedEnv restore("CCL_WORKER_OFFLOAD", std::nullopt);  // the user's own value comes back
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
}

}  // namespace
}  // namespace cpuft
