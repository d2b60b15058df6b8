#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/check.h"
#include "optim/lr_schedule.h"
#include "test_paths.h"

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
  EXPECT_EQ(parse_schedule_kind("warmup_stable_decay"), ScheduleKind::warmup_stable_decay);
  EXPECT_THROW(parse_schedule_kind("polynomial-ish"), Error);
}

nlohmann::json read_json(const std::string& name) {
  std::ifstream in(testing::fixture_path(name));
  EXPECT_TRUE(in.good()) << name;
  return nlohmann::json::parse(in);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Every schedule kind against transformers.get_scheduler, step by step as the Trainer steps it
// (tests/fixtures/lr_schedules.json, tools/make_optim_fixtures.py): warmup 0 and > 0, totals the
// cycles do not divide, the kwargs of each kind, and steps past the total.
TEST(LrSchedule, EveryKindMatchesTransformers) {
  const nlohmann::json fixture = read_json("lr_schedules.json");
  std::set<std::string> kinds;
  int compared = 0;
  for (const nlohmann::json& c : fixture.at("cases")) {
    const std::string type = c.at("type");
    kinds.insert(type);
    const LrSchedule s = make_lr_schedule(type, c.at("learning_rate"), c.at("warmup_steps"),
                                          c.at("total_steps"), c.at("kwargs").dump());
    const std::vector<double> lrs = c.at("lrs");
    ASSERT_GT(lrs.size(), static_cast<size_t>(s.total_steps)) << type;
    for (size_t step = 0; step < lrs.size(); ++step) {
      // The same double operations as transformers' lambdas: equal up to libm's last bit.
      EXPECT_NEAR(s.lr(static_cast<int64_t>(step)), lrs[step], 1e-14 * std::abs(lrs[step]))
          << type << " " << c.at("kwargs").dump() << " warmup " << s.warmup_steps << " total "
          << s.total_steps << " step " << step;
      ++compared;
    }
  }
  EXPECT_EQ(kinds.size(), 10u) << "every supported kind is in the fixture";
  EXPECT_GT(compared, 500);
}

TEST(LrSchedule, KwargsAreCheckedInOneLine) {
  auto make = [](const std::string& type, const std::string& kwargs, double lr = 1e-3) {
    return error_of([&] { make_lr_schedule(type, lr, 2, 10, kwargs); });
  };
  EXPECT_EQ(make("linear", ""), "(no error)");
  EXPECT_EQ(make("linear", "{}"), "(no error)");
  EXPECT_NE(make("linear", R"({"num_cycles": 2})").find("linear takes no keyword arguments"),
            std::string::npos);
  EXPECT_NE(make("cosine", R"({"num_cycle": 2})").find("takes num_cycles, not 'num_cycle'"),
            std::string::npos);
  EXPECT_NE(make("cosine", R"({"last_epoch": 3})").find("'last_epoch'"), std::string::npos);
  EXPECT_NE(make("polynomial", R"({"lr_end": 0.01})").find("must be smaller"), std::string::npos);
  EXPECT_NE(make("cosine_with_min_lr", "{}").find("needs min_lr or min_lr_rate"),
            std::string::npos);
  EXPECT_NE(make("cosine_with_min_lr", R"({"min_lr": 1e-5, "min_lr_rate": 0.1})")
                .find("only one of min_lr or min_lr_rate"),
            std::string::npos);
  EXPECT_NE(make("warmup_stable_decay", "{}").find("needs num_decay_steps"), std::string::npos);
  EXPECT_NE(make("warmup_stable_decay", R"({"num_decay_steps": 3, "decay_type": "cubic"})")
                .find("'cubic'"),
            std::string::npos);
  EXPECT_NE(make("cosine", R"({"num_cycles": "two"})").find("must be a number"), std::string::npos);
  EXPECT_NE(make("cosine", "[1]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(make("cosine", "{num_cycles: 1").find("is not JSON"), std::string::npos);
  for (const char* adaptive : {"reduce_lr_on_plateau", "greedy"}) {
    const std::string e = make(adaptive, "");
    EXPECT_NE(e.find("not supported"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace cpuft
