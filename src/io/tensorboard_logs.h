// What transformers' TensorBoardCallback (transformers 5.24, integrations/integration_utils.py)
// writes for `--report_to tensorboard`, as pure functions; the events themselves go through
// TensorBoardWriter (io/tensorboard_writer.h).
//
//   on_train_begin: add_text("args", TrainingArguments.to_json_string()) and, when the model has a
//                   config, add_text("model_config", config.to_json_string()); both without a step.
//   on_log(logs):   rewrite_logs(logs), then for each key in order: a number (int, float; bool is
//                   an int in Python) -> add_scalar(key, value, global_step); a string ->
//                   add_text(key, value, global_step); anything else is dropped with a warning.
//                   Nothing is skipped by name. Then flush().
//   rewrite_logs:   "eval_x" -> "eval/x", "test_x" -> "test/x", every other key k -> "train/k".
//   log dir:        $TENSORBOARD_LOGGING_DIR (with ~ expanded) if set, else
//                   <output_dir>/runs/<%b%d_%H-%M-%S local time>_<hostname> (default_logdir()).
#pragma once

#include <cstdint>
#include <ctime>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace cpuft {

class TensorBoardWriter;

// rewrite_logs for one key.
std::string tensorboard_tag(const std::string& log_key);

struct TensorBoardLog {
  struct Scalar {
    std::string tag;
    float value = 0;  // simple_value is a float32, as SummaryWriter stores a Python float
  };
  struct Text {
    std::string tag;  // without "/text_summary" (TensorBoardWriter::add_text adds it)
    std::string text;
  };
  int64_t step = 0;
  std::vector<Scalar> scalars;
  std::vector<Text> texts;
  std::vector<std::string> warnings;  // one line per dropped value, HF's wording
};

// One entry of trainer_state.json's log_history ({"loss": .., "learning_rate": .., "epoch": ..,
// "step": N} or {"eval_accuracy": .., "step": N}): its "step" is the global step on_log writes at
// (HF adds "step" to log_history, on_log never sees it), every other key is what on_log received.
// Keys are visited in the object's order (nlohmann::ordered_json keeps the Trainer's order;
// nlohmann::json sorts them, which changes only the order of the records). Throws cpuft::Error if
// the entry is not an object or has no integer "step".
TensorBoardLog tensorboard_log(const nlohmann::json& log_history_entry);
TensorBoardLog tensorboard_log(const nlohmann::ordered_json& log_history_entry);

// on_log's writes: the scalars and texts of `log` at log.step, all with wall_time (default now),
// then flush().
void write_tensorboard_log(TensorBoardWriter& writer, const TensorBoardLog& log,
                           std::optional<double> wall_time = std::nullopt);

// default_logdir() joined to output_dir, for a given local time and host name; env_logging_dir is
// $TENSORBOARD_LOGGING_DIR (nullopt when unset) and home is $HOME (for its "~").
std::string tensorboard_log_dir(const std::string& output_dir,
                                const std::optional<std::string>& env_logging_dir,
                                const std::tm& local_time, const std::string& hostname,
                                const std::string& home);
// The same with this process's environment, clock and host name.
std::string tensorboard_log_dir(const std::string& output_dir);

}  // namespace cpuft
