#include "train/model_card.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <vector>

#include "core/check.h"

using nlohmann::json;

namespace cpuft {

namespace {

// "eval_matthews_correlation" -> "Matthews Correlation", as HF's model card names metrics.
std::string metric_title(std::string key) {
  if (key.starts_with("eval_")) key = key.substr(5);
  std::string out;
  bool word_start = true;
  for (char c : key) {
    if (c == '_') {
      out += ' ';
      word_start = true;
    } else {
      out += word_start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      word_start = false;
    }
  }
  return out;
}

std::string number(const json& value) {
  if (!value.is_number()) return value.is_string() ? value.get<std::string>() : value.dump();
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", value.get<double>());
  return buffer;
}

// Metrics of an evaluation entry, without runtime/speed keys (as HF's card leaves them out).
std::vector<std::pair<std::string, json>> metric_items(const json& entry) {
  std::vector<std::pair<std::string, json>> items;
  for (const auto& [key, value] : entry.items()) {
    if (!key.starts_with("eval_") || !value.is_number()) continue;
    if (key.ends_with("_runtime") || key.ends_with("_per_second") || key == "eval_samples")
      continue;
    items.emplace_back(key, value);
  }
  return items;
}

}  // namespace

std::string model_card(const ModelCardFacts& f, const TrainConfig& c) {
  std::string upper_task = f.task_name;
  for (char& ch : upper_task) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const std::string dataset = f.task_name.empty() ? "" : "GLUE " + upper_task;
  std::vector<std::pair<std::string, json>> results;
  if (f.eval_results != nullptr && f.eval_results->is_object())
    results = metric_items(*f.eval_results);

  std::string card = "---\nlibrary_name: transformers\n";
  card += str("base_model: ", f.finetuned_from, "\ntags:\n- generated_from_trainer\n");
  if (!f.task_name.empty()) card += "language:\n- en\ndatasets:\n- glue\n";
  if (!results.empty()) {
    card += "metrics:\n";
    for (const auto& [key, value] : results)
      if (key != "eval_loss") card += str("- ", key.substr(5), "\n");
  }
  card += str("model-index:\n- name: ", f.model_name, "\n  results:");
  if (dataset.empty() || results.empty()) {
    card += " []\n";
  } else {
    card += str("\n  - task:\n      name: Text Classification\n      type: text-classification\n",
                "    dataset:\n      name: ", dataset,
                "\n      type: glue\n      args: ", f.task_name, "\n    metrics:\n");
    for (const auto& [key, value] : results)
      if (key != "eval_loss")
        card += str("    - name: ", metric_title(key), "\n      type: ", key.substr(5),
                    "\n      value: ", value.dump(), "\n");
  }
  card += "---\n\n";
  card +=
      "<!-- This model card has been generated automatically according to the information the "
      "Trainer had access to. You\nshould probably proofread and complete it, then remove this "
      "comment. -->\n\n";
  card +=
      str("# ", f.model_name, "\n\nThis model is a fine-tuned version of ", f.finetuned_from,
          dataset.empty() ? " on an unknown dataset" : " on the " + dataset + " dataset", ".\n");
  if (!results.empty()) {
    card += "It achieves the following results on the evaluation set:\n";
    for (const auto& [key, value] : results)
      card += str("- ", metric_title(key), ": ", number(value), "\n");
  }
  card +=
      "\n## Model description\n\nMore information needed\n\n## Intended uses & limitations\n\n"
      "More information needed\n\n## Training and evaluation data\n\nMore information needed\n\n"
      "## Training procedure\n\n### Training hyperparameters\n\n"
      "The following hyperparameters were used during training:\n";
  card += str("- learning_rate: ", c.learning_rate,
              "\n- train_batch_size: ", c.per_device_train_batch_size,
              "\n- eval_batch_size: ", c.per_device_eval_batch_size, "\n- seed: ", c.seed, "\n");
  if (f.world_size > 1)
    card += str("- distributed_type: multi-CPU\n- num_devices: ", f.world_size, "\n");
  if (c.gradient_accumulation_steps > 1)
    card += str("- gradient_accumulation_steps: ", c.gradient_accumulation_steps, "\n");
  if (f.total_train_batch_size != c.per_device_train_batch_size)
    card += str("- total_train_batch_size: ", f.total_train_batch_size, "\n");
  card += str("- optimizer: Use ", c.optim, " with betas=(", c.adam_beta1, ",", c.adam_beta2,
              ") and epsilon=", c.adam_epsilon, " and optimizer_args=",
              c.optim_args.empty() ? "No additional optimizer arguments" : c.optim_args, "\n");
  card += str("- lr_scheduler_type: ", c.lr_scheduler_type, "\n");
  if (c.warmup_steps > 0 || c.warmup_ratio > 0)
    card += c.warmup_steps > 0 ? str("- lr_scheduler_warmup_steps: ", c.warmup_steps, "\n")
                               : str("- lr_scheduler_warmup_ratio: ", c.warmup_ratio, "\n");
  card += c.max_steps > 0 ? str("- training_steps: ", c.max_steps, "\n")
                          : str("- num_epochs: ", c.num_train_epochs, "\n");
  if (c.label_smoothing_factor > 0)
    card += str("- label_smoothing_factor: ", c.label_smoothing_factor, "\n");
  if (c.bf16) card += "- mixed_precision_training: bf16 matrix products\n";

  // Training results: one row per evaluation, with the latest training loss logged before it.
  std::vector<std::string> columns;
  std::string rows;
  std::string last_loss = "No log";
  if (f.log_history != nullptr)
    for (const json& entry : *f.log_history) {
      if (entry.contains("loss")) last_loss = number(entry["loss"]);
      const auto items = metric_items(entry);
      if (items.empty()) continue;
      if (columns.empty())
        for (const auto& [key, value] : items) columns.push_back(key);
      rows += str("| ", last_loss, " | ", number(entry.value("epoch", json(0))), " | ",
                  entry.value("step", json(0)).dump(), " |");
      for (const std::string& key : columns)
        rows += str(" ", entry.contains(key) ? number(entry[key]) : "", " |");
      rows += "\n";
    }
  if (!rows.empty()) {
    card += "\n### Training results\n\n| Training Loss | Epoch | Step |";
    for (const std::string& key : columns)
      card += str(" ", key == "eval_loss" ? "Validation Loss" : metric_title(key), " |");
    card += "\n|:---:|:---:|:---:|";
    for (size_t i = 0; i < columns.size(); ++i) card += ":---:|";
    card += "\n" + rows;
  }
  card += str("\n\n### Framework versions\n\n- cpuft ", f.version, "\n");
  return card;
}

}  // namespace cpuft
