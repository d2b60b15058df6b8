// The GLUE task table: names, label sets, on-disk formats and metrics of the ten GLUE tasks.
//
// One row per task, in the names run_glue.py's --task_name takes. The readers (data_reader.h) and
// the metrics (metrics.h) are driven by this table alone, so adding a task means adding a row.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cpuft {

enum class Split { train, dev, test };

// "train", "dev" or "test".
const char* split_name(Split split);

// How one split of a task is laid out on disk (download_glue_data.py layout). Column numbers are
// 0-based tab-separated fields; -1 means "no such column".
struct SplitFormat {
  // One file per variant. Most splits have the single variant ""; MNLI dev and test have
  // "matched" and "mismatched". No files: the task has no such split (the diagnostic set is
  // test-only).
  std::vector<std::string> variants;
  std::vector<std::string> files;
  bool header = true;  // CoLA train/dev have none
  int num_fields = 0;  // every line (header included) has exactly this many fields
  int text_a = -1;
  int text_b = -1;  // -1: single-sentence task
  int label = -1;   // -1: unlabelled (test files)
  int index = -1;   // column holding the example id (test files); -1: the data row number is the id
};

struct GlueTask {
  std::string name;    // run_glue's task_name: cola sst2 mrpc stsb qqp mnli qnli rte wnli ax
  std::string folder;  // directory under data_dir: CoLA SST-2 ... diagnostic
  // Label names in id order, as HF datasets' glue features name them. Empty: regression (stsb).
  std::vector<std::string> labels;
  // How the TSV spells label i ("0"/"1" or the words themselves).
  std::vector<std::string> label_values_in_file;
  bool has_pair = false;
  SplitFormat train, dev, test;
  // Keys glue_metrics() returns, before "combined_score" (added when there are two or more).
  // Empty: the task is predict-only (ax).
  std::vector<std::string> metric_names;

  bool is_regression() const { return labels.empty(); }
  // Width of the classifier head: 1 for regression.
  int num_labels() const { return is_regression() ? 1 : static_cast<int>(labels.size()); }
  const SplitFormat& split(Split s) const;
};

// All tasks, in the order listed above.
const std::vector<GlueTask>& glue_tasks();

// The task called `name`; an unknown name throws Error listing the valid names.
const GlueTask& glue_task(std::string_view name);

}  // namespace cpuft
