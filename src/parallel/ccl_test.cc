// The oneCCL communicator inside one process (built only with oneCCL). Multi-rank behaviour is
// tested under mpirun and tests/parallel/torchrun_style.sh (ctest -L dist).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "parallel/communicator.h"
#include "parallel/factory_error_for_tests.h"
#include "parallel/launcher.h"

namespace cpuft {
namespace {

// One process, a world of one: oneCCL starts (its own KVS, no launcher) and every collective
// leaves the data as it was.
TEST(MakeCommunicator, CclWorldOfOne) {
  auto comm = make_communicator("ccl", LaunchInfo{});
  EXPECT_EQ(comm->name(), "ccl");
  EXPECT_EQ(comm->world_size(), 1);
  std::vector<float> data = {1.5f, -2.0f, 3.25f};
  comm->wait(comm->all_reduce_sum_async(data.data(), 3, OpContext{0, 1}));
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(comm->all_gather_string("abc"), std::vector<std::string>{"abc"});
  int value = 7;
  comm->broadcast(&value, sizeof(value), 0);
  EXPECT_EQ(value, 7);
  comm->barrier();
}

TEST(MakeCommunicator, CclUnderTorchrunNeedsMasterAddress) {
  LaunchInfo launch;
  launch.launcher = "torchrun";
  launch.rank = 1;
  launch.world_size = 2;
  launch.local_rank = 1;
  launch.local_size = 2;
  EXPECT_NE(factory_error("ccl", launch).find("needs MASTER_ADDR and MASTER_PORT"),
            std::string::npos);
}

}  // namespace
}  // namespace cpuft
