// Readers for GLUE TSV files and for run_glue.py's --train_file/--validation_file/--test_file.
//
// Every problem in an input file throws cpuft::Error with one line that starts "<path>:<line>: "
// ("<path>: record <n>: " in a JSON array file, "<path>: " when no line applies) and says what
// is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/glue_tasks.h"

namespace cpuft {

struct Example {
  std::string text_a;
  std::string text_b;
  bool has_b = false;
  int32_t label = -1;  // class id (classification), -1 when unlabelled or regression
  float score = 0;     // target of a regression task
  bool has_label = false;
  int64_t index = 0;  // test files: the file's id column; otherwise the 0-based data row
};

struct Dataset {
  std::string name;  // e.g. "mnli dev matched" or the file path for --*_file data
  std::string path;  // the file read
  std::vector<Example> examples;
  // One line each about a choice the reader made that a user should know of (a text column that
  // holds an index); the trainer prints them.
  std::vector<std::string> notes;
};

// data_dir/<folder>/<file> for a split. For MNLI dev/test `variant` is "matched" (the default
// when empty) or "mismatched"; other splits take only "".
std::string glue_split_path(const GlueTask& task, const std::string& data_dir, Split split,
                            const std::string& variant = "");

// Reads one split of a GLUE task. Accepts a UTF-8 BOM, CRLF line endings and a missing final
// newline; splits on tabs only (quotes are data). Throws Error on a missing file, invalid UTF-8, a
// line with the wrong number of fields, an unknown label, a bad STS-B score or an empty split.
Dataset read_glue_split(const GlueTask& task, const std::string& data_dir, Split split,
                        const std::string& variant = "");

// The label set of a --train_file, found as run_glue.py finds it: a float label column means
// regression; otherwise the labels are the sorted unique values (integers numerically, strings by
// code point) and a label's id is its position.
struct DataFileLabels {
  bool regression = false;
  bool integer = false;            // the train labels are integers (compared by value)
  std::vector<std::string> names;  // classification: label values in id order
};

// Scans `train_path` (see read_data_file for formats) and returns its label set.
DataFileLabels data_file_labels(const std::string& train_path);

// Reads a --train_file/--validation_file/--test_file: .csv (RFC 4180 quoting), .tsv (tabs only, no
// quoting) or .json/.jsonl (JSON lines, or one JSON array of objects). The first row of CSV/TSV
// names the columns. Text columns, as run_glue.py picks them: "sentence1" and "sentence2" when
// both exist, else the first one or two columns other than "label" — with a note in
// Dataset::notes when one of those is named idx/index or holds only integers (a raw QNLI file
// would train on index + question, as run_glue.py would, without a word otherwise). A file without
// a "label" column, and integer labels of -1, give unlabelled examples.
Dataset read_data_file(const std::string& path, const DataFileLabels& labels);

// A task-table row for --*_file data, so glue_metrics() can score it the way run_glue.py scores
// data without a task name: accuracy for classification, mse for regression.
GlueTask data_file_task(const DataFileLabels& labels);

}  // namespace cpuft
