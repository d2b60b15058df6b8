#include "train/train_flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

#include "data/utf8.h"

namespace cpuft {

namespace {

using Values = std::vector<std::string>;
using Setter = std::function<void(TrainConfig&, const Values&)>;
using Kind = FlagShape::Kind;

constexpr const char* kRunGlue = "run_glue";
constexpr const char* kHf = "TrainingArguments";
constexpr const char* kHf4 = "TrainingArguments 4.x";
constexpr const char* kCpuft = "cpuft";

std::string lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

int64_t parse_integer(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError(str("--", flag, ": expected an integer, got '", text, "'"));
  return value;
}

// An int field's value: a number beyond int's range would wrap (--max_seq_length 4294967424 would
// read as 128).
int parse_int(const std::string& flag, const std::string& text) {
  const int64_t value = parse_integer(flag, text);
  if (value < INT_MIN || value > INT_MAX)
    throw UsageError(str("--", flag, ": ", value, " is out of range"));
  return static_cast<int>(value);
}

double parse_number(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value))
    throw UsageError(str("--", flag, ": expected a finite number, got '", text, "'"));
  return value;
}

// Stores the flag's value(s) into a TrainConfig field of any supported type.
template <typename T>
Setter store(T TrainConfig::*field, const std::string& flag) {
  return [field, flag](TrainConfig& c, const Values& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      c.*field = v.at(0);
    } else if constexpr (std::is_same_v<T, bool>) {
      c.*field = v.at(0) == "true";
    } else if constexpr (std::is_same_v<T, double>) {
      c.*field = parse_number(flag, v.at(0));
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      c.*field = v;
    } else if constexpr (std::is_same_v<T, int>) {
      c.*field = parse_int(flag, v.at(0));
    } else {
      const int64_t value = parse_integer(flag, v.at(0));
      if constexpr (std::is_same_v<T, uint64_t>) {
        if (value < 0) throw UsageError(str("--", flag, ": must be >= 0, got ", value));
      }
      c.*field = static_cast<T>(value);
    }
  };
}

template <typename T>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return Kind::boolean;
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return Kind::list;
  return Kind::value;
}

using Getter = std::function<nlohmann::json(const TrainConfig&)>;

// A row with its name, class, shape and doc; the class's own fields are set by the callers.
TrainFlag row(const std::string& name, FlagClass cls, FlagShape shape, std::string doc) {
  TrainFlag flag;
  flag.name = name;
  flag.cls = cls;
  flag.shape = shape;
  flag.doc = std::move(doc);
  return flag;
}

template <typename T>
TrainFlag implemented(const std::string& name, T TrainConfig::*field, std::string doc,
                      const char* origin = kHf) {
  TrainFlag flag =
      row(name, FlagClass::implemented, FlagShape{kind_of<T>(), false}, std::move(doc));
  flag.set = store(field, name);
  flag.get = [field](const TrainConfig& c) { return nlohmann::json(c.*field); };
  flag.origin = origin;
  return flag;
}

TrainFlag implemented_with(const std::string& name, Kind kind, Setter set, Getter get,
                           std::string doc, const char* origin = kHf) {
  TrainFlag flag = row(name, FlagClass::implemented, FlagShape{kind, false}, std::move(doc));
  flag.set = std::move(set);
  flag.get = std::move(get);
  flag.origin = origin;
  return flag;
}

TrainFlag mapped(const std::string& name, Kind kind, Setter set, std::string doc,
                 const char* origin = kHf) {
  TrainFlag flag = row(name, FlagClass::mapped, FlagShape{kind, false}, std::move(doc));
  flag.set = std::move(set);
  flag.origin = origin;
  return flag;
}

TrainFlag noticed(const std::string& name, Kind kind, std::string doc, const char* origin = kHf,
                  bool default_true = false) {
  TrainFlag flag = row(name, FlagClass::noticed, FlagShape{kind, default_true}, std::move(doc));
  flag.origin = origin;
  return flag;
}

TrainFlag refused(const std::string& name, Kind kind, std::string doc, Values harmless,
                  const char* origin = kHf, bool default_true = false) {
  TrainFlag flag = row(name, FlagClass::refused, FlagShape{kind, default_true}, std::move(doc));
  flag.harmless = std::move(harmless);
  flag.origin = origin;
  return flag;
}

