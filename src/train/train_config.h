// TrainConfig: every flag of `cpuft train`, typed and validated once.
//
// Names and defaults are those of transformers' run_glue.py (ModelArguments,
// DataTrainingArguments) and TrainingArguments, so a run_glue.py command line works unchanged.
// cpuft's own additions are marked; flags run_glue.py accepts that change nothing here (report_to,
// ...) are accepted and ignored, as listed in docs/cli.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gemm/matmul_plan.h"

namespace CLI {
class App;
}

namespace cpuft {

struct TrainConfig {
  // Model and data
  std::string model_name_or_path;
  std::string task_name;  // cola sst2 mrpc stsb qqp mnli qnli rte wnli
  std::string data_dir;   // GLUE folder (download_glue_data.py layout); cpuft addition
  std::string train_file, validation_file, test_file;
  int max_seq_length = 128;
  bool pad_to_max_length = true;  // accepted; results are identical either way (docs/cli.md)
  int64_t max_train_samples = -1, max_eval_samples = -1, max_predict_samples = -1;

  // What to do
  bool do_train = false, do_eval = false, do_predict = false;
  std::string output_dir;
  bool overwrite_output_dir = false;
  std::string resume_from_checkpoint;

  // Optimisation
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  double num_train_epochs = 3.0;
  int64_t max_steps = -1;
  std::string lr_scheduler_type = "linear";
  double warmup_ratio = 0.0;
  int64_t warmup_steps = 0;
  uint64_t seed = 42;
  bool group_by_length = false;
  bool bf16 = false;

  // Logging, evaluation, saving
  std::string logging_strategy = "steps";
  int64_t logging_steps = 500;
  std::string eval_strategy = "no";  // no | steps | epoch
  int64_t eval_steps = -1;           // -1: logging_steps
  std::string save_strategy = "steps";
  int64_t save_steps = 500;
  int64_t save_total_limit = -1;
  // Distribution (cpuft additions)
  std::string dist_backend = "auto";  // auto | mpi | ccl | single
  double bucket_cap_mb = 25;          // gradient bucket size, as DDP's bucket_cap_mb
  double dist_timeout = 300;          // seconds a collective may take before the run fails
  std::string timeline_dir;           // write chrome://tracing timelines here (one per rank)

  bool disable_tqdm = false;  // no progress bar; without it the bar shows when stderr is a tty
  bool save_logits = false;   // also write predict_logits_<task>.tsv (cpuft addition)
};

// When something happens during training (HF's IntervalStrategy): never, every `every` optimizer
// steps, or at the end of each epoch. Parsed once from a `*_strategy` flag, so the loop compares
// no strings.
struct Cadence {
  enum class Kind { no, steps, epoch };
  Kind kind = Kind::no;
  int64_t every = 0;  // for Kind::steps

  // "no" | "steps" | "epoch" (validate_train_config has refused anything else).
  static Cadence parse(const std::string& strategy, int64_t every);
  bool due(int64_t global_step, bool epoch_end) const {
    return kind == Kind::steps ? global_step % every == 0 : kind == Kind::epoch && epoch_end;
  }
};

// Registers every flag on `app`, bound to `config`.
void add_train_flags(CLI::App& app, TrainConfig& config);

// HfArgumentParser's boolean grammar on a command line (arguments after the program name):
// "--flag" alone is true, and "--flag V" or "--flag=V" with V one of true/false, yes/no, t/f,
// y/n, 1/0 (any case, as transformers' string_to_bool) sets it to V. Returns the arguments with
// every such value folded into "--flag=true" / "--flag=false", the form the parser reads, for the
// flags named in `boolean_flags` (names without "--").
std::vector<std::string> fold_boolean_values(const std::vector<std::string>& args,
                                             const std::vector<std::string>& boolean_flags);
// The boolean flags of cpuft train.
std::vector<std::string> boolean_train_flags();

// Reads a run_glue-style JSON args file ({"model_name_or_path": ..., "do_train": true, ...}) into
// config; unknown keys are an error naming the key.
void load_train_config_json(const std::string& path, TrainConfig& config);

// Checks values and combinations; throws cpuft::Error naming the flag. cpu_has_bf16: whether this
// CPU runs bf16 products natively (tests pass both).
void validate_train_config(const TrainConfig& config, bool cpu_has_bf16 = cpu_has_bf16_matmul());

}  // namespace cpuft
