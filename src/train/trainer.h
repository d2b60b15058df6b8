// Trainer: `cpuft train` — the run_glue.py + HF Trainer workflow, natively.
//
// It loads and checks everything (config, tokenizer, data, weights) before it creates the output
// folder, then trains, evaluates and predicts as the flags ask, and writes the Trainer's files.
#pragma once

#include <memory>

#include "train/train_config.h"

namespace cpuft {

class Trainer {
 public:
  explicit Trainer(const TrainConfig& config);
  ~Trainer();
  // Runs what the flags ask: training, then evaluation, then prediction.
  void run();

  struct State;  // opaque: everything a run holds

 private:
  std::unique_ptr<State> s_;
};

}  // namespace cpuft
