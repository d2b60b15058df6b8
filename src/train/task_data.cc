#include "train/task_data.h"

#include "core/check.h"
#include "data/glue_source.h"
#include "data/metrics.h"

namespace cpuft {

namespace {

void truncate(Dataset& data, int64_t max_samples) {
  if (max_samples > 0 && static_cast<int64_t>(data.examples.size()) > max_samples)
    data.examples.resize(static_cast<size_t>(max_samples));
}

}  // namespace

TaskData load_task_data(const TrainConfig& c, const ModelConfig& model_config) {
  TaskData task;
  const bool need_eval = c.do_eval || c.eval_strategy != "no";
  if (!c.task_name.empty()) {
    const GlueTask& glue = glue_task(c.task_name);
    CPUFT_REQUIRE(!glue.metric_names.empty() || (!c.do_train && !need_eval), "task ", glue.name,
                  " is predict-only (no training or dev data)");
    task.task_name = glue.name;
    task.definition = glue;
    task.label_names = glue.labels;
    task.regression = glue.is_regression();
    // --data_dir, else where run_glue.py's users have GLUE: the Hugging Face hub cache's parquet
    // files, $GLUE_DIR, the repository's data/glue (data/glue_source.h).
    GlueSearch search;
    search.data_dir = c.data_dir;
    search.hub_cache = c.cache_dir;
    const GlueSource source = find_glue_data(glue, search);
    task.data_origin = source.origin;
    if (c.do_train) {
      task.train = read_glue_split(glue, source, Split::train);
      truncate(*task.train, c.max_train_samples);
    }
    for (Split split : {Split::dev, Split::test}) {
      if (split == Split::dev && !need_eval) continue;
      if (split == Split::test && !c.do_predict) continue;
      const SplitFormat& format = glue.split(split);
      for (const std::string& variant : format.variants) {
        NamedDataset d{variant == "mismatched" ? "_mm" : "",
                       read_glue_split(glue, source, split, variant)};
        truncate(d.data, split == Split::dev ? c.max_eval_samples : c.max_predict_samples);
        (split == Split::dev ? task.eval : task.test).push_back(std::move(d));
      }
    }
    return task;
  }

  // --train_file / --validation_file / --test_file: the label set comes from the training file
  // (or, without one, from the validation file), as run_glue.py derives it.
  const std::string& label_source = !c.train_file.empty() ? c.train_file : c.validation_file;
  DataFileLabels labels;
  if (!label_source.empty()) {
    labels = data_file_labels(label_source);
    // One class would make a one-output model, which transformers (and cpuft) train as a
    // regression: the labels would silently become scores.
    CPUFT_REQUIRE(labels.regression || labels.names.size() >= 2, label_source,
                  labels.names.empty() ? std::string(": no labels")
                                       : str(": every label is '", labels.names[0], "'"),
                  "; a classifier needs at least two classes (for a regression, give scores "
                  "with a decimal point, e.g. 1.0)");
  } else {
    labels.regression = model_config.is_regression() || model_config.problem_type == "regression";
    if (!labels.regression) labels.names = model_config.id2label;
    labels.integer = true;
    for (const std::string& name : labels.names)
      labels.integer = labels.integer && !name.empty() &&
                       name.find_first_not_of("-0123456789") == std::string::npos;
  }
  task.definition = data_file_task(labels);
  task.label_names = labels.names;
  task.regression = labels.regression;
  if (c.do_train) {
    task.train = read_data_file(c.train_file, labels);
    truncate(*task.train, c.max_train_samples);
  }
  if (need_eval) {
    task.eval.push_back({"", read_data_file(c.validation_file, labels)});
    truncate(task.eval.back().data, c.max_eval_samples);
  }
  if (c.do_predict) {
    task.test.push_back({"", read_data_file(c.test_file, labels)});
    truncate(task.test.back().data, c.max_predict_samples);
  }
  return task;
}

std::map<std::string, double> task_metrics(const TaskData& task,
                                           const std::vector<int32_t>& predicted,
                                           const std::vector<int32_t>& labels) {
  return glue_metrics(task.definition, predicted, labels);
}

std::map<std::string, double> task_metrics(const TaskData& task,
                                           const std::vector<float>& predicted,
                                           const std::vector<float>& scores) {
  return glue_metrics(task.definition, predicted, scores);
}

}  // namespace cpuft
