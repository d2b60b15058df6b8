#include "train/train_config.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/check.h"

namespace cpuft {

namespace {

// One table binds each flag name to its field, for both the command line and the JSON file.
struct FlagBinding {
  std::string help;
  bool is_bool = false;
  std::function<void(CLI::App&, const std::string&)> add;
  std::function<void(const nlohmann::json&, const std::string&)> from_json;
};

template <typename T>
FlagBinding make_binding(T& field, std::string help) {
  FlagBinding b;
  b.help = help;
  b.is_bool = std::is_same_v<T, bool>;
  b.add = [&field, help](CLI::App& app, const std::string& name) {
    if constexpr (std::is_same_v<T, bool>) {
      // "--do_train" sets it; "--do_train=false" clears it.
      app.add_flag("--" + name, field, help);
    } else {
      app.add_option("--" + name, field, help)->capture_default_str();
    }
  };
  b.from_json = [&field](const nlohmann::json& value, const std::string& name) {
    try {
      if constexpr (std::is_same_v<T, bool>) {
        field = value.is_string() ? (value == "true" || value == "True") : value.get<bool>();
      } else {
        field = value.get<T>();
      }
    } catch (const nlohmann::json::exception&) {
      throw Error(str("args file: key '", name, "' has the wrong type: ", value.dump()));
    }
  };
  return b;
}

std::map<std::string, FlagBinding> bindings(TrainConfig& c) {
  std::map<std::string, FlagBinding> m;
  m["model_name_or_path"] =
      make_binding(c.model_name_or_path,
                   "Hugging Face model folder (config.json, model.safetensors, vocab.txt)");
  m["task_name"] =
      make_binding(c.task_name, "GLUE task: cola sst2 mrpc stsb qqp mnli qnli rte wnli");
  m["data_dir"] =
      make_binding(c.data_dir, "Folder with the GLUE task folders (CoLA, MRPC, ...) [cpuft]");
  m["train_file"] = make_binding(
      c.train_file, "Training data: .csv, .tsv or .json(l) with sentence1[, sentence2], label");
  m["validation_file"] =
      make_binding(c.validation_file, "Evaluation data, same format as --train_file");
  m["test_file"] = make_binding(c.test_file, "Prediction data, same format (label optional)");
  m["max_seq_length"] = make_binding(
      c.max_seq_length, "Longest tokenized input; longer pairs are truncated (longest_first)");
  m["pad_to_max_length"] = make_binding(
      c.pad_to_max_length,
      "Accepted for compatibility: cpuft never computes on padding, results are identical");
  m["max_train_samples"] =
      make_binding(c.max_train_samples, "Use only the first N training examples");
  m["max_eval_samples"] =
      make_binding(c.max_eval_samples, "Use only the first N evaluation examples");
  m["max_predict_samples"] =
      make_binding(c.max_predict_samples, "Use only the first N prediction examples");
  m["do_train"] = make_binding(c.do_train, "Fine-tune");
  m["do_eval"] = make_binding(c.do_eval, "Evaluate on the dev split at the end");
  m["do_predict"] = make_binding(c.do_predict, "Write predictions for the test split");
  m["output_dir"] = make_binding(c.output_dir, "Where the model, results and checkpoints go");
  m["overwrite_output_dir"] = make_binding(c.overwrite_output_dir, "Allow a non-empty output_dir");
  m["resume_from_checkpoint"] =
      make_binding(c.resume_from_checkpoint, "checkpoint-N folder to continue from");
  m["per_device_train_batch_size"] =
      make_binding(c.per_device_train_batch_size, "Training sequences per step per process");
  m["per_device_eval_batch_size"] =
      make_binding(c.per_device_eval_batch_size, "Evaluation sequences per batch per process");
  m["gradient_accumulation_steps"] =
      make_binding(c.gradient_accumulation_steps, "Micro-batches per optimizer step");
  m["learning_rate"] = make_binding(c.learning_rate, "Peak learning rate of AdamW");
  m["weight_decay"] =
      make_binding(c.weight_decay, "Decoupled weight decay (not on biases and LayerNorm weights)");
  m["adam_beta1"] = make_binding(c.adam_beta1, "AdamW beta1");
  m["adam_beta2"] = make_binding(c.adam_beta2, "AdamW beta2");
  m["adam_epsilon"] = make_binding(c.adam_epsilon, "AdamW epsilon");
  m["max_grad_norm"] =
      make_binding(c.max_grad_norm, "Clip the global gradient norm to this (0: no clipping)");
  m["num_train_epochs"] = make_binding(c.num_train_epochs, "Epochs (may be fractional)");
  m["max_steps"] =
      make_binding(c.max_steps, "If > 0: total optimizer steps, overrides num_train_epochs");
  m["lr_scheduler_type"] =
      make_binding(c.lr_scheduler_type, "linear, cosine, constant or constant_with_warmup");
  m["warmup_ratio"] = make_binding(c.warmup_ratio, "Warmup as a fraction of the total steps");
  m["warmup_steps"] = make_binding(c.warmup_steps, "Warmup steps (overrides warmup_ratio)");
  m["seed"] = make_binding(c.seed, "Seed of the shuffling, dropout and new head");
  m["group_by_length"] =
      make_binding(c.group_by_length, "Batch sequences of similar length together");
  m["bf16"] = make_binding(c.bf16,
                           "bfloat16 inputs to the encoder's matrix products (fp32 weights, "
                           "accumulation and everything else); needs AVX512_BF16 or AMX");
  m["logging_strategy"] = make_binding(c.logging_strategy, "steps, epoch or no");
  m["logging_steps"] = make_binding(c.logging_steps, "Log the mean training loss every N steps");
  m["eval_strategy"] =
      make_binding(c.eval_strategy, "Evaluate during training: no, steps or epoch");
  m["evaluation_strategy"] = make_binding(c.eval_strategy, "Old name of --eval_strategy");
  m["eval_steps"] = make_binding(
      c.eval_steps, "With --eval_strategy steps: every N steps (default logging_steps)");
  m["save_strategy"] = make_binding(c.save_strategy, "Save checkpoints: steps, epoch or no");
  m["save_steps"] =
      make_binding(c.save_steps, "With --save_strategy steps: a checkpoint every N steps");
  m["save_total_limit"] =
      make_binding(c.save_total_limit, "Keep at most N checkpoints (oldest deleted)");
  m["dist_backend"] = make_binding(c.dist_backend,
                                   "auto (mpi under mpirun/mpiexec/srun, ccl under torchrun-style "
                                   "variables, else single), mpi, ccl (oneCCL) or single [cpuft]");
  m["bucket_cap_mb"] =
      make_binding(c.bucket_cap_mb, "Gradient all-reduce bucket size in MB [cpuft]");
  m["dist_timeout"] = make_binding(
      c.dist_timeout, "Seconds a collective may take before the run stops with an error [cpuft]");
  m["timeline_dir"] = make_binding(
      c.timeline_dir, "Write a chrome://tracing timeline per rank into this folder [cpuft]");
  m["disable_tqdm"] = make_binding(
      c.disable_tqdm, "No progress bar (it shows only when stderr is a terminal anyway)");
  m["save_logits"] =
      make_binding(c.save_logits, "With --do_predict, also write the logits [cpuft]");
  // Accepted and ignored: they change nothing in cpuft.
  static std::string ignored_string;
  static bool ignored_bool = false;
  m["report_to"] = make_binding(ignored_string, "Accepted and ignored");
  m["logging_dir"] = make_binding(ignored_string, "Accepted and ignored");
  m["cache_dir"] = make_binding(ignored_string, "Accepted and ignored");
  m["overwrite_cache"] = make_binding(ignored_bool, "Accepted and ignored");
  return m;
}

}  // namespace

namespace {

// transformers' string_to_bool: the words that mean true and false, compared lower-cased.
std::optional<bool> boolean_word(std::string word) {
  for (char& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* yes : {"true", "yes", "t", "y", "1"})
    if (word == yes) return true;
  for (const char* no : {"false", "no", "f", "n", "0"})
    if (word == no) return false;
  return std::nullopt;
}

}  // namespace

std::vector<std::string> fold_boolean_values(const std::vector<std::string>& args,
                                             const std::vector<std::string>& boolean_flags) {
  auto is_boolean = [&](const std::string& name) {
    return std::find(boolean_flags.begin(), boolean_flags.end(), name) != boolean_flags.end();
  };
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--")) {
      out.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (!is_boolean(name)) {
      out.push_back(arg);
      continue;
    }
    std::optional<bool> value = true;
    if (eq != std::string::npos) {
      value = boolean_word(arg.substr(eq + 1));
      if (!value) {  // not a boolean word: the parser names the bad value
        out.push_back(arg);
        continue;
      }
    } else if (i + 1 < args.size()) {
      if (const std::optional<bool> next = boolean_word(args[i + 1])) {
        value = next;
        ++i;
      }
    }
    out.push_back("--" + name + (*value ? "=true" : "=false"));
  }
  return out;
}

