#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/check.h"
#include "core/scoped_env.h"
#include "io/safetensors.h"
#include "train/encoded_dataset.h"
#include "train/hf_arguments.h"
#include "train/machine_peak.h"
#include "train/outputs.h"
#include "train/progress.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cpuft {
namespace {

std::string validation_error(TrainConfig c) {
  try {
    validate_train_config(c);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainConfig, ContradictionsAreRefusedNamingTheFlag) {
  TrainConfig c;
  c.model_name_or_path = "m";
  c.output_dir = "o";
  c.task_name = "mrpc";
  c.data_dir = "d";
  EXPECT_NE(validation_error(c).find("nothing to do"), std::string::npos);
  c.do_train = true;
  c.train_file = "x.csv";
  EXPECT_NE(validation_error(c).find("not both"), std::string::npos);
  c.train_file.clear();
  c.per_device_train_batch_size = 0;
  EXPECT_NE(validation_error(c).find("--per_device_train_batch_size"), std::string::npos);
  c.per_device_train_batch_size = 8;
  c.eval_strategy = "sometimes";
  EXPECT_NE(validation_error(c).find("--eval_strategy"), std::string::npos);
  c.eval_strategy = "no";
  c.bf16 = true;
  EXPECT_NO_THROW(validate_train_config(c, /*cpu_has_bf16=*/true));
  try {
    validate_train_config(c, /*cpu_has_bf16=*/false);
    ADD_FAILURE() << "--bf16 accepted on a CPU without bf16 instructions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--bf16 needs a CPU with AVX512_BF16"), std::string::npos);
  }
  c.bf16 = false;
  c.load_best_model_at_end = true;
  EXPECT_NE(validation_error(c).find("--load_best_model_at_end needs evaluations"),
            std::string::npos);
  c.eval_strategy = "steps";
  c.eval_steps = 30;
  c.save_steps = 45;
  EXPECT_NE(validation_error(c).find("to be a multiple of --eval_steps"), std::string::npos);
  c.save_steps = 60;
  EXPECT_EQ(validation_error(c), "");
  c.optim = "adafactor";
  EXPECT_NE(validation_error(c).find("--optim adafactor"), std::string::npos);
}

// --dataset_name glue --dataset_config_name T is --task_name T, as in run_glue.py.
TEST(TrainConfig, DatasetNameGlueIsATask) {
  TrainConfig c;
  c.model_name_or_path = "m";
  c.output_dir = "o";
  c.do_train = true;
  c.dataset_name = "glue";
  c.dataset_config_name = "rte";
  validate_train_config(c);
  EXPECT_EQ(c.task_name, "rte");
  c.dataset_name = "imdb";
  EXPECT_NE(validation_error(c).find("--dataset_name imdb"), std::string::npos);
}

EncodedDataset dataset_of_lengths(const std::vector<int>& lengths) {
  EncodedDataset d;
  for (int n : lengths) {
    for (int i = 0; i < n; ++i) {
      d.input_ids.push_back(1);
      d.token_type_ids.push_back(0);
    }
    d.offsets.push_back(static_cast<int64_t>(d.input_ids.size()));
    d.labels.push_back(0);
    d.scores.push_back(0);
    d.indices.push_back(static_cast<int64_t>(d.indices.size()));
  }
  d.has_labels = true;
  return d;
}

TEST(EpochOrder, IsASeededPermutationThatChangesPerEpoch) {
  std::vector<int> lengths(1000);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = 1 + static_cast<int>(i % 97);
  const EncodedDataset d = dataset_of_lengths(lengths);
  const auto a = epoch_order(d, 42, 0, false, 8);
  const auto b = epoch_order(d, 42, 0, false, 8);
  const auto c = epoch_order(d, 42, 1, false, 8);
  const auto e = epoch_order(d, 43, 0, false, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, e);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
}

