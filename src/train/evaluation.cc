#include "train/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/timer.h"
#include "train/outputs.h"
#include "train/trainer_state.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cpuft {

namespace {

struct EvalResult {
  std::map<std::string, double> metrics;  // without prefix, loss included when labelled
  std::vector<float> logits;              // (n, K), every rank has all of them
};

// Rank r runs rows r, r + world, ... of `data`; the logits are gathered so every rank holds the
// whole table and computes the same metrics as a single process would.
EvalResult run_inference(Trainer::State& s, const EncodedDataset& data) {
  const int64_t K = s.model_config.num_labels;
  const bool regression = s.task.regression;
  const int rank = s.dist.rank(), world = s.dist.world_size();
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < data.size(); i += world) mine.push_back(i);
  std::vector<float> local(mine.size() * static_cast<size_t>(K));
  Batch batch;
  double loss_sum = 0;
  const auto batch_size = static_cast<size_t>(s.cfg.per_device_eval_batch_size);
  for (size_t start = 0; start < mine.size(); start += batch_size) {
    const size_t count = std::min(batch_size, mine.size() - start);
    fill_batch(batch, data, {mine.data() + start, count}, regression);
    StepContext context;
    context.training = false;
    const float loss = s.model->forward(s.p, batch, context, data.has_labels);
    loss_sum += static_cast<double>(loss) * static_cast<double>(count);
    std::copy_n(s.model->logits(), count * K, local.data() + start * K);
  }
  EvalResult result;
  result.logits = gather_strided_rows(*s.dist.comm, local, data.size(), K);
  if (!data.has_labels) return result;
  if (world > 1) {
    float total = static_cast<float>(loss_sum);
    s.dist.comm->wait(s.dist.comm->all_reduce_sum_async(&total, 1));
    loss_sum = total;
  }
  if (regression) {
    result.metrics = task_metrics(s.task, result.logits, data.scores);
  } else {
    std::vector<int32_t> predicted(static_cast<size_t>(data.size()));
    for (int64_t i = 0; i < data.size(); ++i) {
      const float* row = result.logits.data() + i * K;
      predicted[i] = static_cast<int32_t>(std::max_element(row, row + K) - row);
    }
    result.metrics = task_metrics(s.task, predicted, data.labels);
  }
  result.metrics["loss"] = data.size() > 0 ? loss_sum / static_cast<double>(data.size()) : 0.0;
  return result;
}

std::string format_prediction(const Trainer::State& s, const float* row) {
  const int64_t K = s.model_config.num_labels;
  if (s.task.regression) {
    char value[32];
    std::snprintf(value, sizeof value, "%3.3f", static_cast<double>(row[0]));
    return value;
  }
  return s.task.label_names[static_cast<size_t>(std::max_element(row, row + K) - row)];
}

}  // namespace

json evaluate(Trainer::State& s) {
  json out = json::object();
  for (const auto& [suffix, data] : s.eval) {
    Stopwatch watch;
    const EvalResult r = run_inference(s, data);
    const double seconds = watch.seconds();
    for (const auto& [key, value] : r.metrics) out["eval_" + key + suffix] = value;
    const double batches =
        std::ceil(static_cast<double>(data.size()) /
                  static_cast<double>(s.cfg.per_device_eval_batch_size * s.dist.world_size()));
    out["eval_runtime" + suffix] = round_to(seconds, 4);
    out["eval_samples_per_second" + suffix] =
        round_to(static_cast<double>(data.size()) / seconds, 3);
    out["eval_steps_per_second" + suffix] = round_to(batches / seconds, 3);
  }
  return out;
}

json evaluate_at_end(Trainer::State& s, const fs::path& out) {
  json eval_results = evaluate(s);
  eval_results["epoch"] = round_to(s.epoch, 4);
  for (const auto& [suffix, data] : s.eval) eval_results["eval_samples" + suffix] = data.size();
  if (s.is_writer()) write_json((out / "eval_results.json").string(), eval_results);
  json entry = eval_results;
  entry["step"] = s.global_step;
  s.log(entry);
  s.info("eval: " + eval_results.dump());
  return eval_results;
}

void write_predictions(Trainer::State& s, const fs::path& out) {
  const TrainConfig& c = s.cfg;
  for (const auto& [suffix, data] : s.test) {
    const EvalResult r = run_inference(s, data);
    if (!s.is_writer()) continue;
    const int64_t K = s.model_config.num_labels;
    std::string text = "index\tprediction\n";
    for (int64_t i = 0; i < data.size(); ++i)
      text += str(data.indices[i], "\t", format_prediction(s, r.logits.data() + i * K), "\n");
    const std::string task = s.task.task_name.empty() ? "data" : s.task.task_name;
    const std::string tag = str(task, suffix.empty() ? "" : "-mm");
    const fs::path results = out / str("predict_results_", tag, ".txt");
    write_file_atomically(results.string(), text);
    s.info("predictions: " + results.string());
    if (c.save_logits) {
      std::string logits = "index";
      for (int64_t k = 0; k < K; ++k) logits += str("\tlogit_", k);
      logits += "\n";
      for (int64_t i = 0; i < data.size(); ++i) {
        logits += str(data.indices[i]);
        for (int64_t k = 0; k < K; ++k) {
          char value[32];
          std::snprintf(value, sizeof value, "\t%.9g", static_cast<double>(r.logits[i * K + k]));
          logits += value;
        }
        logits += "\n";
      }
      write_file_atomically((out / str("predict_logits_", tag, ".tsv")).string(), logits);
    }
  }
}

}  // namespace cpuft
