// The training loop of `cpuft train`: max_steps optimizer steps of the TrainStep over the epochs'
// batches, with logging, evaluation, checkpoints and the best model as the flags say. Internal to
// src/train (trainer.cc calls it).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "train/trainer.h"

namespace cpuft {

// Fine-tunes for max_steps optimizer steps, logging, evaluating and saving checkpoints on the way
// as the strategies say; then writes the model, config, tokenizer and train_results.json.
// Returns train_results. tty: whether to draw the progress bar.
nlohmann::json train(Trainer::State& s, const std::filesystem::path& out, bool tty);

}  // namespace cpuft