std::vector<std::string> boolean_train_flags() {
  TrainConfig config;
  std::vector<std::string> names;
  for (const auto& [name, binding] : bindings(config))
    if (binding.is_bool) names.push_back(name);
  return names;
}

void add_train_flags(CLI::App& app, TrainConfig& config) {
  for (auto& [name, binding] : bindings(config)) binding.add(app, name);
}

void load_train_config_json(const std::string& path, TrainConfig& config) {
  std::ifstream in(path);
  CPUFT_REQUIRE(in.good(), path, ": cannot open");
  nlohmann::json args;
  try {
    args = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(str(path, ": not valid JSON: ", e.what()));
  }
  CPUFT_REQUIRE(args.is_object(), path, ": must be a JSON object of flag names to values");
  auto table = bindings(config);
  for (const auto& [key, value] : args.items()) {
    auto it = table.find(key);
    CPUFT_REQUIRE(it != table.end(), path, ": unknown key '", key, "'");
    try {
      it->second.from_json(value, key);
    } catch (const Error& e) {
      throw Error(str(path, ": ", e.what()));
    }
  }
}

void validate_train_config(const TrainConfig& c, bool cpu_has_bf16) {
  auto require = [](bool ok, const std::string& message) { CPUFT_REQUIRE(ok, message); };
  require(!c.model_name_or_path.empty(), "--model_name_or_path is required");
  require(!c.output_dir.empty(), "--output_dir is required");
  require(c.do_train || c.do_eval || c.do_predict,
          "nothing to do: give --do_train, --do_eval and/or --do_predict");
  const bool files = !c.train_file.empty() || !c.validation_file.empty() || !c.test_file.empty();
  require(
      !(files && !c.task_name.empty()),
      "give either --task_name (with --data_dir) or --train_file/--validation_file/--test_file, "
      "not both");
  require(
      files || !c.task_name.empty(),
      "no data: give --task_name with --data_dir, or --train_file/--validation_file/--test_file");
  require(c.task_name.empty() || !c.data_dir.empty(),
          "--task_name needs --data_dir, the folder holding the GLUE task folders");
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
  require(c.warmup_ratio >= 0 && c.warmup_ratio <= 1, "--warmup_ratio must be in [0, 1]");
  require(c.warmup_steps >= 0, "--warmup_steps must be >= 0");
  require(c.eval_strategy == "no" || c.eval_strategy == "steps" || c.eval_strategy == "epoch",
          "--eval_strategy must be no, steps or epoch");
  require(
      c.eval_strategy == "no" || c.do_eval || !c.validation_file.empty() || !c.task_name.empty(),
      "--eval_strategy needs evaluation data");
  require(c.save_strategy == "no" || c.save_strategy == "steps" || c.save_strategy == "epoch",
          "--save_strategy must be no, steps or epoch");
  require(
      c.logging_strategy == "no" || c.logging_strategy == "steps" || c.logging_strategy == "epoch",
      "--logging_strategy must be no, steps or epoch");
  require(c.logging_steps >= 1, "--logging_steps must be >= 1");
  require(c.save_steps >= 1, "--save_steps must be >= 1");
  require(c.eval_steps == -1 || c.eval_steps >= 1, "--eval_steps must be >= 1");
  require(c.dist_backend == "auto" || c.dist_backend == "mpi" || c.dist_backend == "ccl" ||
              c.dist_backend == "single",
          "--dist_backend must be auto, mpi, ccl or single");
  require(c.bucket_cap_mb > 0, "--bucket_cap_mb must be > 0");
  require(c.dist_timeout > 0, "--dist_timeout must be > 0");
  if (c.bf16) require_bf16_matmul("--bf16", cpu_has_bf16);
}

Cadence Cadence::parse(const std::string& strategy, int64_t every) {
  if (strategy == "steps") {
    CPUFT_CHECK(every > 0, "a steps cadence needs a positive interval");
    return Cadence{Kind::steps, every};
  }
  if (strategy == "epoch") return Cadence{Kind::epoch, 0};
  CPUFT_CHECK(strategy == "no", "unknown strategy ", strategy);
  return Cadence{};
}

}  // namespace cpuft
