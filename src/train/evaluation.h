// Evaluation and prediction of a `cpuft train` run (--eval_strategy, --do_eval, --do_predict):
// every rank runs its share of the rows, the logits are gathered, and the metrics are the ones a
// single process computes. Internal to src/train.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "train/trainer.h"

namespace cpuft {

// Evaluates every evaluation split; returns {"eval_accuracy": ..., "eval_loss": ..., ...}.
nlohmann::json evaluate(Trainer::State& s);

// The evaluation at the end (--do_eval): eval_results.json on rank 0. Returns the metrics.
nlohmann::json evaluate_at_end(Trainer::State& s, const std::filesystem::path& out);

// --do_predict: predict_results_<task>.txt (GLUE submission format) and, with --save_logits,
// predict_logits_<task>.tsv, on rank 0.
void write_predictions(Trainer::State& s, const std::filesystem::path& out);

}  // namespace cpuft