TEST(EpochOrder, GroupByLengthMakesBatchesOfSimilarLength) {
  std::vector<int> lengths(4000);
  std::mt19937 rng(1);
  for (int& n : lengths) n = 5 + static_cast<int>(rng() % 120);
  const EncodedDataset d = dataset_of_lengths(lengths);
  auto padding_waste = [&](const std::vector<int64_t>& order) {
    int64_t waste = 0;
    for (size_t b = 0; b + 8 <= order.size(); b += 8) {
      int64_t longest = 0, sum = 0;
      for (size_t i = b; i < b + 8; ++i) {
        longest = std::max(longest, d.length(order[i]));
        sum += d.length(order[i]);
      }
      waste += 8 * longest - sum;
    }
    return waste;
  };
  const auto grouped = epoch_order(d, 42, 0, true, 8);
  const auto random = epoch_order(d, 42, 0, false, 8);
  EXPECT_LT(padding_waste(grouped) * 5, padding_waste(random));
  EXPECT_EQ(d.length(grouped[0]), 124);  // the longest example first
  std::vector<int64_t> sorted = grouped;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 4000; ++i) ASSERT_EQ(sorted[i], i);
}

TEST(PadToRanks, RepeatsTheBeginningAsDistributedSampler) {
  const std::vector<int64_t> order = {9, 3, 7, 1, 5, 0, 2};  // 7 examples, 3 ranks
  EXPECT_EQ(pad_to_ranks(order, 3), (std::vector<int64_t>{9, 3, 7, 1, 5, 0, 2, 9, 3}));
  EXPECT_EQ(pad_to_ranks(order, 7), order);
  EXPECT_EQ(pad_to_ranks(order, 1), order);
  EXPECT_EQ(pad_to_ranks({4}, 3), (std::vector<int64_t>{4, 4, 4}));
}

TEST(DealByTokens, EvenCountsAndTokensLongestFirst) {
  // Longest first, each to the rank with fewer tokens: 50 -> r0, 40 -> r1, 30 -> r1 (40 < 50),
  // 20 -> r0 (50 < 70), 10 -> r0 (70 = 70: the lower rank), 5 -> r1 (r0 is full).
  const std::vector<int64_t> lengths = {10, 50, 20, 40, 30, 5};
  const std::vector<int> rank_of = deal_by_tokens(lengths, 2);
  EXPECT_EQ(rank_of, (std::vector<int>{0, 0, 0, 1, 1, 1}));  // r0: 50+20+10, r1: 40+30+5
  // Counts stay equal even where tokens would rather not: one long, three short.
  EXPECT_EQ(deal_by_tokens(std::vector<int64_t>{100, 1, 1, 1}, 2), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(deal_by_tokens(std::vector<int64_t>{3, 3}, 1), (std::vector<int>{0, 0}));
  EXPECT_THROW(deal_by_tokens(std::vector<int64_t>{1, 2, 3}, 2), Error);
}

TEST(DealByTokens, MuchMoreEvenThanTakingEveryWorldthOnMrpcLikeLengths) {
  // 200 windows of 4 ranks x 8 examples with lengths 20-100: the greedy deal's spread between two
  // ranks' tokens stays within the longest example in every window (the equal counts keep it from
  // being a bound in general); taking r, r + 4, ... is far worse.
  std::mt19937 rng(7);
  int64_t spread = 0, strided_spread = 0;
  for (int window = 0; window < 200; ++window) {
    std::vector<int64_t> lengths(32);
    for (auto& l : lengths) l = 20 + static_cast<int64_t>(rng() % 81);
    const std::vector<int> rank_of = deal_by_tokens(lengths, 4);
    std::vector<int64_t> tokens(4, 0), count(4, 0), strided(4, 0);
    for (size_t i = 0; i < lengths.size(); ++i) {
      tokens[static_cast<size_t>(rank_of[i])] += lengths[i];
      ++count[static_cast<size_t>(rank_of[i])];
      strided[i % 4] += lengths[i];
    }
    EXPECT_EQ(count, (std::vector<int64_t>(4, 8)));
    const auto [lo, hi] = std::minmax_element(tokens.begin(), tokens.end());
    const auto [slo, shi] = std::minmax_element(strided.begin(), strided.end());
    EXPECT_LE(*hi - *lo, 100) << "window " << window;
    spread += *hi - *lo;
    strided_spread += *shi - *slo;
  }
  EXPECT_LT(spread * 10, strided_spread);  // these windows: 5.1 against 132 tokens on average
}

TEST(RankRows, TheRanksTogetherHoldTheWindowWithItsNumbers) {
  EncodedDataset d;
  d.offsets = {0};
  for (int64_t len : {7, 2, 9, 4, 4, 1}) d.offsets.push_back(d.offsets.back() + len);
  const std::vector<int64_t> window = {5, 2, 0, 3, 1, 4};  // lengths 1 9 7 4 2 4
  std::vector<std::pair<int64_t, int64_t>> all;            // (number, row) over the ranks
  for (int rank = 0; rank < 2; ++rank) {
    const RankRows mine = rank_rows(d, window, 12, rank, 2);
    ASSERT_EQ(mine.rows.size(), 3u);
    ASSERT_EQ(mine.numbers.size(), 3u);
    int64_t tokens = 0;
    for (size_t j = 0; j < 3; ++j) {
      all.emplace_back(mine.numbers[j], mine.rows[j]);
      tokens += d.length(mine.rows[j]);
      if (j > 0) {
        EXPECT_LT(mine.numbers[j - 1], mine.numbers[j]);  // window order
      }
    }
    EXPECT_EQ(tokens, rank == 0 ? 14 : 13);  // 9 -> r0, 7 -> r1, 4 -> r1, 4 -> r0, 2 -> r1, 1 -> r0
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < window.size(); ++i) {
    EXPECT_EQ(all[i].first, 12 + static_cast<int64_t>(i));
    EXPECT_EQ(all[i].second, window[i]);
  }
  // One rank holds the whole window in its order.
  const RankRows alone = rank_rows(d, window, 0, 0, 1);
  EXPECT_EQ(alone.rows, window);
  EXPECT_EQ(alone.numbers, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Outputs, FineTunedConfigHasLabelsAndArchitecture) {
  const json config = fine_tuned_config(R"({"model_type": "bert", "hidden_size": 8, "num_labels": 7,
                                           "architectures": ["BertModel"]})",
                                        {"not_equivalent", "equivalent"}, false, "mrpc");
  EXPECT_EQ(config["architectures"][0], "BertForSequenceClassification");
  EXPECT_EQ(config["id2label"]["1"], "equivalent");
  EXPECT_EQ(config["label2id"]["not_equivalent"], 0);
  EXPECT_EQ(config["finetuning_task"], "mrpc");
  EXPECT_EQ(config["hidden_size"], 8);
  EXPECT_FALSE(config.contains("num_labels"));
  const json regression = fine_tuned_config(R"({"model_type": "bert"})", {}, true, "stsb");
  EXPECT_EQ(regression["id2label"].size(), 1u);
  EXPECT_EQ(regression["problem_type"], "regression");
}

