// The task table against the facts it must match: run_glue.py's task names, HF datasets' glue
// label names, the GLUE TSV column layout and evaluate's glue metric keys.
#include "data/glue_tasks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"

namespace cpuft {
namespace {

using Strings = std::vector<std::string>;

TEST(GlueTasks, NamesFoldersAndOrder) {
  Strings names, folders;
  for (const GlueTask& t : glue_tasks()) {
    names.push_back(t.name);
    folders.push_back(t.folder);
  }
  EXPECT_EQ(names,
            (Strings{"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli", "ax"}));
  EXPECT_EQ(folders, (Strings{"CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE",
                              "WNLI", "diagnostic"}));
}

TEST(GlueTasks, LabelNamesAndFileSpellings) {
  const Strings binary = {"0", "1"};
  EXPECT_EQ(glue_task("cola").labels, (Strings{"unacceptable", "acceptable"}));
  EXPECT_EQ(glue_task("sst2").labels, (Strings{"negative", "positive"}));
  EXPECT_EQ(glue_task("mrpc").labels, (Strings{"not_equivalent", "equivalent"}));
  EXPECT_EQ(glue_task("qqp").labels, (Strings{"not_duplicate", "duplicate"}));
  EXPECT_EQ(glue_task("mnli").labels, (Strings{"entailment", "neutral", "contradiction"}));
  EXPECT_EQ(glue_task("qnli").labels, (Strings{"entailment", "not_entailment"}));
  EXPECT_EQ(glue_task("rte").labels, (Strings{"entailment", "not_entailment"}));
  EXPECT_EQ(glue_task("wnli").labels, (Strings{"not_entailment", "entailment"}));
  EXPECT_EQ(glue_task("ax").labels, glue_task("mnli").labels);
  EXPECT_TRUE(glue_task("stsb").labels.empty());
  for (const char* name : {"cola", "sst2", "mrpc", "qqp", "wnli"}) {
    EXPECT_EQ(glue_task(name).label_values_in_file, binary) << name;
  }
  for (const char* name : {"mnli", "qnli", "rte", "ax"}) {
    EXPECT_EQ(glue_task(name).label_values_in_file, glue_task(name).labels) << name;
  }
}

TEST(GlueTasks, RegressionAndHeadWidth) {
  for (const GlueTask& t : glue_tasks()) {
    EXPECT_EQ(t.is_regression(), t.name == "stsb") << t.name;
    EXPECT_EQ(t.labels.size(), t.label_values_in_file.size()) << t.name;
  }
  EXPECT_EQ(glue_task("stsb").num_labels(), 1);
  EXPECT_EQ(glue_task("mrpc").num_labels(), 2);
  EXPECT_EQ(glue_task("mnli").num_labels(), 3);
}

TEST(GlueTasks, PairTasks) {
  for (const GlueTask& t : glue_tasks()) {
    EXPECT_EQ(t.has_pair, t.name != "cola" && t.name != "sst2") << t.name;
  }
}

TEST(GlueTasks, MetricNames) {
  EXPECT_EQ(glue_task("cola").metric_names, (Strings{"matthews_correlation"}));
  EXPECT_EQ(glue_task("mrpc").metric_names, (Strings{"accuracy", "f1"}));
  EXPECT_EQ(glue_task("qqp").metric_names, (Strings{"accuracy", "f1"}));
  EXPECT_EQ(glue_task("stsb").metric_names, (Strings{"pearson", "spearmanr"}));
  for (const char* name : {"sst2", "mnli", "qnli", "rte", "wnli"}) {
    EXPECT_EQ(glue_task(name).metric_names, (Strings{"accuracy"})) << name;
  }
  EXPECT_TRUE(glue_task("ax").metric_names.empty());
}

// Every split's column numbers must fit its field count, and labels sit where the task needs them.
TEST(GlueTasks, SplitFormatsAreConsistent) {
  for (const GlueTask& t : glue_tasks()) {
    for (Split s : {Split::train, Split::dev, Split::test}) {
      const SplitFormat& f = t.split(s);
      SCOPED_TRACE(t.name + " " + split_name(s));
      ASSERT_EQ(f.files.size(), f.variants.size());
      if (f.files.empty()) {
        EXPECT_TRUE(t.name == "ax" && s != Split::test);
        continue;
      }
      EXPECT_GE(f.text_a, 0);
      EXPECT_LT(f.text_a, f.num_fields);
      EXPECT_LT(f.text_b, f.num_fields);
      EXPECT_LT(f.label, f.num_fields);
      EXPECT_LT(f.index, f.num_fields);
      EXPECT_EQ(f.text_b >= 0, t.has_pair);
      if (s == Split::test) {
        EXPECT_EQ(f.label, -1);
        EXPECT_EQ(f.index, 0);
      } else {
        EXPECT_GE(f.label, 0);
        EXPECT_EQ(f.index, -1);
      }
    }
  }
  EXPECT_FALSE(glue_task("cola").train.header);
  EXPECT_FALSE(glue_task("cola").dev.header);
  EXPECT_TRUE(glue_task("cola").test.header);
  EXPECT_EQ(glue_task("mnli").dev.files, (Strings{"dev_matched.tsv", "dev_mismatched.tsv"}));
  EXPECT_EQ(glue_task("mnli").dev.variants, (Strings{"matched", "mismatched"}));
  EXPECT_EQ(glue_task("mnli").test.files, (Strings{"test_matched.tsv", "test_mismatched.tsv"}));
  EXPECT_EQ(glue_task("ax").test.files, (Strings{"diagnostic.tsv"}));
}

TEST(GlueTasks, UnknownTaskListsValidNames) {
  try {
    glue_task("sst-2");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown task 'sst-2'; valid task names: cola, sst2, mrpc, stsb, qqp, mnli, qnli, "
              "rte, wnli, ax");
  }
}

}  // namespace
}  // namespace cpuft
