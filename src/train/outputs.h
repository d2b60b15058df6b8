// Files of a Trainer output folder, written as HF's Trainer writes them, each one atomically
// (core/atomic_file.h: temporary file, fsync, rename) so an interrupted run never leaves a
// half-written file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/atomic_file.h"

namespace cpuft {

// `v` rounded to `digits` decimals, as HF's Trainer rounds the values it logs.
double round_to(double v, int digits);

// `value` as HF writes JSON files (indent 2, a final newline), atomically.
void write_json(const std::string& path, const nlohmann::json& value);

// config.json of the fine-tuned model: the input config.json with the architecture, labels,
// problem type and task set, so AutoModelForSequenceClassification loads it.
nlohmann::json fine_tuned_config(const std::string& original_config_text,
                                 const std::vector<std::string>& label_names, bool regression,
                                 const std::string& task_name);

// An SVG chart of the training loss against the step, with each evaluation's metrics as points on
// a second axis. `log_history` is trainer_state.json's list.
std::string training_curves_svg(const nlohmann::json& log_history, const std::string& title);

}  // namespace cpuft