// --xpu_backend / --ddp_backend: torch.distributed backends -> cpuft's.
Setter backend_setter(const std::string& flag) {
  return [flag](TrainConfig& c, const Values& v) {
    const std::string b = lower(v.at(0));
    if (b == "mpi" || b == "ccl") {
      c.dist_backend = b;
    } else if (b == "gloo") {
      c.dist_backend = "auto";  // the launcher's own: MPI under mpirun/srun, oneCCL under torchrun
    } else {
      throw UsageError(str("--", flag, " ", v.at(0),
                           ": cpuft runs on CPUs over MPI or oneCCL; use mpi, ccl or gloo (the "
                           "launcher's own backend)"));
    }
  };
}

Setter one_of(const std::string& flag, std::string TrainConfig::*field,
              const std::vector<std::string>& allowed, const std::string& hint = "") {
  return [=](TrainConfig& c, const Values& v) {
    const std::string value = lower(v.at(0));
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw UsageError(str("--", flag, ": '", v.at(0), "' is not one of ", list, hint));
    }
    c.*field = value;
  };
}

std::vector<TrainFlag> make_table() {
  const Kind B = Kind::boolean, V = Kind::value, L = Kind::list;
  std::vector<TrainFlag> t;
  // ---- run_glue.py: ModelArguments, DataTrainingArguments
  t.push_back(implemented("model_name_or_path", &TrainConfig::model_name_or_path,
                          "Model folder, or a hub name (org/name) found in the Hugging Face cache",
                          kRunGlue));
  t.push_back(implemented("config_name", &TrainConfig::config_name,
                          "config.json from this folder or cached hub name instead", kRunGlue));
  t.push_back(implemented("tokenizer_name", &TrainConfig::tokenizer_name,
                          "Tokenizer from this folder or cached hub name instead", kRunGlue));
  t.push_back(implemented("cache_dir", &TrainConfig::cache_dir,
                          "Hugging Face hub cache to look hub names up in", kRunGlue));
  t.push_back(implemented("model_revision", &TrainConfig::model_revision,
                          "Hub cache revision: a branch or tag under refs/, or a commit",
                          kRunGlue));
  t.push_back(noticed("use_fast_tokenizer", B,
                      "cpuft's tokenizers give the fast tokenizers' ids either way", kRunGlue,
                      true));
  t.push_back(
      noticed("token", V, "no hub access: models come from folders or the cache", kRunGlue));
  t.push_back(noticed("use_auth_token", B, "no hub access: models come from folders or the cache",
                      kRunGlue));
  t.push_back(refused("trust_remote_code", B,
                      "cpuft runs no model code from a folder; it has its own BERT, DistilBERT, "
                      "RoBERTa, XLM-RoBERTa and ELECTRA",
                      {"false"}, kRunGlue));
  t.push_back(refused("ignore_mismatched_sizes", B,
                      "a classifier head with another label count is refused; give the base "
                      "model (without the head) or a checkpoint fine-tuned on this task",
                      {"false"}, kRunGlue));
  t.push_back(implemented("task_name", &TrainConfig::task_name,
                          "GLUE task: cola sst2 mrpc stsb qqp mnli qnli rte wnli", kRunGlue));
  t.push_back(implemented("dataset_name", &TrainConfig::dataset_name,
                          "glue (or nyu-mll/glue), with --dataset_config_name TASK", kRunGlue));
  t.push_back(implemented("dataset_config_name", &TrainConfig::dataset_config_name,
                          "The GLUE task, with --dataset_name glue", kRunGlue));
  t.push_back(implemented("max_seq_length", &TrainConfig::max_seq_length,
                          "Longest tokenized input; longer pairs are truncated (longest_first)",
                          kRunGlue));
  t.push_back(noticed("overwrite_cache", B, "cpuft keeps no dataset cache", kRunGlue));
  t.push_back(noticed("pad_to_max_length", B,
                      "cpuft never computes on padding; results are the same either way", kRunGlue,
                      true));
  t.push_back(implemented("max_train_samples", &TrainConfig::max_train_samples,
                          "Use only the first N training examples", kRunGlue));
  t.push_back(implemented("max_eval_samples", &TrainConfig::max_eval_samples,
                          "Use only the first N evaluation examples", kRunGlue));
  t.push_back(implemented("max_predict_samples", &TrainConfig::max_predict_samples,
                          "Use only the first N prediction examples", kRunGlue));
  t.push_back(implemented("train_file", &TrainConfig::train_file,
                          "Training data: .csv, .tsv or .json(l) (sentence1[, sentence2], label)",
                          kRunGlue));
  t.push_back(implemented("validation_file", &TrainConfig::validation_file,
                          "Evaluation data, same format as --train_file", kRunGlue));
  t.push_back(implemented("test_file", &TrainConfig::test_file,
                          "Prediction data, same format (label optional)", kRunGlue));

  // ---- TrainingArguments: what to do, where
  t.push_back(implemented("output_dir", &TrainConfig::output_dir,
                          "Where the model, results and checkpoints go"));
  t.push_back(implemented("overwrite_output_dir", &TrainConfig::overwrite_output_dir,
                          "Train into a non-empty output_dir (else: resume its last checkpoint)",
                          kHf4));
  t.push_back(implemented("do_train", &TrainConfig::do_train, "Fine-tune"));
  t.push_back(implemented("do_eval", &TrainConfig::do_eval, "Evaluate on the dev split"));
  t.push_back(implemented("do_predict", &TrainConfig::do_predict, "Predict the test split"));
  t.push_back(implemented("resume_from_checkpoint", &TrainConfig::resume_from_checkpoint,
                          "A checkpoint-N folder, or True: output_dir's latest checkpoint"));

  // ---- optimisation
  t.push_back(implemented("per_device_train_batch_size", &TrainConfig::per_device_train_batch_size,
                          "Training sequences per step per process"));
  t.push_back(implemented("per_device_eval_batch_size", &TrainConfig::per_device_eval_batch_size,
                          "Evaluation sequences per batch per process"));
  t.push_back(mapped("per_gpu_train_batch_size", V,
                     store(&TrainConfig::per_device_train_batch_size, "per_gpu_train_batch_size"),
                     "-> --per_device_train_batch_size", kHf4));
  t.push_back(mapped("per_gpu_eval_batch_size", V,
                     store(&TrainConfig::per_device_eval_batch_size, "per_gpu_eval_batch_size"),
                     "-> --per_device_eval_batch_size", kHf4));
  t.push_back(implemented("gradient_accumulation_steps", &TrainConfig::gradient_accumulation_steps,
                          "Micro-batches per optimizer step"));
  t.push_back(implemented("learning_rate", &TrainConfig::learning_rate, "Peak learning rate"));
  t.push_back(implemented("weight_decay", &TrainConfig::weight_decay,
                          "Weight decay (not on biases and LayerNorm weights)"));
  t.push_back(implemented("adam_beta1", &TrainConfig::adam_beta1, "AdamW beta1"));
  t.push_back(implemented("adam_beta2", &TrainConfig::adam_beta2, "AdamW beta2"));
  t.push_back(implemented("adam_epsilon", &TrainConfig::adam_epsilon, "AdamW epsilon"));
  t.push_back(implemented("max_grad_norm", &TrainConfig::max_grad_norm,
                          "Clip the global gradient norm to this (0: no clipping)"));
  t.push_back(implemented("num_train_epochs", &TrainConfig::num_train_epochs,
                          "Epochs (may be fractional)"));
  t.push_back(implemented("max_steps", &TrainConfig::max_steps,
                          "If > 0: total optimizer steps, overrides num_train_epochs"));
  t.push_back(implemented("lr_scheduler_type", &TrainConfig::lr_scheduler_type,
                          "linear, cosine, cosine_with_restarts, polynomial, constant, "
                          "constant_with_warmup, inverse_sqrt, cosine_with_min_lr, "
                          "cosine_warmup_with_min_lr or warmup_stable_decay"));
  t.push_back(implemented("lr_scheduler_kwargs", &TrainConfig::lr_scheduler_kwargs,
                          "JSON object of the schedule's extra arguments (e.g. {\"power\": 2})"));
  t.push_back(implemented("warmup_ratio", &TrainConfig::warmup_ratio,
                          "Warmup as a fraction of the total steps", kHf4));
  t.push_back(implemented("warmup_steps", &TrainConfig::warmup_steps,
                          "Warmup steps (below 1: a fraction of the total steps)"));
  t.push_back(implemented("optim", &TrainConfig::optim,
                          "adamw_torch (= adamw_torch_fused, adamw_hf) or sgd"));
  t.push_back(implemented("optim_args", &TrainConfig::optim_args,
                          "sgd: momentum, dampening, nesterov (\"momentum=0.9,nesterov=True\")"));
  t.push_back(refused("adafactor", B, "Adafactor is not implemented; use --optim adamw_torch",
                      {"false"}, kHf4));
  t.push_back(implemented("label_smoothing_factor", &TrainConfig::label_smoothing_factor,
                          "Label smoothing of the classification loss (0: none)"));
  t.push_back(implemented("seed", &TrainConfig::seed, "Seed of the shuffling, dropout, new head"));
  t.push_back(implemented_with(
      "data_seed", V,
      [](TrainConfig& c, const Values& v) { c.data_seed = parse_integer("data_seed", v.at(0)); },
      [](const TrainConfig& c) {
        return c.data_seed >= 0 ? nlohmann::json(c.data_seed) : nlohmann::json(nullptr);
      },
      "Seed of the data order alone (default: --seed)"));
  t.push_back(implemented("group_by_length", &TrainConfig::group_by_length,
                          "Batch sequences of similar length together", kHf4));
  t.push_back(implemented_with(
      "train_sampling_strategy", V,
      [](TrainConfig& c, const Values& v) {
        const std::string s = lower(v.at(0));
        if (s != "random" && s != "group_by_length")
          throw UsageError(str("--train_sampling_strategy: '", v.at(0),
                               "' is not one of random, group_by_length"));
        c.group_by_length = s == "group_by_length";
      },
      [](const TrainConfig& c) { return c.group_by_length ? "group_by_length" : "random"; },
      "random, or group_by_length"));
  t.push_back(implemented("dataloader_drop_last", &TrainConfig::dataloader_drop_last,
                          "Drop each epoch's last incomplete batch"));
  t.push_back(implemented("bf16", &TrainConfig::bf16,
                          "bfloat16 matrix products (fp32 weights, accumulation and the rest); "
                          "needs AVX512_BF16 or AMX"));
  t.push_back(refused("fp16", B, "CPUs have no fp16 training path here; use --bf16", {"false"}));
  t.push_back(refused("fp16_full_eval", B, "no fp16 on CPUs; use --bf16", {"false"}));
  t.push_back(noticed("bf16_full_eval", B, "evaluation uses the training precision (--bf16)"));
  t.push_back(noticed("fp16_opt_level", V, "Apex option; no fp16 here", kHf4));
  t.push_back(noticed("fp16_backend", V, "no fp16 here", kHf4));
  t.push_back(noticed("half_precision_backend", V, "no fp16 here; --bf16 is native", kHf4));
  t.push_back(noticed("tf32", B, "TF32 is a GPU format"));
  t.push_back(refused("neftune_noise_alpha", V, "NEFTune embedding noise is not implemented",
                      {"", "none", "0", "0.0"}));
  t.push_back(noticed("average_tokens_across_devices", B,
                      "sequence classification averages over examples; no token counts"));

  // ---- logging, evaluation, saving
  t.push_back(
      implemented("logging_strategy", &TrainConfig::logging_strategy, "steps, epoch or no"));
  t.push_back(implemented("logging_steps", &TrainConfig::logging_steps,
                          "Log every N steps (below 1: a fraction of the total steps)"));
  t.push_back(implemented("logging_first_step", &TrainConfig::logging_first_step,
                          "Also log after the first step"));
  t.push_back(implemented("logging_dir", &TrainConfig::logging_dir,
                          "TensorBoard folder (default output_dir/runs/DATE_HOST)", kHf4));
  t.push_back(implemented_with(
      "report_to", L,
      [](TrainConfig& c, const Values& v) {
        Values out;
        for (const std::string& value : v) {
          const std::string r = lower(value);
          if (r != "none" && r != "all" && r != "tensorboard")
            throw UsageError(str("--report_to ", value,
                                 ": cpuft writes tensorboard event files (no network services); "
                                 "use tensorboard, all or none"));
          out.push_back(r);
        }
        c.report_to = out;
      },
      [](const TrainConfig& c) { return nlohmann::json(c.report_to); },
      "none, all or tensorboard (event files in --logging_dir)"));
  t.push_back(implemented("run_name", &TrainConfig::run_name,
                          "Recorded in training_args.json (default output_dir); trackers name "
                          "runs by it, TensorBoard does not"));
  t.push_back(implemented_with(
      "log_level", V,
      one_of("log_level", &TrainConfig::log_level,
             {"debug", "info", "warning", "error", "critical", "passive"}),
      [](const TrainConfig& c) { return c.log_level; },
      "passive/info/debug: everything; warning: no progress lines; error/critical: errors only"));
  t.push_back(noticed("log_level_replica", V, "only rank 0 prints"));
  t.push_back(noticed("log_on_each_node", B, "only rank 0 prints", kHf, true));
  t.push_back(noticed("logging_nan_inf_filter", B,
                      "the logged loss is the loss computed (a non-finite loss stops the run)", kHf,
                      true));
  t.push_back(implemented("disable_tqdm", &TrainConfig::disable_tqdm,
                          "No progress bar (it shows only when stderr is a terminal anyway)"));
  t.push_back(implemented("eval_strategy", &TrainConfig::eval_strategy,
                          "Evaluate during training: no, steps or epoch"));
  t.push_back(mapped("evaluation_strategy", V, store(&TrainConfig::eval_strategy, "eval_strategy"),
                     "-> --eval_strategy", kHf4));
  t.push_back(implemented("eval_steps", &TrainConfig::eval_steps,
                          "Evaluate every N steps (default logging_steps; below 1: a fraction)"));
  t.push_back(
      implemented("eval_delay", &TrainConfig::eval_delay,
                  "No evaluation before this many steps (epochs with eval_strategy epoch)"));
  t.push_back(implemented("eval_on_start", &TrainConfig::eval_on_start,
                          "Evaluate once before the first step"));
  t.push_back(noticed("eval_accumulation_steps", V,
                      "evaluation keeps only logits, never a device's batch history"));
  t.push_back(noticed("prediction_loss_only", B, "the metrics are computed with the loss"));
  t.push_back(
      noticed("eval_do_concat_batches", B, "predictions are always whole arrays", kHf, true));
  t.push_back(noticed("eval_use_gather_object", B, "no Python objects to gather"));
  t.push_back(noticed("include_for_metrics", L, "metrics take predictions and labels"));
  t.push_back(
      noticed("include_inputs_for_metrics", B, "metrics take predictions and labels", kHf4));
  t.push_back(noticed("batch_eval_metrics", B, "metrics are computed over the whole split"));
  t.push_back(noticed("include_num_input_tokens_seen", V, "not logged"));
  t.push_back(noticed("include_tokens_per_second", B, "not logged", kHf4));
  t.push_back(noticed("skip_memory_metrics", B, "no memory metrics are collected", kHf, true));
  t.push_back(implemented("save_strategy", &TrainConfig::save_strategy,
                          "Save checkpoints: steps, epoch, best or no"));
  t.push_back(implemented("save_steps", &TrainConfig::save_steps,
                          "A checkpoint every N steps (below 1: a fraction of the total steps)"));
  t.push_back(implemented("save_total_limit", &TrainConfig::save_total_limit,
                          "Keep at most N checkpoints (the best one is never deleted)"));
  t.push_back(implemented("save_on_each_node", &TrainConfig::save_on_each_node,
                          "Every host's local rank 0 writes the checkpoints and model"));
  t.push_back(refused("save_safetensors", B, "cpuft writes only model.safetensors, never pickles",
                      {"true"}, kHf4, true));
  t.push_back(noticed("save_only_model", B,
                      "checkpoints also hold the optimizer state, so they can be resumed"));
  t.push_back(noticed("enable_jit_checkpoint", B, "no just-in-time checkpoints on signals"));
  t.push_back(noticed("restore_callback_states_from_checkpoint", B, "no callbacks"));
  t.push_back(implemented("load_best_model_at_end", &TrainConfig::load_best_model_at_end,
                          "Keep the best checkpoint and end with its weights"));
  t.push_back(implemented("metric_for_best_model", &TrainConfig::metric_for_best_model,
                          "Metric of the best checkpoint (default loss), e.g. accuracy or f1"));
  t.push_back(implemented_with(
      "greater_is_better", B,
      [](TrainConfig& c, const Values& v) { c.greater_is_better = v.at(0) == "true" ? 1 : 0; },
      [](const TrainConfig& c) {
        return c.greater_is_better < 0 ? nlohmann::json(nullptr)
                                       : nlohmann::json(c.greater_is_better == 1);
      },
      "Whether a higher metric is better (default: true unless the metric is a loss)"));
  t.push_back(implemented("ignore_data_skip", &TrainConfig::ignore_data_skip,
                          "Resuming: start the epoch's data over (also allows another global "
                          "batch) instead of skipping the batches already trained"));

  // ---- hardware, distribution
  t.push_back(noticed("no_cuda", B, "cpuft runs only on CPUs", kHf4));
  t.push_back(noticed("use_cpu", B, "cpuft runs only on CPUs"));
  t.push_back(noticed("use_mps_device", B, "cpuft runs only on CPUs", kHf4));
  t.push_back(
      noticed("use_ipex", B, "cpuft's own kernels run; there is no PyTorch to extend", kHf4));
  t.push_back(noticed("jit_mode_eval", B, "no TorchScript", kHf4));
  t.push_back(noticed("torch_compile", B, "no PyTorch to compile; the kernels are native"));
  t.push_back(noticed("torch_compile_backend", V, "no PyTorch to compile"));
  t.push_back(noticed("torch_compile_mode", V, "no PyTorch to compile"));
  t.push_back(noticed("torchdynamo", V, "no PyTorch to compile", kHf4));
  t.push_back(noticed("use_liger_kernel", B, "GPU kernels"));
  t.push_back(noticed("liger_kernel_config", V, "GPU kernels"));
  t.push_back(noticed("use_cache", B, "an encoder has no key/value cache"));
  t.push_back(noticed("torch_empty_cache_steps", V, "no device cache to empty"));
  t.push_back(implemented("gradient_checkpointing", &TrainConfig::gradient_checkpointing,
                          "Recompute each layer's GELU output and attention probabilities in "
                          "backward: less memory, a slower step (the same results, bit for bit)"));
  t.push_back(noticed("gradient_checkpointing_kwargs", V, "cpuft's recomputation has no options"));
  t.push_back(noticed("activation_checkpointing", B, "activations are kept"));
  t.push_back(noticed("activation_checkpointing_kwargs", V, "activations are kept"));
  t.push_back(noticed("auto_find_batch_size", B, "no device memory to run out of"));
  t.push_back(noticed("full_determinism", B,
                      "nothing to switch: a run repeats exactly for the same seed and ranks"));
  t.push_back(noticed("local_rank", V,
                      "cpuft reads the launcher itself; a value that is neither the launcher's "
                      "local nor global rank is an error",
                      kHf));
  t.push_back(mapped("xpu_backend", V, backend_setter("xpu_backend"),
                     "-> --dist_backend (mpi, ccl; gloo: the launcher's own)", kHf4));
  t.push_back(mapped("ddp_backend", V, backend_setter("ddp_backend"),
                     "-> --dist_backend (mpi, ccl; gloo: the launcher's own)"));
  t.push_back(mapped("ddp_bucket_cap_mb", V,
                     store(&TrainConfig::bucket_cap_mb, "ddp_bucket_cap_mb"),
                     "-> --bucket_cap_mb"));
  t.push_back(mapped("ddp_timeout", V, store(&TrainConfig::dist_timeout, "ddp_timeout"),
                     "-> --dist_timeout (seconds)"));
  t.push_back(noticed("ddp_find_unused_parameters", B, "every parameter gets a gradient"));
  t.push_back(noticed("ddp_broadcast_buffers", B, "an encoder has no buffers to broadcast"));
  t.push_back(noticed("ddp_static_graph", B, "the step is always the same graph"));
  t.push_back(noticed("dataloader_num_workers", V,
                      "the data is tokenized once before training; no loader workers"));
  t.push_back(noticed("dataloader_pin_memory", B, "no device memory", kHf, true));
  t.push_back(noticed("dataloader_persistent_workers", B, "no loader workers"));
  t.push_back(noticed("dataloader_prefetch_factor", V, "no loader workers"));
  t.push_back(noticed("dataloader_multiprocessing_context", V, "no loader workers"));
  t.push_back(noticed("dataloader_in_order", B, "batches are always in order", kHf, true));
  t.push_back(
      noticed("remove_unused_columns", B, "only the text and label columns are read", kHf, true));
  t.push_back(noticed("label_names", L, "the label column is 'label'"));
  t.push_back(noticed("length_column_name", V, "lengths are counted from the tokens"));
  t.push_back(noticed("past_index", V, "no past states", kHf4));
  t.push_back(noticed("tpu_num_cores", V, "no TPUs", kHf4));
  t.push_back(noticed("tpu_metrics_debug", B, "no TPUs", kHf4));
  t.push_back(noticed("debug", L, "no PyTorch debug options"));
  t.push_back(noticed("mp_parameters", V, "SageMaker option", kHf4));
  t.push_back(noticed("ray_scope", V, "no Ray tuning", kHf4));
  t.push_back(noticed("dispatch_batches", B, "accelerate option", kHf4));
  t.push_back(noticed("split_batches", B, "accelerate option", kHf4));
  t.push_back(noticed("accelerator_config", V, "accelerate option"));
  t.push_back(noticed("use_legacy_prediction_loop", B, "one prediction loop", kHf4));
  t.push_back(noticed("optim_target_modules", L, "GaLore option; --optim adamw_torch or sgd"));
  const Values none_values{"", "none", "false"};
  t.push_back(refused("fsdp", L,
                      "data parallel only: every rank holds the whole model; use mpirun -np N",
                      none_values));
  t.push_back(refused("fsdp_config", V, "no FSDP; data parallel only", none_values));
  t.push_back(refused("fsdp_min_num_params", V, "no FSDP; data parallel only", {"0"}, kHf4));
  t.push_back(refused("fsdp_transformer_layer_cls_to_wrap", V, "no FSDP; data parallel only",
                      none_values, kHf4));
  t.push_back(
      refused("deepspeed", V, "no DeepSpeed; data parallel over MPI or oneCCL", none_values));
  t.push_back(refused("parallelism_config", V, "data parallel only", none_values));
  t.push_back(refused("sharded_ddp", L, "data parallel only; use mpirun -np N", none_values, kHf4));

  // ---- hub and trackers: no network
  t.push_back(refused("push_to_hub", B,
                      "no network: the output folder is a Hugging Face model folder; upload it "
                      "with huggingface-cli upload",
                      {"false"}));
  for (const char* hub : {"hub_token", "hub_model_id", "hub_strategy", "hub_revision"})
    t.push_back(noticed(hub, V, "no --push_to_hub"));
  t.push_back(noticed("hub_private_repo", B, "no --push_to_hub"));
  t.push_back(noticed("hub_always_push", B, "no --push_to_hub"));
  for (const char* hub : {"push_to_hub_model_id", "push_to_hub_organization", "push_to_hub_token"})
    t.push_back(noticed(hub, V, "no --push_to_hub", kHf4));
  for (const char* tracker :
       {"project", "trackio_space_id", "trackio_bucket_id", "trackio_static_space_id"})
    t.push_back(noticed(tracker, V, "trackers other than tensorboard are not written"));

  // ---- cpuft's own
  t.push_back(implemented("data_dir", &TrainConfig::data_dir,
                          "Folder with the GLUE task folders (CoLA, MRPC, ...)", kCpuft));
  t.push_back(implemented_with(
      "dist_backend", V,
      one_of("dist_backend", &TrainConfig::dist_backend, {"auto", "mpi", "ccl", "single"}),
      [](const TrainConfig& c) { return c.dist_backend; },
      "auto (mpi under mpirun/mpiexec/srun, ccl under torchrun-style variables, else single), "
      "mpi, ccl (oneCCL) or single",
      kCpuft));
  t.push_back(implemented("bucket_cap_mb", &TrainConfig::bucket_cap_mb,
                          "Gradient all-reduce bucket size in MB (0: a bucket for each encoder "
                          "layer's FFN block and one for the rest, at most 25)",
                          kCpuft));
  t.push_back(implemented_with(
      "gradient_exchange_dtype", V,
      one_of("gradient_exchange_dtype", &TrainConfig::gradient_exchange_dtype,
             {"float32", "bfloat16"}),
      [](const TrainConfig& c) { return c.gradient_exchange_dtype; },
      "float32, or bfloat16: gradients averaged and rounded to bf16 before the all-reduce (half "
      "the bytes; PyTorch DDP's bf16_compress_hook)",
      kCpuft));
  t.push_back(implemented("dist_timeout", &TrainConfig::dist_timeout,
                          "Seconds a collective may take before the run stops with an error",
                          kCpuft));
  t.push_back(implemented("timeline_dir", &TrainConfig::timeline_dir,
                          "Write a chrome://tracing timeline per rank into this folder", kCpuft));
  t.push_back(implemented("save_logits", &TrainConfig::save_logits,
                          "With --do_predict, also write the logits", kCpuft));
  t.push_back(implemented("stop_exit_zero", &TrainConfig::stop_exit_zero,
                          "Exit 0 (not 128 + signal) when SIGTERM/SIGINT/SIGUSR1 stopped the run "
                          "after saving a checkpoint",
                          kCpuft));
  return t;
}

