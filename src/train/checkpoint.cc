#include "train/checkpoint.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include "core/atomic_file.h"
#include "core/check.h"
#include "io/hf_checkpoint.h"
#include "io/safetensors.h"
#include "train/encoded_dataset.h"
#include "train/outputs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cpuft {

namespace {

// checkpoint-N folders of output_dir, oldest first.
std::vector<std::pair<int64_t, fs::path>> checkpoints_of(const fs::path& output_dir) {
  std::vector<std::pair<int64_t, fs::path>> checkpoints;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(output_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !name.starts_with("checkpoint-")) continue;
    const std::string digits = name.substr(11);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    checkpoints.emplace_back(std::stoll(digits), entry.path());
  }
  std::sort(checkpoints.begin(), checkpoints.end());
  return checkpoints;
}

// Deletes a checkpoint folder by first renaming it to a temporary name: a run killed during the
// deletion leaves a .checkpoint-*.tmp folder, which the next run removes (output_lock.h), never a
// half-deleted checkpoint-N that would be taken for the latest.
void retire_checkpoint(const fs::path& dir) {
  const fs::path doomed = dir.parent_path() / str(".", dir.filename().string(), ".deleted.tmp");
  fs::remove_all(doomed);
  fs::rename(dir, doomed);
  fs::remove_all(doomed);
}

}  // namespace

std::string last_checkpoint(const fs::path& output_dir) {
  const auto checkpoints = checkpoints_of(output_dir);
  return checkpoints.empty() ? "" : checkpoints.back().second.string();
}

json trainer_state_json(int64_t global_step, double epoch, int64_t max_steps,
                        const json& log_history, const TrainConfig& c, const BestModel& best,
                        int world_size) {
  json state = {{"epoch", epoch},
                {"eval_steps", c.eval_steps > 0 ? c.eval_steps : c.logging_steps},
                {"global_step", global_step},
                {"is_hyper_param_search", false},
                {"is_local_process_zero", true},
                {"is_world_process_zero", true},
                {"log_history", log_history},
                {"logging_steps", c.logging_steps},
                {"max_steps", max_steps},
                {"num_train_epochs", c.num_train_epochs},
                {"save_steps", c.save_steps},
                {"train_batch_size", c.per_device_train_batch_size}};
  state["world_size"] = world_size;
  state["gradient_accumulation_steps"] = c.gradient_accumulation_steps;
  best.write_to(state);
  return state;
}

void check_resumable(const json& state, const std::string& dir, const TrainConfig& c,
                     int world_size, int64_t train_examples, int64_t max_steps) {
  const std::string where = dir + "/trainer_state.json";
  CPUFT_REQUIRE(state.contains("global_step") && state["global_step"].is_number_integer() &&
                    state["global_step"].get<int64_t>() >= 0,
                where, ": no global_step; not a checkpoint of a training run");
  const int64_t step = state["global_step"].get<int64_t>();
  CPUFT_REQUIRE(step < max_steps, where, ": the checkpoint is at step ", step,
                ", and this run stops at step ", max_steps,
                "; raise --max_steps or --num_train_epochs to train further");
  if (c.ignore_data_skip) return;
  // Checkpoints from before these fields, or from HF's Trainer, carry train_batch_size only: the
  // missing ones are taken as this run's.
  auto saved = [&](const char* key, int64_t now) {
    return state.contains(key) && state[key].is_number_integer() && state[key].get<int64_t>() > 0
               ? state[key].get<int64_t>()
               : now;
  };
  const int64_t batch = saved("train_batch_size", c.per_device_train_batch_size);
  const int64_t ranks = saved("world_size", world_size);
  const int64_t accumulation = saved("gradient_accumulation_steps", c.gradient_accumulation_steps);
  const std::string trained =
      str(where, ": the checkpoint was trained with ", batch, " sequences per device x ", ranks,
          " rank(s) x ", accumulation, " accumulation; this run has ",
          c.per_device_train_batch_size, " x ", world_size, " x ", c.gradient_accumulation_steps);
  const std::string advice =
      "; resume with the same global batch, or pass --ignore_data_skip to start the epoch's data "
      "over";
  CPUFT_REQUIRE(batch * ranks * accumulation ==
                    c.per_device_train_batch_size * world_size * c.gradient_accumulation_steps,
                trained, ": another global batch, the data order would not continue", advice);
  const int64_t steps_then = steps_per_epoch(train_examples, static_cast<int>(ranks), batch,
                                             accumulation, c.dataloader_drop_last);
  const int64_t steps_now =
      steps_per_epoch(train_examples, world_size, c.per_device_train_batch_size,
                      c.gradient_accumulation_steps, c.dataloader_drop_last);
  CPUFT_REQUIRE(steps_then == steps_now, trained, ": ", steps_then, " steps per epoch then, ",
                steps_now, " now, the data order would not continue", advice);
  CPUFT_REQUIRE(!c.group_by_length || batch == c.per_device_train_batch_size, trained,
                ": --group_by_length groups by the batch per device", advice);
}