TEST(Outputs, SvgHasLossLineAndEvalPoints) {
  const json history = json::parse(R"([{"loss": 0.7, "step": 10}, {"loss": 0.5, "step": 20},
      {"eval_accuracy": 0.8, "eval_loss": 0.4, "step": 20}])");
  const std::string svg = training_curves_svg(history, "t");
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("eval_accuracy"), std::string::npos);
  EXPECT_EQ(svg.find("eval_loss ("), std::string::npos);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
}

// The *_strategy flags become cadences once: "steps" every N optimizer steps, "epoch" at each
// epoch's end, "no" never.
TEST(Cadence, StepsEpochAndNo) {
  const Cadence steps = Cadence::parse("steps", 3, 100), epoch = Cadence::parse("epoch", 3, 100),
                never = Cadence::parse("no", 3, 100);
  for (int64_t step = 1; step <= 9; ++step) {
    EXPECT_EQ(steps.due(step, false), step % 3 == 0) << step;
    EXPECT_FALSE(epoch.due(step, false)) << step;
    EXPECT_TRUE(epoch.due(step, true)) << step;
    EXPECT_FALSE(never.due(step, true)) << step;
  }
  // Below 1: a fraction of the total steps, rounded up (HF's Trainer).
  EXPECT_EQ(Cadence::parse("steps", 0.1, 95).every, 10);
  EXPECT_EQ(Cadence::parse("steps", 0.5, 3).every, 2);
  EXPECT_EQ(Cadence::parse("best", 1, 3).kind, Cadence::Kind::no);
}