const TrainFlag* find_flag(const std::string& name) {
  static const std::map<std::string, const TrainFlag*> index = [] {
    std::map<std::string, const TrainFlag*> m;
    for (const TrainFlag& flag : train_flags()) m[flag.name] = &flag;
    return m;
  }();
  const auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

std::vector<std::string> all_flag_names() {
  std::vector<std::string> names;
  for (const TrainFlag& flag : train_flags()) names.push_back(flag.name);
  return names;
}

std::string joined(const Values& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : " ") + v;
  return out;
}

// Applies one given flag to config by its class.
void apply(const TrainFlag& flag, const GivenFlag& given, TrainConfig& config) {
  const std::string value = joined(given.values);
  const std::string where = given.origin == "command line" ? "" : str(" (", given.origin, ")");
  // Values end up in training_args.json and the logs, which are JSON: UTF-8 only.
  if (find_invalid_utf8(value) != std::string_view::npos)
    throw UsageError(str("--", flag.name, where, ": the value is not valid UTF-8"));
  switch (flag.cls) {
    case FlagClass::implemented:
      flag.set(config, given.values);
      break;
    case FlagClass::mapped:
      flag.set(config, given.values);
      config.notices.push_back(str("--", flag.name, " ", value, where, ": mapped ", flag.doc));
      break;
    case FlagClass::noticed:
      if (flag.name == "local_rank")
        config.local_rank = parse_int("local_rank", given.values.at(0));
      config.notices.push_back(
          str("--", flag.name, " ", value, where, ": accepted, changes nothing: ", flag.doc));
      break;
    case FlagClass::refused: {
      const std::string v = lower(value);
      if (std::find(flag.harmless.begin(), flag.harmless.end(), v) == flag.harmless.end())
        throw UsageError(str("--", flag.name, " ", value, where, ": ", flag.doc));
      config.notices.push_back(
          str("--", flag.name, " ", value, where, ": accepted, changes nothing"));
      break;
    }
  }
  config.given.emplace_back(flag.name, value);
}

}  // namespace

