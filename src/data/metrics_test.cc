// Metrics against sklearn/scipy values recorded by tools/make_metrics_fixture.py
// (tests/fixtures/metrics_cases.json), plus the edge cases HF's metric hits.
#include "data/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/check.h"
#include "data/data_reader.h"
#include "test_paths.h"

namespace cpuft {
namespace {

std::string cases_path() {
  return cpuft::testing::fixture_path("metrics_cases.json");
}

nlohmann::json load_cases() {
  std::ifstream in(cases_path());
  if (!in) throw Error(str(cases_path(), ": cannot open"));
  return nlohmann::json::parse(in);
}

TEST(Metrics, MatchSklearnAndScipy) {
  const nlohmann::json doc = load_cases();
  const DataFileLabels regression_file{true, false, {}};
  const GlueTask regression_task = data_file_task(regression_file);
  ASSERT_GE(doc.at("cases").size(), 40u);
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name");
    const std::string task_name = c.at("task");
    SCOPED_TRACE(name);
    const GlueTask& task = task_name == "regression" ? regression_task : glue_task(task_name);
    std::map<std::string, double> got;
    if (task.is_regression()) {
      // The fixture's numbers are float32 values written out exactly.
      std::vector<float> p, y;
      for (double v : c.at("predictions")) p.push_back(static_cast<float>(v));
      for (double v : c.at("labels")) y.push_back(static_cast<float>(v));
      got = glue_metrics(task, p, y);
    } else {
      got = glue_metrics(task, c.at("predictions").get<std::vector<int32_t>>(),
                         c.at("labels").get<std::vector<int32_t>>());
    }
    std::set<std::string> want_keys, got_keys;
    for (const auto& [key, value] : c.at("expected").items()) {
      want_keys.insert(key);
      ASSERT_TRUE(got.count(key)) << key;
      if (value.is_null()) {
        EXPECT_TRUE(std::isnan(got.at(key))) << key << " = " << got.at(key);
      } else {
        EXPECT_NEAR(got.at(key), value.get<double>(), 1e-9) << key;
      }
    }
    for (const auto& [key, value] : got) got_keys.insert(key);
    EXPECT_EQ(got_keys, want_keys);
  }
}

TEST(Metrics, DegenerateCases) {
  const std::vector<int32_t> ones(6, 1), zeros(6, 0), mixed = {0, 1, 0, 1, 1, 0};
  // All predictions the same: MCC undefined, sklearn gives 0.
  EXPECT_EQ(matthews_corrcoef(ones, mixed), 0.0);
  EXPECT_EQ(matthews_corrcoef(mixed, zeros), 0.0);
  EXPECT_EQ(matthews_corrcoef(mixed, mixed), 1.0);
  // No positive prediction: precision undefined, F1 = 0 (sklearn's zero_division default).
  EXPECT_EQ(f1_binary(zeros, mixed), 0.0);
  EXPECT_EQ(f1_binary(zeros, zeros), 0.0);
  EXPECT_EQ(f1_binary(ones, ones), 1.0);
  EXPECT_EQ(accuracy(mixed, mixed), 1.0);
  // Ties share their average rank: a monotone map with ties in both keeps Spearman at 1.
  const std::vector<float> a = {1, 2, 2, 3, 5, 5, 5}, b = {0.1f, 0.4f, 0.4f, 0.5f, 2, 2, 2};
  EXPECT_NEAR(spearman(a, b), 1.0, 1e-15);
  EXPECT_NEAR(pearson(a, a), 1.0, 1e-15);
  const std::vector<float> flat(7, 3.0f);
  EXPECT_TRUE(std::isnan(pearson(flat, a)));
  EXPECT_TRUE(std::isnan(spearman(a, flat)));
  EXPECT_NEAR(mean_squared_error(a, b), (0.81 + 2.56 * 2 + 6.25 + 9 * 3) / 7, 1e-6);
}

TEST(Metrics, CombinedScoreIsTheMean) {
  const auto m = glue_metrics(glue_task("mrpc"), std::vector<int32_t>{1, 1, 0, 0},
                              std::vector<int32_t>{1, 0, 0, 0});
  EXPECT_EQ(m.at("accuracy"), 0.75);
  EXPECT_NEAR(m.at("f1"), 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(m.at("combined_score"), (0.75 + 2.0 / 3.0) / 2, 1e-15);
  EXPECT_EQ(
      glue_metrics(glue_task("sst2"), std::vector<int32_t>{1}, std::vector<int32_t>{1}).size(), 1u);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Metrics, Errors) {
  const std::vector<int32_t> two = {0, 1}, three = {0, 1, 1};
  EXPECT_EQ(error_of([&] { glue_metrics(glue_task("sst2"), two, three); }),
            "accuracy: 2 predictions but 3 labels");
  EXPECT_EQ(error_of([&] {
              glue_metrics(glue_task("sst2"), std::vector<int32_t>{}, std::vector<int32_t>{});
            }),
            "accuracy: no examples");
  EXPECT_EQ(error_of([&] { glue_metrics(glue_task("ax"), two, two); }),
            "task ax has no metrics (it is predict-only)");
  EXPECT_EQ(error_of([&] { glue_metrics(glue_task("stsb"), two, two); }),
            "task stsb is a regression task: its metrics take float scores");
  EXPECT_EQ(error_of([&] {
              glue_metrics(glue_task("cola"), std::vector<float>{1, 2}, std::vector<float>{1, 2});
            }),
            "task cola is a classification task: its metrics take class ids");
  EXPECT_EQ(error_of([&] {
              f1_binary(std::vector<int32_t>{0, 2}, two);
            }),
            "f1: binary F1 needs classes 0 and 1, got label 1 prediction 2 at position 1");
  EXPECT_EQ(error_of([&] { pearson(std::vector<float>{1}, std::vector<float>{1}); }),
            "pearson: needs at least 2 examples, got 1");
}

}  // namespace
}  // namespace cpuft