// The peak probe's share of the CPU time its threads could have had: threads beyond the cores the
// affinity mask allows are no sign of another process (taskset -c 0 with 2 threads read 50%
// before this); a share above 1 (other threads of the process) is capped.
TEST(MachinePeak, ProbeShareCountsOnlyTheCoresTheProcessMayUse) {
  EXPECT_EQ(runnable_threads(2, 2), 2);
  EXPECT_EQ(runnable_threads(2, 1), 1);  // 2 threads pinned to 1 core
  EXPECT_EQ(runnable_threads(2, 16), 2);
  EXPECT_EQ(runnable_threads(2, 0), 2);  // mask unknown: the threads
  EXPECT_DOUBLE_EQ(probe_core_share(0.2, 0.1, 2), 1.0);
  EXPECT_DOUBLE_EQ(probe_core_share(0.1, 0.1, 2), 0.5);  // a hog on each core
  EXPECT_DOUBLE_EQ(probe_core_share(0.1, 0.1, runnable_threads(2, 1)), 1.0);
  EXPECT_DOUBLE_EQ(probe_core_share(0.05, 0.1, runnable_threads(2, 1)), 0.5);  // and a hog
  EXPECT_DOUBLE_EQ(probe_core_share(0.5, 0.1, 2), 1.0);                        // capped
  EXPECT_DOUBLE_EQ(probe_core_share(0.0, 0.1, 2), 1.0);  // no measurement: not busy
  EXPECT_DOUBLE_EQ(probe_core_share(0.1, 0.0, 2), 1.0);
}

// The cache keeps the highest peak probed: a probe at the end of a run raises an entry a slow first
// probe left low, and never lowers one. The entry's key is whatever machine_peak wrote.
TEST(MachinePeak, ARaisedProbeReplacesALowerCachedPeakAndNeverAHigherOne) {
  const fs::path dir = fs::temp_directory_path() / ("cpuft-peaks-" + std::to_string(getpid()));
  fs::create_directories(dir);
  struct RemoveDir {
    fs::path dir;
    ~RemoveDir() { fs::remove_all(dir); }
  } remove_dir{dir};
  const std::string path = (dir / "peaks.json").string();
  const ScopedEnv cache_env("CPUFT_PEAK_CACHE", path);
  const ScopedEnv share_env("CPUFT_PEAK_MIN_SHARE", "0");  // count the probes whatever else runs
  // The file holds one entry, whatever its key (this machine's CPU and threads).
  auto read_entry = [&] {
    std::ifstream in(path);
    const json cache = json::parse(in);
    return cache.size() == 1 ? cache.begin()->at("gflops").get<double>() : -1.0;
  };
  auto set_entry = [&](double gflops) {
    json cache;
    std::ifstream(path) >> cache;
    cache.begin()->at("gflops") = gflops;
    std::ofstream(path) << cache.dump(2);
  };

  // Planted figures relative to the first probe: 1000x below and above it, far outside any probe's
  // spread on any machine (under qemu the probe reads about 0.2 GFLOP/s).
  const MachinePeak first = machine_peak(false, 1);
  ASSERT_FALSE(first.cached);
  ASSERT_TRUE(first.saved);
  ASSERT_GT(first.peak.gflops, 0.0);
  ASSERT_DOUBLE_EQ(read_entry(), first.peak.gflops);
  const double too_low = first.peak.gflops / 1000, too_high = first.peak.gflops * 1000;
  set_entry(too_low);  // as a probe in a very slow moment would have left it
  const MachinePeak low = machine_peak(false, 1);
  ASSERT_TRUE(low.cached);
  ASSERT_DOUBLE_EQ(low.peak.gflops, too_low);
  const MachinePeak raised = raise_machine_peak(false, 1, low);
  EXPECT_GT(raised.peak.gflops, too_low);
  EXPECT_TRUE(raised.saved);
  EXPECT_DOUBLE_EQ(read_entry(), raised.peak.gflops);
  EXPECT_DOUBLE_EQ(machine_peak(false, 1).peak.gflops, raised.peak.gflops);

  set_entry(too_high);  // higher than any probe here: stays
  const MachinePeak again = raise_machine_peak(false, 1, low);
  EXPECT_GT(again.peak.gflops, too_low);  // the higher of the run's peak and the probe
  EXPECT_LT(again.peak.gflops, too_high);
  EXPECT_FALSE(again.saved);
  EXPECT_DOUBLE_EQ(read_entry(), too_high);
  // A current peak above the probe's comes back unchanged.
  MachinePeak high = low;
  high.peak.gflops = too_high;
  EXPECT_DOUBLE_EQ(raise_machine_peak(false, 1, high).peak.gflops, too_high);
}

}  // namespace
}  // namespace cpuft