const std::vector<TrainFlag>& train_flags() {
  static const std::vector<TrainFlag> table = make_table();
  return table;
}

bool parse_train_arguments(const std::vector<std::string>& args, TrainConfig& config) {
  const std::vector<std::string> names = all_flag_names();
  const FlagLookup lookup = [](const std::string& name) -> std::optional<FlagShape> {
    if (const TrainFlag* flag = find_flag(name)) return flag->shape;
    return std::nullopt;
  };
  const ParsedCommandLine parsed = parse_command_line(args, lookup, names);
  if (parsed.help) return false;
  if (parsed.positional.size() > 1)
    throw UsageError(str("unexpected argument '", parsed.positional[1],
                         "' (one args file at most, then flags)"));
  std::vector<GivenFlag> flags;
  if (!parsed.positional.empty()) {
    const std::string& file = parsed.positional[0];
    if (!(file.ends_with(".json") || file.ends_with(".yaml") || file.ends_with(".yml")))
      throw UsageError(str("unexpected argument '", file,
                           "' (an args file ends in .json, .yaml or .yml; flags start with --)"));
    flags = read_args_file(file, lookup, names);
  }
  // The command line comes after the file, so it has the last word.
  for (const GivenFlag& given : parsed.flags) flags.push_back(given);
  // A flag given twice counts once, with its last value (notices and training_args.json too).
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < flags.size(); ++i) last[flags[i].name] = i;
  for (size_t i = 0; i < flags.size(); ++i)
    if (last[flags[i].name] == i) apply(*find_flag(flags[i].name), flags[i], config);
  return true;
}

