// Unit tests of src/parallel that need no second process: launcher detection, bucket plans, the
// gradient reducer over a fake communicator, the timeline and the backend factory's refusals.
// Multi-process tests (mpirun) live in tests/parallel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/step_timeline.h"
#include "parallel/bucket_plan.h"
#include "parallel/communicator.h"
#include "parallel/exchange_forecast.h"
#include "parallel/factory_error_for_tests.h"
#include "parallel/grad_reducer.h"
#include "parallel/launcher.h"
#include "parallel/link_probe.h"

namespace cpuft {
namespace {

using Env = std::map<std::string, std::string>;

std::string error_of(const Env& env) {
  try {
    detect_launch(env);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_LAUNCH_ERROR(env, text) \
  EXPECT_NE(error_of(env).find(text), std::string::npos) << "message: " << error_of(env)

void expect_launch(const LaunchInfo& info, const std::string& launcher, int rank, int world,
                   int local_rank, int local_size) {
  EXPECT_EQ(info.launcher, launcher);
  EXPECT_EQ(info.rank, rank);
  EXPECT_EQ(info.world_size, world);
  EXPECT_EQ(info.local_rank, local_rank);
  EXPECT_EQ(info.local_size, local_size);
}

TEST(Launcher, NothingSetIsASingleProcess) {
  const LaunchInfo info = detect_launch({{"HOME", "/root"}, {"RANK", ""}});
  expect_launch(info, "none", 0, 1, 0, 1);
  EXPECT_FALSE(info.launched());
}

TEST(Launcher, OpenMpi) {
  expect_launch(detect_launch({{"OMPI_COMM_WORLD_RANK", "3"},
                               {"OMPI_COMM_WORLD_SIZE", "8"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
                "openmpi", 3, 8, 1, 2);
}

TEST(Launcher, OpenMpiSingleRankNeedsNoLocalRank) {
  expect_launch(detect_launch({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}}),
                "openmpi", 0, 1, 0, 1);
}

TEST(Launcher, Hydra) {
  expect_launch(detect_launch({{"PMI_RANK", "2"},
                               {"PMI_SIZE", "4"},
                               {"MPI_LOCALRANKID", "0"},
                               {"MPI_LOCALNRANKS", "2"}}),
                "hydra", 2, 4, 0, 2);
}

TEST(Launcher, SlurmWithTasksPerNodeList) {
  const Env base = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"}};
  Env env = base;
  env["SLURM_NTASKS_PER_NODE"] = "2";
  expect_launch(detect_launch(env), "slurm", 5, 6, 1, 2);
  env = base;
  env["SLURM_TASKS_PER_NODE"] = "4,2";
  env["SLURM_NODEID"] = "1";
  expect_launch(detect_launch(env), "slurm", 5, 6, 1, 2);
  env = base;
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  expect_launch(detect_launch(env), "slurm", 5, 6, 1, 2);
}

TEST(Launcher, SrunPmi2RankBelongsToSlurm) {
  expect_launch(detect_launch({{"SLURM_PROCID", "1"},
                               {"SLURM_NTASKS", "2"},
                               {"SLURM_LOCALID", "1"},
                               {"SLURM_NTASKS_PER_NODE", "2"},
                               {"PMI_RANK", "1"}}),
                "slurm", 1, 2, 1, 2);
}

TEST(Launcher, TorchrunStyle) {
  const LaunchInfo info = detect_launch({{"RANK", "1"},
                                         {"WORLD_SIZE", "2"},
                                         {"LOCAL_RANK", "1"},
                                         {"LOCAL_WORLD_SIZE", "2"},
                                         {"MASTER_ADDR", "198.18.0.1"},
                                         {"MASTER_PORT", "29500"}});
  expect_launch(info, "torchrun", 1, 2, 1, 2);
  EXPECT_EQ(info.master_addr, "198.18.0.1");
  EXPECT_EQ(info.master_port, 29500);
}

// mpirun inside an sbatch allocation: every rank inherits the batch step's SLURM_PROCID=0 and the
// allocation's SLURM_NTASKS. Open MPI's values are the true ones; no false alarm.
TEST(Launcher, MpirunInsideSlurmAllocationUsesMpirun) {
  expect_launch(detect_launch({{"OMPI_COMM_WORLD_RANK", "1"},
                               {"OMPI_COMM_WORLD_SIZE", "2"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                               {"SLURM_PROCID", "0"},
                               {"SLURM_NTASKS", "4"},
                               {"SLURM_LOCALID", "0"}}),
                "openmpi", 1, 2, 1, 2);
}

// Hydra started by srun without its own local variables: the local rank comes from Slurm, which
// agrees on rank and size (never from the global rank).
TEST(Launcher, LocalRankBorrowedOnlyFromAnAgreeingLauncher) {
  expect_launch(detect_launch({{"PMI_RANK", "3"},
                               {"PMI_SIZE", "4"},
                               {"SLURM_PROCID", "3"},
                               {"SLURM_NTASKS", "4"},
                               {"SLURM_LOCALID", "1"},
                               {"SLURM_NTASKS_PER_NODE", "2"}}),
                "hydra", 3, 4, 1, 2);
  EXPECT_LAUNCH_ERROR((Env{{"PMI_RANK", "3"},
                           {"PMI_SIZE", "4"},
                           {"SLURM_PROCID", "0"},
                           {"SLURM_NTASKS", "1"},
                           {"SLURM_LOCALID", "0"},
                           {"SLURM_NTASKS_PER_NODE", "1"}}),
                      "no local rank");
}

TEST(Launcher, RefusesPartialVariables) {
  EXPECT_LAUNCH_ERROR((Env{{"RANK", "0"}}), "RANK is set but WORLD_SIZE is not");
  EXPECT_LAUNCH_ERROR((Env{{"WORLD_SIZE", "2"}}), "WORLD_SIZE is set but RANK is not");
  EXPECT_LAUNCH_ERROR((Env{{"LOCAL_RANK", "0"}}), "LOCAL_RANK is set but RANK is not");
  EXPECT_LAUNCH_ERROR((Env{{"OMPI_COMM_WORLD_RANK", "1"}}),
                      "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  EXPECT_LAUNCH_ERROR((Env{{"PMI_SIZE", "2"}}), "PMI_SIZE is set but PMI_RANK is not");
  EXPECT_LAUNCH_ERROR((Env{{"SLURM_PROCID", "0"}}), "SLURM_PROCID is set but SLURM_NTASKS");
  EXPECT_LAUNCH_ERROR(
      (Env{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}}),
      "MASTER_ADDR is not");
}

TEST(Launcher, RefusesMissingLocalRank) {
  EXPECT_LAUNCH_ERROR((Env{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                      "does not guess it from the global rank");
  EXPECT_LAUNCH_ERROR((Env{{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}), "no local rank");
  EXPECT_LAUNCH_ERROR((Env{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}), "no local rank");
  EXPECT_LAUNCH_ERROR(
      (Env{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}),
      "no local rank");
  EXPECT_LAUNCH_ERROR((Env{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "1"}}),
                      "number of processes on this host is not set");
}

TEST(Launcher, RefusesDisagreement) {
  EXPECT_LAUNCH_ERROR((Env{{"OMPI_COMM_WORLD_RANK", "1"},
                           {"OMPI_COMM_WORLD_SIZE", "2"},
                           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                           {"RANK", "0"},
                           {"WORLD_SIZE", "2"}}),
                      "launchers disagree: openmpi says rank 1 of 2");
  EXPECT_LAUNCH_ERROR((Env{{"OMPI_COMM_WORLD_RANK", "0"},
                           {"OMPI_COMM_WORLD_SIZE", "2"},
                           {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                           {"PMI_RANK", "0"},
                           {"PMI_SIZE", "4"}}),
                      "but hydra says rank 0 of 4");
  EXPECT_LAUNCH_ERROR((Env{{"SLURM_PROCID", "1"},
                           {"SLURM_NTASKS", "2"},
                           {"SLURM_LOCALID", "1"},
                           {"SLURM_NTASKS_PER_NODE", "2"},
                           {"PMI_RANK", "0"}}),
                      "PMI_RANK=0 but SLURM_PROCID=1");
}

TEST(Launcher, RefusesBadNumbers) {
  EXPECT_LAUNCH_ERROR((Env{{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
                      "RANK=2 is not below WORLD_SIZE=2");
  EXPECT_LAUNCH_ERROR((Env{{"RANK", "one"}, {"WORLD_SIZE", "2"}}), "RANK='one'");
  EXPECT_LAUNCH_ERROR((Env{{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), "RANK='-1'");
  EXPECT_LAUNCH_ERROR((Env{{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}}), "PMI_SIZE=0");
  EXPECT_LAUNCH_ERROR((Env{{"OMPI_COMM_WORLD_RANK", "0"},
                           {"OMPI_COMM_WORLD_SIZE", "2"},
                           {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
                      "local rank 2 is not below the local size 2");
  EXPECT_LAUNCH_ERROR((Env{{"SLURM_PROCID", "0"},
                           {"SLURM_NTASKS", "4"},
                           {"SLURM_LOCALID", "0"},
                           {"SLURM_TASKS_PER_NODE", "3,1"}}),
                      "SLURM_NODEID is not set");
}

// ---- Backend factory refusals (no MPI needed) ----

TEST(MakeCommunicator, AutoWithoutLauncherIsSingle) {
  auto comm = make_communicator("auto", LaunchInfo{});
  EXPECT_EQ(comm->name(), "single");
  EXPECT_EQ(comm->world_size(), 1);
}

TEST(MakeCommunicator, RefusesSingleUnderAMultiProcessLaunch) {
  LaunchInfo launch;
  launch.launcher = "openmpi";
  launch.world_size = 2;
  launch.local_size = 2;
  EXPECT_NE(factory_error("single", launch).find("each would train its own model"),
            std::string::npos);
}

TEST(MakeCommunicator, UnknownBackendIsRefused) {
  EXPECT_NE(factory_error("nccl", LaunchInfo{}).find("'nccl' is not one of"), std::string::npos);
}

TEST(MakeCommunicator, CclInABuildWithoutOneCclIsRefused) {
  if (ccl_available()) GTEST_SKIP() << "this build has oneCCL";
  EXPECT_NE(factory_error("ccl", LaunchInfo{}).find("built without oneCCL"), std::string::npos);
}

// ---- BucketPlan ----

// A BERT-like layout in floats: embeddings, L layers, pooler, classifier, each aligned to 16
// floats, listed in backward order.
std::vector<LayerRange> synthetic_ranges(int layers, int64_t embed, int64_t layer, int64_t pooler,
                                         int64_t classifier) {
  std::vector<LayerRange> forward;
  int64_t cursor = 0;
  auto add = [&](int id, int64_t n) {
    cursor = (cursor + 15) / 16 * 16;
    forward.push_back({id, cursor, cursor + n});
    cursor += n;
  };
  add(-1, embed);
  for (int l = 0; l < layers; ++l) add(l, layer);
  add(layers, pooler);
  add(layers + 1, classifier);
  return {forward.rbegin(), forward.rend()};
}

TEST(BucketPlan, BertBaseShapeGivesOneLayerPerBucket) {
  // BERT-base: layer ≈ 7.08M floats (28 MB), pooler 590k floats (2.4 MB), classifier 1.5k.
  const auto ranges = synthetic_ranges(12, 23837184, 7087872, 590592, 1538);
  const BucketPlan plan(ranges);  // 25 MB cap, 1 MB first bucket
  ASSERT_EQ(plan.num_buckets(), 14);
  EXPECT_EQ(plan.buckets()[0].layers, (std::vector<int>{13, 12}));  // classifier + pooler
  for (int b = 1; b <= 12; ++b) EXPECT_EQ(plan.buckets()[b].layers, (std::vector<int>{12 - b}));
  EXPECT_EQ(plan.buckets()[13].layers, (std::vector<int>{-1}));  // embeddings last
  EXPECT_EQ(plan.bucket_of(-1), 13);
  EXPECT_EQ(plan.bucket_of(5), 7);
}

TEST(BucketPlan, BucketsAreContiguousAndCoverEveryLayer) {
  const auto ranges = synthetic_ranges(6, 1000, 301, 77, 5);
  const BucketPlan plan(ranges, 700 * 4, 50 * 4);
  std::vector<int> seen;
  for (size_t b = 0; b < plan.buckets().size(); ++b) {
    const Bucket& bucket = plan.buckets()[b];
    // The first layer's end is the bucket's end, the last layer's begin its begin.
    int64_t begin = bucket.end;
    for (int layer : bucket.layers) {
      const LayerRange& r = ranges[seen.size()];
      ASSERT_EQ(r.layer, layer);
      EXPECT_LE(r.end, begin) << "layers inside a bucket walk down the buffer";
      begin = r.begin;
      seen.push_back(layer);
    }
    EXPECT_EQ(bucket.begin, begin);
    EXPECT_EQ(bucket.end, ranges[seen.size() - bucket.layers.size()].end);
    if (b > 0) {
      EXPECT_LE(bucket.end, plan.buckets()[b - 1].begin);
    }
  }
  EXPECT_EQ(seen.size(), ranges.size());
  // Greedy rule: classifier (5) + pooler (77) reach the 50-float first cap; then layers of 301
  // floats (+ 11 padding) close at >= 700 floats: 3 layers per bucket.
  ASSERT_EQ(plan.num_buckets(), 4);
  EXPECT_EQ(plan.buckets()[0].layers, (std::vector<int>{7, 6}));
  EXPECT_EQ(plan.buckets()[1].layers, (std::vector<int>{5, 4, 3}));
  EXPECT_EQ(plan.buckets()[2].layers, (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(plan.buckets()[3].layers, (std::vector<int>{-1}));
}

TEST(BucketPlan, HugeCapGivesOneBucketAfterTheFirst) {
  const BucketPlan plan(synthetic_ranges(4, 100, 50, 20, 3), int64_t{1} << 40, 1);
  ASSERT_EQ(plan.num_buckets(), 2);
  EXPECT_EQ(plan.buckets()[0].layers, (std::vector<int>{5}));
  EXPECT_EQ(plan.buckets()[1].layers.size(), 6u);  // pooler, 4 layers, embeddings
  EXPECT_EQ(plan.buckets()[1].begin, 0);
}

TEST(BucketPlan, RefusesBadRanges) {
  auto error = [](std::vector<LayerRange> ranges) -> std::string {
    try {
      BucketPlan plan(std::move(ranges));
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error({}).find("no layers"), std::string::npos);
  EXPECT_NE(error({{1, 10, 10}}).find("empty or inverted"), std::string::npos);
  EXPECT_NE(error({{0, 0, 10}, {1, 10, 20}}).find("not below layer 0"), std::string::npos);
  EXPECT_NE(error({{1, 10, 20}, {0, 5, 12}}).find("not below"), std::string::npos);
  EXPECT_NE(error({{1, 10, 20}, {1, 0, 10}}).find("appears twice"), std::string::npos);
}

// ---- GradReducer ----

// Records every call; "reduces" by multiplying by world_size (as if every rank held the same
// gradients), completing an operation only when the test allows it.
class FakeCommunicator final : public Communicator {
 public:
  explicit FakeCommunicator(int world) : Communicator(0, world) {}
  struct Op {
    float* data;  // nullptr for a bf16 all-reduce
    int64_t n;
    OpContext context;
    bool done = false;
    bf16* half = nullptr;
  };
  std::vector<Op> ops;
  bool complete_on_test = false;
  int tests = 0, waits = 0;

  Handle all_reduce_sum_async(float* data, int64_t n, const OpContext& context) override {
    ops.push_back({data, n, context});
    return Handle{static_cast<int32_t>(ops.size() - 1), 1};
  }
  Handle all_reduce_sum_bf16_async(bf16* data, int64_t n, const OpContext& context) override {
    ops.push_back({nullptr, n, context, false, data});
    return Handle{static_cast<int32_t>(ops.size() - 1), 1};
  }
  bool test(Handle h) override {
    ++tests;
    Op& op = ops.at(static_cast<size_t>(h.slot));
    EXPECT_FALSE(op.done) << "handle used after completion";
    if (complete_on_test) finish_op(op);
    return op.done;
  }
  void wait(Handle h) override {
    ++waits;
    Op& op = ops.at(static_cast<size_t>(h.slot));
    EXPECT_FALSE(op.done) << "handle used after completion";
    finish_op(op);
  }
  void broadcast(void*, int64_t, int) override {}
  void barrier() override {}
  std::vector<std::string> all_gather_string(const std::string& v) override { return {v}; }
  std::string name() const override { return "fake"; }
  void abort(int code) override { std::exit(code); }

 private:
  void finish_op(Op& op) {
    const auto world = static_cast<float>(world_size());
    for (int64_t i = 0; i < op.n; ++i) {
      if (op.half != nullptr)
        op.half[i] = round_to_bf16(to_float(op.half[i]) * world);
      else
        op.data[i] *= world;
    }
    op.done = true;
  }
};

struct ReducerFixture {
  std::vector<LayerRange> ranges = synthetic_ranges(4, 64, 40, 20, 3);
  BucketPlan plan{ranges, 80 * 4, 10 * 4};
  std::vector<float> grads;
  ReducerFixture() {
    grads.resize(static_cast<size_t>(ranges.front().end));
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.5f + static_cast<float>(i % 7);
  }
};

TEST(GradReducer, SingleProcessIsANoOp) {
  ReducerFixture f;
  const std::vector<float> before = f.grads;
  SingleProcessCommunicator comm;
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  reducer.set_sparse_rows({8, 7, 8});  // both no-ops with one rank
  reducer.set_bf16_exchange(true);
  EXPECT_FALSE(reducer.bf16_exchange());
  for (int step = 0; step < 2; ++step) {
    for (const LayerRange& r : f.ranges) reducer.layer_ready(r.layer);
    reducer.finish();
    EXPECT_EQ(f.grads, before);
    EXPECT_EQ(reducer.last_stats().step, step);
    EXPECT_EQ(reducer.last_stats().comm_seconds, 0.0);
  }
}

TEST(GradReducer, LaunchesInPlanOrderAsSoonAsABucketIsComplete) {
  ReducerFixture f;
  ASSERT_EQ(f.plan.num_buckets(), 4);  // {5,4} {3,2} {1,0} {-1}
  FakeCommunicator comm(4);
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  reducer.begin_step(7);
  reducer.layer_ready(5);
  EXPECT_EQ(comm.ops.size(), 0u);
  reducer.layer_ready(4);
  ASSERT_EQ(comm.ops.size(), 1u);
  // Layers 1 and 0 (bucket 2) finish before layers 3, 2 (bucket 1): bucket 2 must wait.
  reducer.layer_ready(1);
  reducer.layer_ready(0);
  EXPECT_EQ(comm.ops.size(), 1u) << "bucket 2 launched before bucket 1";
  reducer.layer_ready(3);
  reducer.layer_ready(2);
  ASSERT_EQ(comm.ops.size(), 3u);
  EXPECT_GT(comm.tests, 0) << "layer_ready must poll buckets in flight";
  reducer.layer_ready(-1);
  ASSERT_EQ(comm.ops.size(), 4u);
  for (int b = 0; b < 4; ++b) {
    const Bucket& bucket = f.plan.buckets()[static_cast<size_t>(b)];
    EXPECT_EQ(comm.ops[static_cast<size_t>(b)].data, f.grads.data() + bucket.begin);
    EXPECT_EQ(comm.ops[static_cast<size_t>(b)].n, bucket.floats());
    EXPECT_EQ(comm.ops[static_cast<size_t>(b)].context.bucket, b);
    EXPECT_EQ(comm.ops[static_cast<size_t>(b)].context.step, 7);
  }
  reducer.finish();
  EXPECT_EQ(comm.waits, 4);
  EXPECT_EQ(reducer.last_stats().buckets, 4);
  EXPECT_EQ(reducer.last_stats().buckets_done_in_backward, 0) << "all waited for in finish()";
}

TEST(GradReducer, AveragesOverTheWorld) {
  ReducerFixture f;
  const std::vector<float> before = f.grads;
  FakeCommunicator comm(3);
  comm.complete_on_test = true;  // some buckets finish while "backward" runs
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  StepTimeline timeline;
  reducer.set_timeline(&timeline);
  for (const LayerRange& r : f.ranges) reducer.layer_ready(r.layer);
  reducer.finish();
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_NEAR(f.grads[i], before[i], 1e-6f * before[i]) << i;
  const ReduceStats& stats = reducer.last_stats();
  EXPECT_GE(stats.overlap_ratio, 0.0);
  EXPECT_LE(stats.overlap_ratio, 1.0);
  EXPECT_LT(comm.waits, 4) << "buckets completed by test() need no wait()";
  EXPECT_EQ(stats.buckets_done_in_backward, 4 - comm.waits);
  EXPECT_EQ(timeline.size(), 5u);  // 4 buckets + finish
}

TEST(GradReducer, FinishBeforeEveryLayerIsABug) {
  ReducerFixture f;
  FakeCommunicator comm(2);
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  reducer.layer_ready(5);
  reducer.layer_ready(4);
  try {
    reducer.finish();
    ADD_FAILURE() << "finish() accepted missing layers";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("before layers 3,2,1,0,-1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(reducer.layer_ready(5), Error) << "a layer reported twice";
  EXPECT_THROW(reducer.layer_ready(42), Error) << "an unknown layer";
}

TEST(GradReducer, PollTestsTheBucketsInFlight) {
  ReducerFixture f;
  FakeCommunicator comm(2);
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  reducer.poll();  // outside a step: nothing to test
  EXPECT_EQ(comm.tests, 0);
  reducer.layer_ready(5);
  reducer.layer_ready(4);  // bucket 0 in flight
  const int tests = comm.tests;
  reducer.poll();
  EXPECT_EQ(comm.tests, tests + 1);
  comm.complete_on_test = true;
  reducer.poll();  // completes bucket 0
  reducer.poll();  // nothing in flight: no test of a finished handle
  EXPECT_EQ(comm.tests, tests + 2);
}

// The fixture's last bucket is the embeddings [0, 64): 8 dense floats, then 7 rows of 8 floats.
TEST(GradReducer, SparseRowsExchangeOnlyTheRowsSomeRankTouched) {
  ReducerFixture f;
  const std::vector<int64_t> touched = {1, 4, 6};
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t i = 0; i < 8; ++i) {
      const bool nonzero = std::find(touched.begin(), touched.end(), r) != touched.end();
      f.grads[static_cast<size_t>(8 + r * 8 + i)] =
          nonzero ? 1.0f + static_cast<float>(r) + 0.125f * static_cast<float>(i) : 0.0f;
    }
  const std::vector<float> before = f.grads;
  FakeCommunicator comm(4);
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  reducer.set_sparse_rows({8, 7, 8});
  for (int step = 0; step < 2; ++step) {
    comm.ops.clear();
    f.grads = before;
    for (const LayerRange& r : f.ranges) reducer.layer_ready(r.layer);
    reducer.finish();
    // 3 dense buckets; then the last one's dense part, one flag per row, the 3 touched rows packed.
    ASSERT_EQ(comm.ops.size(), 6u);
    EXPECT_EQ(comm.ops[3].data, f.grads.data());
    EXPECT_EQ(comm.ops[3].n, 8);
    EXPECT_EQ(comm.ops[4].n, 7);
    EXPECT_EQ(comm.ops[5].data, f.grads.data() + 8);
    EXPECT_EQ(comm.ops[5].n, 3 * 8);
    for (size_t i = 0; i < before.size(); ++i)
      EXPECT_NEAR(f.grads[i], before[i], 1e-6f * std::abs(before[i]))
          << "step " << step << " " << i;
    int64_t dense_floats = 0;
    for (const Bucket& bucket : f.plan.buckets()) dense_floats += bucket.floats();
    EXPECT_EQ(reducer.last_stats().floats, dense_floats - 7 * 8 + 7 + 3 * 8);
    // What a forecast reads: each bucket's bytes and all-reduces, ready in order within backward.
    const auto exchange = reducer.last_exchange();
    ASSERT_EQ(exchange.size(), 4u);
    for (size_t b = 0; b < 3; ++b) {
      EXPECT_EQ(exchange[b].bytes, f.plan.buckets()[b].floats() * 4) << b;
      EXPECT_EQ(exchange[b].collectives, 1) << b;
    }
    EXPECT_EQ(exchange[3].bytes, (8 + 7 + 3 * 8) * 4) << "dense part, flags, touched rows";
    EXPECT_EQ(exchange[3].collectives, 2) << "the rows wait for the flags";
    for (size_t b = 0; b < 4; ++b) {
      EXPECT_GE(exchange[b].ready_seconds, b == 0 ? 0.0 : exchange[b - 1].ready_seconds) << b;
      EXPECT_LE(exchange[b].ready_seconds, reducer.last_backward_seconds()) << b;
    }
  }
}

// bf16 exchange: every bucket travels as bf16 from the staging copy, averaged before it is rounded,
// and lands back in the fp32 gradient; the sparse rows' flags stay fp32. The table at the front of
// its bucket, as the word embeddings are (the bucket's other floats follow it). World size 3: "x /
// 3, then round" differs from "round, then / 3".
TEST(GradReducer, Bf16ExchangeGoesThroughTheStagingCopy) {
  ReducerFixture f;
  for (size_t i = 0; i < f.grads.size(); ++i)
    f.grads[i] = 0.5f + static_cast<float>(i % 7) + 1e-3f * static_cast<float>(i % 5);
  for (int64_t i = 2 * 8; i < 56; ++i) f.grads[static_cast<size_t>(i)] = 0;  // rows 2-6 of 7
  const std::vector<float> before = f.grads;
  FakeCommunicator comm(3);
  comm.complete_on_test = true;
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  reducer.set_sparse_rows({0, 7, 8});  // rows [0, 56), then 8 dense floats [56, 64)
  reducer.set_bf16_exchange(true);
  for (const LayerRange& r : f.ranges) reducer.layer_ready(r.layer);
  reducer.finish();
  ASSERT_EQ(comm.ops.size(), 6u);
  for (size_t k = 0; k < comm.ops.size(); ++k)
    EXPECT_EQ(comm.ops[k].half == nullptr, k == 4) << "op " << k << ": only the flags are fp32";
  EXPECT_EQ(comm.ops[3].n, 8) << "the dense floats after the table";
  EXPECT_EQ(comm.ops[4].n, 7) << "one flag per row";
  EXPECT_EQ(comm.ops[5].n, 2 * 8) << "rows 0 and 1";
  std::vector<bool> exchanged(before.size());
  for (const Bucket& bucket : f.plan.buckets())
    for (int64_t i = bucket.begin; i < bucket.end; ++i) exchanged[static_cast<size_t>(i)] = true;
  for (size_t i = 0; i < before.size(); ++i) {
    if (!exchanged[i]) continue;  // alignment padding between buckets
    // Each rank's share x / 3 rounded to bf16 (half a unit in the last of 8 significant bits: at
    // most 2^-8 of it), the fake's sum of three equal shares rounded again.
    const float share = to_float(round_to_bf16(before[i] * (1.0f / 3.0f)));
    EXPECT_EQ(f.grads[i], to_float(round_to_bf16(share * 3.0f))) << i;
    EXPECT_NEAR(f.grads[i], before[i], std::abs(before[i]) / 128) << i;
  }
  // bf16 halves the bytes of every value but the flags.
  const auto exchange = reducer.last_exchange();
  ASSERT_EQ(exchange.size(), 4u);
  for (size_t b = 0; b < 3; ++b) EXPECT_EQ(exchange[b].bytes, f.plan.buckets()[b].floats() * 2);
  EXPECT_EQ(exchange[3].bytes, 8 * 2 + 7 * 4 + 2 * 8 * 2);
}

TEST(GradReducer, SparseRowsNobodyTouchedSendNoRows) {
  ReducerFixture f;
  std::fill(f.grads.begin() + 8, f.grads.begin() + 64, 0.0f);
  FakeCommunicator comm(2);
  comm.complete_on_test = true;
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  reducer.set_sparse_rows({8, 7, 8});
  for (const LayerRange& r : f.ranges) reducer.layer_ready(r.layer);
  reducer.finish();
  ASSERT_EQ(comm.ops.size(), 5u);  // no rows all-reduce: every rank found the union empty
  for (int64_t i = 8; i < 64; ++i) EXPECT_EQ(f.grads[static_cast<size_t>(i)], 0.0f) << i;
}

TEST(GradReducer, SparseRowsMustLieInTheLastBucket) {
  ReducerFixture f;
  FakeCommunicator comm(2);
  GradReducer reducer(comm, f.plan, f.grads.data(), static_cast<int64_t>(f.grads.size()));
  EXPECT_THROW(reducer.set_sparse_rows({f.plan.buckets()[0].begin, 2, 4}), Error);
  EXPECT_THROW(reducer.set_sparse_rows({8, 8, 8}), Error) << "past the bucket's end";
}

// ---- LinkProbe and ExchangeForecast ----

// 1 ms for 4 KiB, 10 ms for 1 MB: 1e8 bytes/s, and never less than 1 ms.
LinkProbe probe_1ms_100mb() {
  LinkProbe probe;
  probe.world_size = 2;
  probe.small_bytes = 4096;
  probe.small_seconds = 1e-3;
  probe.large_bytes = 1'000'000;
  probe.large_seconds = 10e-3;
  return probe;
}

TEST(LinkProbe, CostIsTheLargeAllReducesRateWithTheSmallOneAsFloor) {
  const LinkProbe probe = probe_1ms_100mb();
  EXPECT_DOUBLE_EQ(probe.bytes_per_second(), 1e8);
  EXPECT_DOUBLE_EQ(probe.seconds(1'000'000), 10e-3);
  EXPECT_DOUBLE_EQ(probe.seconds(500'000), 5e-3);
  EXPECT_DOUBLE_EQ(probe.seconds(3'000'000), 30e-3) << "past the large point";
  EXPECT_DOUBLE_EQ(probe.seconds(4096), 1e-3) << "never below the small all-reduce";
  EXPECT_DOUBLE_EQ(probe.seconds(0), 1e-3);
  LinkProbe small_slower = probe;  // oneCCL on a busy host: 4 KiB slower than the large point
  small_slower.small_seconds = 20e-3;
  EXPECT_DOUBLE_EQ(small_slower.seconds(1'000'000), 20e-3);
  EXPECT_DOUBLE_EQ(small_slower.seconds(4'000'000), 40e-3);
  LinkProbe alone = probe;
  alone.world_size = 1;
  EXPECT_EQ(alone.bytes_per_second(), 0.0);
  EXPECT_EQ(alone.seconds(1e9), 0.0);
}

TEST(LinkProbe, OneRankSendsNothing) {
  SingleProcessCommunicator comm;
  const LinkProbe probe = probe_link(comm, 1 << 20, false);
  EXPECT_EQ(probe.world_size, 1);
  EXPECT_EQ(probe.small_seconds, 0.0);
  EXPECT_EQ(probe.large_seconds, 0.0);
  EXPECT_THROW(probe_link(comm, 100, false), Error) << "the large all-reduce must be larger";
}

// Three buckets on the 1e8 bytes/s link (1 ms at least) under a backward of 1 s, computed by hand:
// the first two end during backward, the third (two all-reduces: 1 ms more) is exposed.
TEST(ExchangeForecast, BucketsOnTheProbedLink) {
  const LinkProbe probe = probe_1ms_100mb();
  const std::vector<GradReducer::BucketExchange> buckets = {
      {0.0, 1'000'000, 1},  // 0 -> 0.010
      {0.5, 2'000'000, 1},  // 0.5 -> 0.520
      {1.0, 5'000'000, 2},  // 1.0 -> 1.0 + 0.050 + 0.001
  };
  const ExchangeForecast f = forecast_exchange(probe, buckets, 1.0, 2.0);
  EXPECT_EQ(f.buckets, 3);
  EXPECT_EQ(f.buckets_in_backward, 2);
  EXPECT_DOUBLE_EQ(f.bytes, 8e6);
  EXPECT_NEAR(f.comm_seconds, 0.010 + 0.020 + 0.051, 1e-12);
  EXPECT_NEAR(f.exposed_seconds, 0.051, 1e-12);
  EXPECT_NEAR(f.step_seconds(), 2.051, 1e-12);
  EXPECT_NEAR(f.exposed_share(), 0.051 / 2.051, 1e-12);
  EXPECT_NEAR(f.efficiency(), 2.0 / 2.051, 1e-12);
}

// A slow link: the buckets queue behind each other and most of the link time is exposed.
TEST(ExchangeForecast, BucketsQueueOnASlowLink) {
  LinkProbe probe = probe_1ms_100mb();
  probe.large_seconds = 1.0;  // 1e6 bytes/s
  const std::vector<GradReducer::BucketExchange> buckets = {{0.0, 1'000'000, 1},
                                                            {0.1, 1'000'000, 1}};
  const ExchangeForecast f = forecast_exchange(probe, buckets, 1.5, 2.0);
  EXPECT_EQ(f.buckets_in_backward, 1);  // 0 -> 1.0, then 1.0 -> 2.0
  EXPECT_NEAR(f.exposed_seconds, 0.5, 1e-12);
  EXPECT_NEAR(f.efficiency(), 2.0 / 2.5, 1e-12);
  // Nothing to send: nothing exposed, full speed.
  const ExchangeForecast none = forecast_exchange(probe, {}, 1.5, 2.0);
  EXPECT_EQ(none.exposed_seconds, 0.0);
  EXPECT_EQ(none.efficiency(), 1.0);
  EXPECT_THROW(forecast_exchange(probe, buckets, 1.5, -1.0), Error);
}

TEST(StepTimeline, WritesChromeTraceJson) {
  StepTimeline timeline(3, 2);
  timeline.add("all\"reduce", "comm", 10, 25.5, 1, 4);
  timeline.add("finish", "exposed_comm", 30, 31);
  timeline.add("dropped", "x", 0, 1);
  EXPECT_EQ(timeline.dropped(), 1);
  const std::string json = timeline.to_json();
  EXPECT_NE(json.find("{\"name\":\"all\\\"reduce\",\"cat\":\"comm\",\"ph\":\"X\",\"ts\":10.000,"
                      "\"dur\":15.500,\"pid\":3,\"tid\":1,\"args\":{\"v\":4}}"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("dropped"), std::string::npos);
}

}  // namespace
}  // namespace cpuft
