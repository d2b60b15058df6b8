// TaskData: the labelled splits of one run, from a GLUE task folder or from run_glue's
// --train_file/--validation_file/--test_file, with what the trainer needs to know about labels.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/data_reader.h"
#include "data/glue_tasks.h"
#include "model/model_config.h"
#include "train/train_config.h"

namespace cpuft {

struct NamedDataset {
  std::string suffix;  // "" or "_mm" (MNLI mismatched): appended to metric keys and file names
  Dataset data;
};

struct TaskData {
  std::string task_name;                 // GLUE task name, or "" for data files
  std::string data_origin;               // where a GLUE task's data was found (one line)
  GlueTask definition;                   // the task's row, or data_file_task() for data files
  std::vector<std::string> label_names;  // empty for regression
  bool regression = false;
  std::optional<Dataset> train;
  std::vector<NamedDataset> eval, test;

  // Every split read (train, eval, test).
  std::vector<const Dataset*> datasets() const {
    std::vector<const Dataset*> all;
    if (train) all.push_back(&*train);
    for (const auto* list : {&eval, &test})
      for (const NamedDataset& d : *list) all.push_back(&d.data);
    return all;
  }
};

// Reads the splits the flags ask for (train only with --do_train, etc.), applying
// max_*_samples. Errors name the file and line. With only a --test_file, the label set is the
// model's own (config.json's id2label): the case of `cpuft predict` on a fine-tuned model.
TaskData load_task_data(const TrainConfig& config, const ModelConfig& model_config);

// Metrics of predictions against labels: the GLUE metric of the task, or accuracy (classification)
// / mse (regression) for data files, as run_glue.py chooses.
std::map<std::string, double> task_metrics(const TaskData& task,
                                           const std::vector<int32_t>& predicted,
                                           const std::vector<int32_t>& labels);
std::map<std::string, double> task_metrics(const TaskData& task,
                                           const std::vector<float>& predicted,
                                           const std::vector<float>& scores);

}  // namespace cpuft