namespace {

const char* class_name(FlagClass cls) {
  switch (cls) {
    case FlagClass::implemented:
      return "implemented";
    case FlagClass::mapped:
      return "mapped";
    case FlagClass::noticed:
      return "accepted, changes nothing";
    case FlagClass::refused:
      return "refused";
  }
  return "";
}

std::string spelled(const TrainFlag& flag) {
  std::string s = "--" + flag.name;
  if (flag.shape.kind == Kind::boolean && flag.shape.default_true) s += ", --no_" + flag.name;
  return s;
}

}  // namespace

nlohmann::json training_args_json(const TrainConfig& config) {
  nlohmann::json args = nlohmann::json::object();
  for (const TrainFlag& flag : train_flags())
    if (flag.cls == FlagClass::implemented) args[flag.name] = flag.get(config);
  // Flags of the other classes, as given (the mapped ones' targets are recorded above).
  for (const auto& [name, value] : config.given)
    if (find_flag(name)->cls != FlagClass::implemented) args[name] = value;
  if (config.run_name.empty()) args["run_name"] = config.output_dir;  // HF's default
  return args;
}

std::string train_flags_help() {
  std::string out =
      "Usage: cpuft train [ARGS.json|ARGS.yaml] [--flag value]...\n"
      "Fine-tune, evaluate and predict as run_glue.py does (flags as HfArgumentParser reads "
      "them: --flag V, --flag=V, --bool_flag [True|False], --no_bool_flag). docs/cli.md has the "
      "whole table.\n";
  for (FlagClass cls :
       {FlagClass::implemented, FlagClass::mapped, FlagClass::noticed, FlagClass::refused}) {
    out += str("\n", class_name(cls), ":\n");
    for (const TrainFlag& flag : train_flags())
      if (flag.cls == cls) out += str("  ", spelled(flag), "\n      ", flag.doc, "\n");
  }
  return out;
}

std::string train_flags_markdown() {
  std::string out =
      "| flag | class | what cpuft does | from |\n"
      "|---|---|---|---|\n";
  for (FlagClass cls :
       {FlagClass::implemented, FlagClass::mapped, FlagClass::noticed, FlagClass::refused})
    for (const TrainFlag& flag : train_flags())
      if (flag.cls == cls) {
        std::string doc = flag.doc;
        for (size_t pos = 0; (pos = doc.find('|', pos)) != std::string::npos; pos += 2)
          doc.replace(pos, 1, "\\|");
        out += str("| `", spelled(flag), "` | ", class_name(cls), " | ", doc, " | ", flag.origin,
                   " |\n");
      }
  return out;
}

}  // namespace cpuft
