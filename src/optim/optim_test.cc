#include <gtest/gtest.h>

#include "core/check.h"
#include "optim/lr_schedule.h"

namespace cpuft {
namespace {

// Values of transformers.get_scheduler(name, opt, num_warmup_steps=2, num_training_steps=10) for
// base lr 1.0 at optimizer steps 0..10, computed by hand from the published lambdas.
TEST(LrSchedule, LinearWithWarmup) {
  LrSchedule s{ScheduleKind::linear, 1.0, 2, 10};
  EXPECT_DOUBLE_EQ(s.lr(0), 0.0);
  EXPECT_DOUBLE_EQ(s.lr(1), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(2), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(6), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(10), 0.0);
  EXPECT_DOUBLE_EQ(s.lr(12), 0.0);
}

TEST(LrSchedule, CosineWithWarmup) {
  LrSchedule s{ScheduleKind::cosine, 2.0, 2, 10};
  EXPECT_DOUBLE_EQ(s.lr(1), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(2), 2.0);
  EXPECT_NEAR(s.lr(6), 1.0, 1e-12);  // half-way: cos(pi/2) = 0 -> 0.5
  EXPECT_NEAR(s.lr(10), 0.0, 1e-12);
}

TEST(LrSchedule, ConstantKinds) {
  LrSchedule c{ScheduleKind::constant, 3.0, 5, 10};
  EXPECT_DOUBLE_EQ(c.lr(0), 3.0);
  LrSchedule w{ScheduleKind::constant_with_warmup, 3.0, 4, 10};
  EXPECT_DOUBLE_EQ(w.lr(1), 0.75);
  EXPECT_DOUBLE_EQ(w.lr(4), 3.0);
  EXPECT_DOUBLE_EQ(w.lr(9), 3.0);
}

TEST(LrSchedule, ParseNames) {
  EXPECT_EQ(parse_schedule_kind("cosine"), ScheduleKind::cosine);
  EXPECT_THROW(parse_schedule_kind("polynomial-ish"), Error);
}

}  // namespace
}  // namespace cpuft
