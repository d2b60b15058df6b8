// TrainConfig: every flag of `cpuft train`, typed and validated once.
//
// Names and defaults are those of transformers' run_glue.py (ModelArguments,
// DataTrainingArguments) and TrainingArguments, so a run_glue.py command line works unchanged.
// The flags themselves (what each one sets, maps to, or why it changes nothing) are the table in
// train_flags.cc.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gemm/matmul_plan.h"

namespace cpuft {

struct TrainConfig {
  // Model and data (run_glue.py's ModelArguments and DataTrainingArguments)
  std::string model_name_or_path;  // a folder, or a hub name found in the Hugging Face cache
  std::string config_name, tokenizer_name;        // other folders/names for config.json, tokenizer
  std::string model_revision = "main";            // hub cache: refs/<revision> or a snapshot hash
  std::string cache_dir;                          // hub cache root (else HF_HUB_CACHE, HF_HOME, ~)
  std::string task_name;                          // cola sst2 mrpc stsb qqp mnli qnli rte wnli
  std::string dataset_name, dataset_config_name;  // "glue" + a task: same as --task_name
  std::string data_dir;  // GLUE folder (download_glue_data.py layout); cpuft addition
  std::string train_file, validation_file, test_file;
  int max_seq_length = 128;
  int64_t max_train_samples = -1, max_eval_samples = -1, max_predict_samples = -1;

  // What to do
  bool do_train = false, do_eval = false, do_predict = false;
  std::string output_dir;
  bool overwrite_output_dir = false;
  // A checkpoint folder; "true": the latest checkpoint in output_dir; "false"/"": none.
  std::string resume_from_checkpoint;
  // Resuming: start the current epoch's data from its beginning instead of skipping the batches
  // already trained (HF's meaning); also allows resuming with another global batch.
  bool ignore_data_skip = false;

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
  std::string lr_scheduler_kwargs;  // a JSON object, e.g. {"num_cycles": 2}
  double warmup_ratio = 0.0;
  double warmup_steps = 0;  // transformers 5: a value below 1 is a ratio of the total steps
  std::string optim = "adamw_torch";
  std::string optim_args;  // "momentum=0.9,nesterov=True"
  double label_smoothing_factor = 0.0;
  uint64_t seed = 42;
  int64_t data_seed = -1;  // -1: seed
  bool group_by_length = false;
  // Recompute each layer's GELU output and attention probabilities in backward instead of keeping
  // them (HF's flag; ModelLimits::recompute): less memory, a slower step.
  bool gradient_checkpointing = false;
  bool dataloader_drop_last = false;
  bool bf16 = false;

  // Logging, evaluation, saving. A *_steps value below 1 is a ratio of the total steps (as HF).
  std::string logging_strategy = "steps";
  double logging_steps = 500;
  bool logging_first_step = false;
  std::string logging_dir;                     // "": output_dir/runs/<date>_<host>
  std::vector<std::string> report_to{"none"};  // none | all | tensorboard
  std::string run_name;                        // "": output_dir
  std::string log_level = "passive";           // debug info warning error critical passive
  std::string eval_strategy = "no";            // no | steps | epoch
  double eval_steps = -1;                      // -1: logging_steps
  double eval_delay = 0;  // no evaluation before this many steps (epochs for epoch)
  bool eval_on_start = false;
  std::string save_strategy = "steps";  // no | steps | epoch | best
  double save_steps = 500;
  int64_t save_total_limit = -1;
  bool save_on_each_node = false;
  bool load_best_model_at_end = false;
  std::string metric_for_best_model;  // "": loss
  int greater_is_better = -1;         // -1: unset (true unless the metric is a loss)

  // Distribution (cpuft additions, and TrainingArguments' ddp_* mapped onto them)
  std::string dist_backend = "auto";  // auto | mpi | ccl | single
  // Gradient bucket size, as DDP's bucket_cap_mb; 0: a bucket for each encoder layer's FFN block
  // and one for the rest of the layer, at most 25 MB (make_bucket_plan).
  double bucket_cap_mb = 0;
  // The dtype the gradients travel in between ranks: float32, or bfloat16 as PyTorch DDP's
  // bf16_compress_hook (GradReducer::set_bf16_exchange).
  std::string gradient_exchange_dtype = "float32";
  // A run stopped by SIGTERM/SIGINT/SIGUSR1 (checkpoint saved) exits 0 instead of 128 + signal:
  // for job scripts that requeue on success.
  bool stop_exit_zero = false;
  double dist_timeout = 300;  // seconds a collective may take before the run fails
  std::string timeline_dir;   // write chrome://tracing timelines here (one per rank)
  int local_rank = -1;        // as given by --local_rank; checked against the launcher

  bool disable_tqdm = false;  // no progress bar; without it the bar shows when stderr is a tty
  bool save_logits = false;   // also write predict_logits_<task>.tsv (cpuft addition)

  // Every argument as given (flag -> value text), for training_args.json; and one line per flag
  // that changes nothing here, printed once at start.
  std::vector<std::pair<std::string, std::string>> given;
  std::vector<std::string> notices;
};

// When something happens during training (HF's IntervalStrategy): never, every `every` optimizer
// steps, or at the end of each epoch. Parsed once from a `*_strategy` flag, so the loop compares
// no strings.
struct Cadence {
  enum class Kind { no, steps, epoch };
  Kind kind = Kind::no;
  int64_t every = 0;  // for Kind::steps

  // "no" | "steps" | "epoch" ("best" is no cadence: saving on a new best is the trainer's). An
  // interval below 1 is a fraction of max_steps, rounded up, as HF's Trainer reads it.
  static Cadence parse(const std::string& strategy, double every, int64_t max_steps);
  bool due(int64_t global_step, bool epoch_end) const {
    return kind == Kind::steps ? global_step % every == 0 : kind == Kind::epoch && epoch_end;
  }
};

// Checks values and combinations; throws UsageError naming the flag. Resolves --dataset_name glue
// --dataset_config_name T into --task_name T. cpu_has_bf16: whether this CPU runs bf16 products
// natively (tests pass both).
void validate_train_config(TrainConfig& config, bool cpu_has_bf16 = cpu_has_bf16_matmul());

}  // namespace cpuft
