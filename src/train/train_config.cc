#include "train/train_config.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "optim/lr_schedule.h"
#include "train/hf_arguments.h"

namespace cpuft {

void validate_train_config(TrainConfig& c, bool cpu_has_bf16) {
  // Every problem here is a bad flag value or combination: a usage error (exit 2).
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw UsageError(message);
  };
  // --dataset_name glue --dataset_config_name mrpc is run_glue.py's other way to say --task_name.
  if (!c.dataset_name.empty()) {
    require(c.dataset_name == "glue" || c.dataset_name == "nyu-mll/glue",
            "--dataset_name " + c.dataset_name +
                ": cpuft reads the GLUE tasks (glue or nyu-mll/glue); other data via "
                "--train_file/--validation_file/--test_file");
    require(!c.dataset_config_name.empty(), "--dataset_name glue needs --dataset_config_name TASK");
    require(c.task_name.empty() || c.task_name == c.dataset_config_name,
            "--task_name and --dataset_config_name name different tasks");
    c.task_name = c.dataset_config_name;
  }
  require(!c.model_name_or_path.empty(), "--model_name_or_path is required");
  require(!c.output_dir.empty(), "--output_dir is required");
  require(c.do_train || c.do_eval || c.do_predict,
          "nothing to do: give --do_train, --do_eval and/or --do_predict");
  const bool files = !c.train_file.empty() || !c.validation_file.empty() || !c.test_file.empty();
  require(!(files && !c.task_name.empty()),
          "give either --task_name or --train_file/--validation_file/--test_file, not both");
  require(files || !c.task_name.empty(),
          "no data: give --task_name, or --train_file/--validation_file/--test_file");
  require(!c.do_train || !c.task_name.empty() || !c.train_file.empty(),
          "--do_train needs --task_name or --train_file");
  require(!c.do_eval || !c.task_name.empty() || !c.validation_file.empty(),
          "--do_eval needs --task_name or --validation_file");
  require(!c.do_predict || !c.task_name.empty() || !c.test_file.empty(),
          "--do_predict needs --task_name or --test_file");
  require(c.max_seq_length >= 3 && c.max_seq_length <= 4096,
          str("--max_seq_length must be in [3, 4096], got ", c.max_seq_length));
  require(c.per_device_train_batch_size >= 1, "--per_device_train_batch_size must be >= 1");
  require(c.per_device_eval_batch_size >= 1, "--per_device_eval_batch_size must be >= 1");
  require(c.gradient_accumulation_steps >= 1, "--gradient_accumulation_steps must be >= 1");
  require(c.learning_rate >= 0, "--learning_rate must be >= 0");
  require(c.weight_decay >= 0, "--weight_decay must be >= 0");
  require(c.adam_beta1 >= 0 && c.adam_beta1 < 1 && c.adam_beta2 >= 0 && c.adam_beta2 < 1,
          "--adam_beta1/--adam_beta2 must be in [0, 1)");
  require(c.adam_epsilon > 0, "--adam_epsilon must be > 0");
  require(c.max_grad_norm >= 0, "--max_grad_norm must be >= 0");
  require(c.max_steps > 0 || c.num_train_epochs > 0,
          "--num_train_epochs must be > 0 (or give --max_steps)");
  require(c.num_train_epochs <= 1e6, "--num_train_epochs must be at most 1e6");
  require(c.warmup_ratio >= 0 && c.warmup_ratio <= 1, "--warmup_ratio must be in [0, 1]");
  require(c.warmup_steps >= 0, "--warmup_steps must be >= 0");
  require(c.label_smoothing_factor >= 0 && c.label_smoothing_factor < 1,
          "--label_smoothing_factor must be in [0, 1)");
  const std::vector<std::string> optimizers{"adamw_torch", "adamw_torch_fused", "adamw_hf", "sgd"};
  require(std::find(optimizers.begin(), optimizers.end(), c.optim) != optimizers.end(),
          "--optim " + c.optim + ": cpuft has adamw_torch (= adamw_torch_fused, adamw_hf) and sgd");
  try {  // the schedule's name and lr_scheduler_kwargs, checked before anything is read
    make_lr_schedule(c.lr_scheduler_type, 1.0, 0, 10, c.lr_scheduler_kwargs);
  } catch (const Error& e) {
    throw UsageError(str("--lr_scheduler_type ", c.lr_scheduler_type, ": ", e.what()));
  }
  auto strategy = [&](const std::string& flag, const std::string& value, bool best_allowed) {
    require(
        value == "no" || value == "steps" || value == "epoch" || (best_allowed && value == "best"),
        str("--", flag, " must be no, steps, epoch", best_allowed ? " or best" : "", ", got '",
            value, "'"));
  };
  strategy("eval_strategy", c.eval_strategy, false);
  strategy("save_strategy", c.save_strategy, true);
  strategy("logging_strategy", c.logging_strategy, false);
  require(c.eval_strategy == "no" || !c.validation_file.empty() || !c.task_name.empty(),
          "--eval_strategy needs evaluation data");
  require(c.logging_steps > 0, "--logging_steps must be > 0");
  require(c.save_steps > 0, "--save_steps must be > 0");
  require(c.eval_steps == -1 || c.eval_steps > 0, "--eval_steps must be > 0");
  require(c.eval_delay >= 0, "--eval_delay must be >= 0");
  if (c.load_best_model_at_end) {
    require(c.eval_strategy != "no",
            "--load_best_model_at_end needs evaluations: give --eval_strategy steps or epoch");
    require(c.save_strategy == "best" || c.save_strategy == c.eval_strategy,
            "--load_best_model_at_end needs --save_strategy equal to --eval_strategy (" +
                c.eval_strategy + ")");
    if (c.save_strategy == "steps" && c.eval_strategy == "steps") {
      const double eval_every = c.eval_steps > 0 ? c.eval_steps : c.logging_steps;
      require(std::fmod(c.save_steps, eval_every) == 0,
              str("--load_best_model_at_end needs --save_steps (", c.save_steps,
                  ") to be a multiple of --eval_steps (", eval_every, ")"));
    }
  }
  require(c.save_strategy != "best" || c.eval_strategy != "no",
          "--save_strategy best needs --eval_strategy steps or epoch");
  require(c.bucket_cap_mb >= 0,
          "--bucket_cap_mb must be > 0, or 0 for two buckets per encoder layer (FFN block, rest)");
  require(c.dist_timeout > 0, "--dist_timeout must be > 0");
  require(c.local_rank >= -1, "--local_rank must be >= 0");
  if (c.bf16) require_bf16_matmul("--bf16", cpu_has_bf16);
}

Cadence Cadence::parse(const std::string& strategy, double every, int64_t max_steps) {
  if (strategy == "steps") {
    CPUFT_CHECK(every > 0, "a steps cadence needs a positive interval");
    const double steps = every < 1 ? std::ceil(every * static_cast<double>(max_steps)) : every;
    return Cadence{Kind::steps, std::max<int64_t>(1, static_cast<int64_t>(steps))};
  }
  if (strategy == "epoch") return Cadence{Kind::epoch, 0};
  CPUFT_CHECK(strategy == "no" || strategy == "best", "unknown strategy ", strategy);
  return Cadence{};
}

}  // namespace cpuft
