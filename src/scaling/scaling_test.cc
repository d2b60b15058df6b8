// The scaling model on cases small enough to compute by hand.
#include "scaling/scaling.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace cpuft {
namespace {

TEST(Scaling, RingAllReduceCost) {
  const LinkModel link = link_from_gbit(8, 0);  // 8 Gbit/s = 1e9 bytes/s
  EXPECT_DOUBLE_EQ(link.bytes_per_second, 1e9);
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(1e9, 1, link), 0);    // one host: nothing to send
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(1e9, 2, link), 1.0);  // 2 (1/2) x 1 GB / 1 GB/s
  const LinkModel slow = link_from_gbit(8, 1e-3);               // 1 ms per message
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(1e9, 4, slow), 2.0 * 3 / 4 + 6e-3);
  EXPECT_THROW(link_from_gbit(0, 0), Error);
  EXPECT_THROW(ring_allreduce_seconds(1, 0, link), Error);
}

// What a bucket sends (ExchangeModel, GradReducer's wire format): bf16 halves the bytes; the last
// bucket with a sparse word table sends the rest, one fp32 flag per row, then the union of the
// touched rows (N x rows per host, at most the table).
TEST(Scaling, BucketBytesFollowTheExchange) {
  const LinkModel link = link_from_gbit(8, 0);  // 1e9 bytes/s; 2 hosts: a ring moves 1x the bytes
  const int64_t floats = 250'000'000;           // 1 GB in fp32
  EXPECT_DOUBLE_EQ(bucket_comm_seconds(floats, false, 2, link, ExchangeModel{}), 1.0);
  EXPECT_DOUBLE_EQ(bucket_comm_seconds(floats, false, 2, link, ExchangeModel{2}), 0.5);
  // A table of 1000 x 100,000 values in the last bucket; 100 rows touched per host.
  const ExchangeModel sparse{4, 100, 1000, 100'000};
  const double rest = (floats - 1e8) * 4, flags = 1000 * 4.0;
  EXPECT_DOUBLE_EQ(bucket_comm_seconds(floats, true, 2, link, sparse),
                   (rest + flags + 2 * 100 * 1e5 * 4) / 1e9);
  EXPECT_DOUBLE_EQ(bucket_comm_seconds(floats, false, 2, link, sparse), 1.0);  // not the last
  // 16 hosts: union bounded by the table (1000 rows), not 1600.
  const double ring16 = 2.0 * 15 / 16;
  EXPECT_DOUBLE_EQ(bucket_comm_seconds(floats, true, 16, link, sparse),
                   ring16 * (rest + flags + 1000 * 1e5 * 4) / 1e9);
  const ExchangeModel sparse_bf16{2, 100, 1000, 100'000};
  EXPECT_DOUBLE_EQ(bucket_comm_seconds(floats, true, 2, link, sparse_bf16),
                   ((floats - 1e8) * 2 + flags + 2 * 100 * 1e5 * 2) / 1e9);
}

TEST(Scaling, NoOverlapPossible) {
  // The only bucket is ready when backward ends: all of its time is exposed.
  const OverlapResult r = simulate_overlap(1.0, {{1.0, 0.5}});
  EXPECT_DOUBLE_EQ(r.comm_end_seconds, 1.5);
  EXPECT_DOUBLE_EQ(r.comm_seconds, 0.5);
  EXPECT_DOUBLE_EQ(r.exposed_seconds, 0.5);
  EXPECT_DOUBLE_EQ(r.hidden_seconds, 0);
  EXPECT_DOUBLE_EQ(r.overlap_ratio, 0);
}

TEST(Scaling, FullOverlap) {
  // Buckets ready at 0, 1, 2, 3 s of a 4 s backward, 0.5 s each: all done at 3.5 s.
  const OverlapResult r = simulate_overlap(4.0, {{0, 0.5}, {1, 0.5}, {2, 0.5}, {3, 0.5}});
  EXPECT_EQ(r.start_seconds, (std::vector<double>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(r.comm_end_seconds, 3.5);
  EXPECT_DOUBLE_EQ(r.exposed_seconds, 0);
  EXPECT_DOUBLE_EQ(r.hidden_seconds, 2.0);
  EXPECT_DOUBLE_EQ(r.overlap_ratio, 1.0);
}

TEST(Scaling, LinkBound) {
  // Ready at 0, 1, 2 s of a 3 s backward, 2 s each: they queue on the link (start 0, 2, 4).
  const OverlapResult r = simulate_overlap(3.0, {{0, 2}, {1, 2}, {2, 2}});
  EXPECT_EQ(r.start_seconds, (std::vector<double>{0, 2, 4}));
  EXPECT_EQ(r.end_seconds, (std::vector<double>{2, 4, 6}));
  EXPECT_DOUBLE_EQ(r.exposed_seconds, 3.0);
  EXPECT_DOUBLE_EQ(r.hidden_seconds, 3.0);
  EXPECT_DOUBLE_EQ(r.overlap_ratio, 0.5);
}

TEST(Scaling, NoBuckets) {
  const OverlapResult r = simulate_overlap(2.0, {});
  EXPECT_DOUBLE_EQ(r.comm_end_seconds, 0);
  EXPECT_DOUBLE_EQ(r.exposed_seconds, 0);
  EXPECT_DOUBLE_EQ(r.overlap_ratio, 0);
  EXPECT_THROW(simulate_overlap(1.0, {{-1, 1}}), Error);
}

// Three layers of 1000, 2000 and 1000 bytes in backward order, one bucket each (1000-byte caps);
// ready at 1, 2, 3 s of a 3 s backward; forward 1 s, optimizer 1 s: T(1) = 5 s.
struct ThreeLayers {
  BucketPlan plan{{{2, 750, 1000}, {1, 250, 750}, {0, 0, 250}}, 1000, 1000};
  ComputeProfile profile;
  LinkModel link{"1000 B/s", 1000, 0};
  ThreeLayers() {
    profile.forward_seconds = 1;
    profile.backward_seconds = 3;
    profile.optimizer_seconds = 1;
    profile.layers = {2, 1, 0};
    profile.layer_ready_seconds = {1, 2, 3};
  }
};

TEST(Scaling, BucketReadyTimesFollowThePlan) {
  const ThreeLayers t;
  ASSERT_EQ(t.plan.num_buckets(), 3);
  EXPECT_EQ(bucket_ready_seconds(t.profile, t.plan), (std::vector<double>{1, 2, 3}));
  // Two layers in one bucket: ready when the later one is.
  const BucketPlan merged({{2, 750, 1000}, {1, 250, 750}, {0, 0, 250}}, 1 << 20, 1 << 20);
  ASSERT_EQ(merged.num_buckets(), 1);
  EXPECT_EQ(bucket_ready_seconds(t.profile, merged), (std::vector<double>{3}));
  ComputeProfile missing = t.profile;
  missing.layers = {2, 1, 5};
  EXPECT_THROW(bucket_ready_seconds(missing, t.plan), Error);
}

TEST(Scaling, PredictedStepAndSpeedup) {
  const ThreeLayers t;
  const ScalingPoint one = predict_scaling(t.profile, t.plan, 1, t.link);
  EXPECT_DOUBLE_EQ(one.step_seconds, 5);
  EXPECT_DOUBLE_EQ(one.speedup, 1);
  EXPECT_DOUBLE_EQ(one.comm_seconds, 0);

  // N = 2: buckets cost 1, 2, 1 s: [1, 2], [2, 4], [4, 5]; backward ends at 3, so 2 s exposed.
  const ScalingPoint two = predict_scaling(t.profile, t.plan, 2, t.link);
  EXPECT_DOUBLE_EQ(two.comm_seconds, 4);
  EXPECT_DOUBLE_EQ(two.exposed_seconds, 2);
  EXPECT_DOUBLE_EQ(two.overlap_ratio, 0.5);
  EXPECT_DOUBLE_EQ(two.step_seconds, 7);
  EXPECT_DOUBLE_EQ(two.speedup, 2.0 * 5 / 7);
  EXPECT_DOUBLE_EQ(two.efficiency, 5.0 / 7);

  // N = 4: x 3/2: [1, 2.5], [2.5, 5.5], [5.5, 7]: step 1 + 7 + 1.
  const ScalingPoint four = predict_scaling(t.profile, t.plan, 4, t.link);
  EXPECT_DOUBLE_EQ(four.exposed_seconds, 4);
  EXPECT_DOUBLE_EQ(four.step_seconds, 9);
  EXPECT_DOUBLE_EQ(four.speedup, 4.0 * 5 / 9);

  // An infinitely fast link: perfect weak scaling.
  const ScalingPoint fast = predict_scaling(t.profile, t.plan, 16, LinkModel{"fast", 1e30, 0});
  EXPECT_NEAR(fast.speedup, 16, 1e-9);
  EXPECT_NEAR(fast.exposed_seconds, 0, 1e-12);
}

TEST(Scaling, TableHasOneLinePerHostCount) {
  const ThreeLayers t;
  const std::string table = format_scaling_table({predict_scaling(t.profile, t.plan, 1, t.link),
                                                  predict_scaling(t.profile, t.plan, 2, t.link)},
                                                 t.link, 32);
  EXPECT_NE(table.find("speedup"), std::string::npos);
  EXPECT_NE(table.find("     2            64     7.000     1.43"), std::string::npos) << table;
}

// A host twice as fast: every compute time halves, so on a link that costs nothing the step
// halves; on a real link the same bytes take a larger share of the shorter step.
TEST(Scaling, HostSpeedDividesEveryComputeTime) {
  const ThreeLayers t;
  const ComputeProfile fast = scale_profile(t.profile, 2);
  EXPECT_DOUBLE_EQ(fast.forward_seconds, 0.5);
  EXPECT_DOUBLE_EQ(fast.backward_seconds, 1.5);
  EXPECT_DOUBLE_EQ(fast.optimizer_seconds, 0.5);
  EXPECT_EQ(fast.layers, t.profile.layers);
  EXPECT_EQ(fast.layer_ready_seconds, (std::vector<double>{0.5, 1, 1.5}));
  // N = 2: the buckets still cost 1, 2, 1 s, now ready at 0.5, 1, 1.5: [0.5, 1.5],
  // [1.5, 3.5], [3.5, 4.5]; backward ends at 1.5, so the step is 0.5 + 4.5 + 0.5 = 5.5.
  EXPECT_DOUBLE_EQ(predict_scaling(fast, t.plan, 2, t.link).step_seconds, 5.5);
  EXPECT_THROW(scale_profile(t.profile, 0), Error);
  EXPECT_THROW(scale_profile(t.profile, -1), Error);
}

// HF Trainer's count: each rank takes ceil(samples / hosts) examples an epoch, in batches whose
// last is partial. MRPC's 3668 pairs at 32 per rank: 115, 58 and 29 steps on 1, 2 and 4 hosts.
TEST(Scaling, TrainingStepsFollowTheSamplersShare) {
  EXPECT_EQ(steps_per_epoch(3668, 1, 32), 115);
  EXPECT_EQ(steps_per_epoch(3668, 2, 32), 58);
  EXPECT_EQ(steps_per_epoch(3668, 4, 32), 29);
  EXPECT_EQ(steps_per_epoch(64, 2, 32), 1);
  EXPECT_EQ(steps_per_epoch(65, 2, 32), 2);  // 33 per rank
  EXPECT_EQ(steps_per_epoch(0, 2, 32), 0);
  EXPECT_EQ(training_steps({3668, 3}, 1, 32), 345);
  EXPECT_EQ(training_steps({3668, 0.5}, 1, 32), 58);  // 57.5: the started step counts
  EXPECT_EQ(training_steps({363846, 3}, 4, 32), 8529);
  EXPECT_THROW(steps_per_epoch(10, 0, 32), Error);
  EXPECT_THROW(training_steps({10, 0}, 1, 32), Error);
}

TEST(Scaling, TableWithARunHasItsStepsAndTime) {
  const ThreeLayers t;
  // 1 host: 5 s a step; 2 hosts: 7 s. 100 samples, 2 epochs, batch 32: 4 x 2 = 8 steps on one
  // host (40 s), 2 x 2 = 4 on two (28 s).
  const std::string table = format_scaling_table({predict_scaling(t.profile, t.plan, 1, t.link),
                                                  predict_scaling(t.profile, t.plan, 2, t.link)},
                                                 t.link, 32, TrainingRun{100, 2});
  EXPECT_NE(table.find("train_time"), std::string::npos) << table;
  EXPECT_NE(table.find("        8        40s\n"), std::string::npos) << table;
  EXPECT_NE(table.find("        4        28s\n"), std::string::npos) << table;
  EXPECT_EQ(format_scaling_table({}, t.link, 32).find("train_time"), std::string::npos);
}

}  // namespace
}  // namespace cpuft
