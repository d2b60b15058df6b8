#include "data/glue_tasks.h"

#include "core/check.h"

namespace cpuft {

namespace {

// A split stored in one file.
SplitFormat one_file(const std::string& file, bool header, int num_fields, int text_a, int text_b,
                     int label, int index) {
  return SplitFormat{{""}, {file}, header, num_fields, text_a, text_b, label, index};
}

// MNLI's dev and test come as a matched and a mismatched file of the same format.
SplitFormat matched_mismatched(const std::string& stem, int num_fields, int text_a, int text_b,
                               int label, int index) {
  return SplitFormat{{"matched", "mismatched"},
                     {stem + "_matched.tsv", stem + "_mismatched.tsv"},
                     true,
                     num_fields,
                     text_a,
                     text_b,
                     label,
                     index};
}

std::vector<GlueTask> make_tasks() {
  const std::vector<std::string> binary_in_file = {"0", "1"};
  const std::vector<std::string> nli3 = {"entailment", "neutral", "contradiction"};
  const std::vector<std::string> nli2 = {"entailment", "not_entailment"};
  std::vector<GlueTask> tasks;

  // CoLA train/dev: source, label, original label (blank or '*'), sentence; no header.
  tasks.push_back({"cola",
                   "CoLA",
                   {"unacceptable", "acceptable"},
                   binary_in_file,
                   false,
                   one_file("train.tsv", false, 4, 3, -1, 1, -1),
                   one_file("dev.tsv", false, 4, 3, -1, 1, -1),
                   one_file("test.tsv", true, 2, 1, -1, -1, 0),
                   {"matthews_correlation"}});
  tasks.push_back({"sst2",
                   "SST-2",
                   {"negative", "positive"},
                   binary_in_file,
                   false,
                   one_file("train.tsv", true, 2, 0, -1, 1, -1),
                   one_file("dev.tsv", true, 2, 0, -1, 1, -1),
                   one_file("test.tsv", true, 2, 1, -1, -1, 0),
                   {"accuracy"}});
  // MRPC: Quality, #1 ID, #2 ID, #1 String, #2 String (test: index in place of Quality).
  tasks.push_back({"mrpc",
                   "MRPC",
                   {"not_equivalent", "equivalent"},
                   binary_in_file,
                   true,
                   one_file("train.tsv", true, 5, 3, 4, 0, -1),
                   one_file("dev.tsv", true, 5, 3, 4, 0, -1),
                   one_file("test.tsv", true, 5, 3, 4, -1, 0),
                   {"accuracy", "f1"}});
  // STS-B: index genre filename year old_index source1 source2 sentence1 sentence2 score.
  tasks.push_back({"stsb",
                   "STS-B",
                   {},
                   {},
                   true,
                   one_file("train.tsv", true, 10, 7, 8, 9, -1),
                   one_file("dev.tsv", true, 10, 7, 8, 9, -1),
                   one_file("test.tsv", true, 9, 7, 8, -1, 0),
                   {"pearson", "spearmanr"}});
  // QQP: id qid1 qid2 question1 question2 is_duplicate (test: id question1 question2).
  tasks.push_back({"qqp",
                   "QQP",
                   {"not_duplicate", "duplicate"},
                   binary_in_file,
                   true,
                   one_file("train.tsv", true, 6, 3, 4, 5, -1),
                   one_file("dev.tsv", true, 6, 3, 4, 5, -1),
                   one_file("test.tsv", true, 3, 1, 2, -1, 0),
                   {"accuracy", "f1"}});
  // MNLI: index promptID pairID genre, four parse columns, sentence1 sentence2 (columns 8, 9),
  // then the annotator labels (train: label1; dev: label1..label5) and gold_label last.
  tasks.push_back({"mnli",
                   "MNLI",
                   nli3,
                   nli3,
                   true,
                   one_file("train.tsv", true, 12, 8, 9, 11, -1),
                   matched_mismatched("dev", 16, 8, 9, 15, -1),
                   matched_mismatched("test", 10, 8, 9, -1, 0),
                   {"accuracy"}});
  tasks.push_back({"qnli",
                   "QNLI",
                   nli2,
                   nli2,
                   true,
                   one_file("train.tsv", true, 4, 1, 2, 3, -1),
                   one_file("dev.tsv", true, 4, 1, 2, 3, -1),
                   one_file("test.tsv", true, 3, 1, 2, -1, 0),
                   {"accuracy"}});
  tasks.push_back({"rte",
                   "RTE",
                   nli2,
                   nli2,
                   true,
                   one_file("train.tsv", true, 4, 1, 2, 3, -1),
                   one_file("dev.tsv", true, 4, 1, 2, 3, -1),
                   one_file("test.tsv", true, 3, 1, 2, -1, 0),
                   {"accuracy"}});
  // WNLI spells its labels 0/1, and 0 is not_entailment (the opposite order of RTE's names).
  tasks.push_back({"wnli",
                   "WNLI",
                   {"not_entailment", "entailment"},
                   binary_in_file,
                   true,
                   one_file("train.tsv", true, 4, 1, 2, 3, -1),
                   one_file("dev.tsv", true, 4, 1, 2, 3, -1),
                   one_file("test.tsv", true, 3, 1, 2, -1, 0),
                   {"accuracy"}});
  // The diagnostic set is predicted by an MNLI model, so it shares MNLI's label names; it has
  // no train or dev split and no public labels.
  tasks.push_back({"ax",
                   "diagnostic",
                   nli3,
                   nli3,
                   true,
                   SplitFormat{},
                   SplitFormat{},
                   one_file("diagnostic.tsv", true, 3, 1, 2, -1, 0),
                   {}});
  return tasks;
}

}  // namespace

const char* split_name(Split split) {
  switch (split) {
    case Split::train:
      return "train";
    case Split::dev:
      return "dev";
    case Split::test:
      return "test";
  }
  return "?";
}

const SplitFormat& GlueTask::split(Split s) const {
  switch (s) {
    case Split::train:
      return train;
    case Split::dev:
      return dev;
    case Split::test:
      return test;
  }
  throw_check_failure(__FILE__, __LINE__, "valid Split", str(static_cast<int>(s)));
}

const std::vector<GlueTask>& glue_tasks() {
  static const std::vector<GlueTask> tasks = make_tasks();
  return tasks;
}

const GlueTask& glue_task(std::string_view name) {
  std::string valid;
  for (const GlueTask& task : glue_tasks()) {
    if (task.name == name) return task;
    valid += (valid.empty() ? "" : ", ") + task.name;
  }
  throw Error(str("unknown task '", name, "'; valid task names: ", valid));
}

}  // namespace cpuft
