// Writes one TensorBoard event file the way `cpuft train --report_to tensorboard` will: the
// "args" and "model_config" texts of on_train_begin, then train and eval log entries through the
// transformers on_log mapping. Fixed steps, values and wall times, which read_events_test.py
// expects back from TensorBoard's own reader.
// Usage: write_events LOG_DIR   (prints the event file's path)
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>

#include "io/tensorboard_logs.h"
#include "io/tensorboard_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_events LOG_DIR\n");
    return 2;
  }
  try {
    cpuft::TensorBoardWriter writer(argv[1]);
    writer.add_text("args", R"({"output_dir": "out", "learning_rate": 5e-05})", 0, 1700000000.0);
    writer.add_text("model_config", R"({"model_type": "bert", "hidden_size": 32})", 0,
                    1700000000.0);
    const char* entries[] = {
        R"({"loss": 0.6931, "grad_norm": 1.5, "learning_rate": 4e-05, "epoch": 0.5, "step": 10})",
        R"({"loss": 0.5, "grad_norm": 1.25, "learning_rate": 2e-05, "epoch": 1.0, "step": 20})",
        R"({"eval_loss": 0.45, "eval_accuracy": 0.8125, "eval_runtime": 1.5, "epoch": 1.0,
            "step": 20})",
        R"({"train_runtime": 12.5, "train_loss": 0.59, "total_flos": 123456, "step": 20})",
    };
    double wall_time = 1700000001.0;
    for (const char* entry : entries) {
      cpuft::write_tensorboard_log(
          writer, cpuft::tensorboard_log(nlohmann::ordered_json::parse(entry)), wall_time);
      wall_time += 1.0;
    }
    writer.close();
    std::printf("%s\n", writer.path().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