void save_checkpoint(const fs::path& output_dir, const CheckpointContent& content,
                     const ParamLayout& layout, const float* params, Optimizer& optimizer,
                     const json& model_config, const Tokenizer& tokenizer, int64_t save_total_limit,
                     const TrainConfig& config) {
  const fs::path final_dir = output_dir / str("checkpoint-", content.global_step);
  const fs::path temp_dir = output_dir / str(".checkpoint-", content.global_step, ".tmp");
  fs::remove_all(temp_dir);
  fs::create_directories(temp_dir);
  try {
    save_hf_weights((temp_dir / "model.safetensors").string(), layout, params);
    write_json((temp_dir / "config.json").string(), model_config);
    tokenizer.save(temp_dir.string());
    // Per parameter, each state tensor in turn (AdamW: exp_avg, exp_avg_sq, as always).
    const std::vector<OptimizerState> buffers = optimizer.state_buffers();
    std::vector<TensorToWrite> state;
    for (const ParamSpec& spec : layout.specs())
      for (const OptimizerState& b : buffers)
        state.push_back({b.name + "." + spec.name, spec.shape, b.values->data() + spec.offset});
    write_safetensors(
        (temp_dir / "optimizer.safetensors").string(), state,
        {{str(optimizer.state_kind(), "_steps"), std::to_string(optimizer.steps_taken())}});
    write_json((temp_dir / "trainer_state.json").string(),
               trainer_state_json(content.global_step, content.epoch, content.max_steps,
                                  content.log_history, config, content.best, content.world_size));
  } catch (...) {
    // A full disk or a failing write: nothing of this checkpoint stays behind.
    std::error_code ignored;
    fs::remove_all(temp_dir, ignored);
    throw;
  }
  // Its files' entries, then its name: after a crash checkpoint-N is whole or absent.
  fsync_folder(temp_dir.string());
  if (fs::exists(final_dir)) retire_checkpoint(final_dir);  // saved again after a resume
  fs::rename(temp_dir, final_dir);
  fsync_folder(output_dir.string());

  if (save_total_limit <= 0) return;
  auto checkpoints = checkpoints_of(output_dir);
  // The best checkpoint moves to the newest end, so it is deleted last (HF's _sorted_checkpoints).
  const fs::path best = content.best.best_model_checkpoint();
  int64_t limit = save_total_limit;
  auto best_it = std::find_if(checkpoints.begin(), checkpoints.end(), [&](const auto& c) {
    std::error_code error;
    return !best.empty() && fs::equivalent(c.second, best, error);
  });
  if (best_it != checkpoints.end()) {
    if (limit == 1 && best_it + 1 != checkpoints.end()) limit = 2;
    std::rotate(best_it, best_it + 1, checkpoints.end());
  }
  for (size_t i = 0; static_cast<int64_t>(checkpoints.size() - i) > limit; ++i)
    retire_checkpoint(checkpoints[i].second);
}

void load_checkpoint_weights(const std::string& dir, const ParamLayout& layout, float* params) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a checkpoint folder");
  const SafetensorsFile weights = SafetensorsFile::open((root / "model.safetensors").string());
  // No tensor may be missing in a checkpoint, the head included.
  for (const ParamSpec& spec : layout.specs()) {
    const TensorInfo* t = weights.find(spec.name);
    CPUFT_REQUIRE(t != nullptr, weights.label(), ": missing tensor '", spec.name, "'");
    CPUFT_REQUIRE(t->shape == spec.shape, weights.label(), ": tensor '", spec.name,
                  "' has the wrong shape for this model");
    weights.read_f32(*t, params + spec.offset);
  }
}

ResumePoint load_checkpoint(const std::string& dir, const ParamLayout& layout, float* params,
                            Optimizer& optimizer) {
  const fs::path root(dir);
  load_checkpoint_weights(dir, layout, params);
  const SafetensorsFile file = SafetensorsFile::open((root / "optimizer.safetensors").string());
  // The optimizer that wrote it: the one metadata key "<state_kind>_steps".
  const std::string steps_key = str(optimizer.state_kind(), "_steps");
  for (const auto& [key, value] : file.metadata())
    CPUFT_REQUIRE(!key.ends_with("_steps") || key == steps_key, file.label(),
                  ": holds the state of optimizer '", key.substr(0, key.size() - 6),
                  "'; this run's is '", optimizer.state_kind(), "' (resume with the same optim)");
  auto steps = file.metadata().find(steps_key);
  CPUFT_REQUIRE(steps != file.metadata().end(), file.label(), ": metadata lacks '", steps_key, "'");
  const std::vector<OptimizerState> buffers = optimizer.state_buffers();
  CPUFT_REQUIRE(file.tensors().size() == buffers.size() * layout.specs().size(), file.label(),
                ": holds ", file.tensors().size(), " state tensors where this run's ",
                optimizer.state_kind(), " keeps ", buffers.size() * layout.specs().size(),
                " (another momentum setting?)");
  for (const ParamSpec& spec : layout.specs()) {
    for (const OptimizerState& b : buffers) {
      const TensorInfo* t = file.find(b.name + "." + spec.name);
      CPUFT_REQUIRE(t != nullptr && t->shape == spec.shape, file.label(),
                    ": missing or misshapen tensor '", b.name, ".", spec.name, "'");
      file.read_f32(*t, b.values->data() + spec.offset);
    }
  }
  optimizer.set_steps_taken(std::stoll(steps->second));

  std::ifstream state_in(root / "trainer_state.json");
  CPUFT_REQUIRE(state_in.good(), (root / "trainer_state.json").string(), ": cannot open");
  json state;
  try {
    state = json::parse(state_in);
  } catch (const json::exception& e) {
    throw Error(str((root / "trainer_state.json").string(), ": ", e.what()));
  }
  ResumePoint point;
  point.global_step = state.value("global_step", int64_t{0});
  point.log_history = state.value("log_history", json::array());
  point.trainer_state = state;
  return point;
}

}  // namespace cpuft
