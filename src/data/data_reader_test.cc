// GLUE TSV and --*_file readers: every real GLUE file shipped in data/glue (row counts and label
// splits as data/README.md lists them), hand-written fixtures for the tasks whose files are not
// there (tests/fixtures/glue_formats), and the format traps, each on a tiny file written here.
#include "data/data_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "test_paths.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

using cpuft::testing::glue_dir;

std::string fixture_glue_dir() {
  return cpuft::testing::fixture_path("glue_formats");
}

// A fresh directory per test for the files the trap tests write.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::path(::testing::TempDir()) /
            (std::string("cpuft_glue_") + info->test_suite_name() + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  // Writes `bytes` exactly (binary: CRs and missing final newlines stay as given).
  std::string write(const std::string& relative, const std::string& bytes) const {
    const fs::path p = path_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  std::string dir() const { return path_.string(); }

 private:
  fs::path path_;
};

// The message of the Error `fn` throws ("" if none), checked to be one line.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "multi-line error: " << what;
    return what;
  }
  ADD_FAILURE() << "expected an Error";
  return "";
}

std::vector<int32_t> labels_of(const Dataset& d) {
  std::vector<int32_t> out;
  for (const Example& ex : d.examples) out.push_back(ex.label);
  return out;
}

std::map<int32_t, int64_t> label_counts(const Dataset& d) {
  std::map<int32_t, int64_t> counts;
  for (const Example& ex : d.examples) ++counts[ex.label];
  return counts;
}

// ---- real GLUE files ------------------------------------------------------------------------

// Known GLUE row counts, for every file the standard download has (PROVENANCE.md and the GLUE
// paper). Files not shipped in data/glue are checked whenever they appear.
const std::map<std::string, size_t>& known_rows() {
  static const std::map<std::string, size_t> rows = {
      {"CoLA/train.tsv", 8551},       {"CoLA/dev.tsv", 1043},
      {"CoLA/test.tsv", 1063},        {"SST-2/train.tsv", 67349},
      {"SST-2/dev.tsv", 872},         {"SST-2/test.tsv", 1821},
      {"MRPC/train.tsv", 3668},       {"MRPC/dev.tsv", 408},
      {"MRPC/test.tsv", 1725},        {"STS-B/train.tsv", 5749},
      {"STS-B/dev.tsv", 1500},        {"STS-B/test.tsv", 1379},
      {"QQP/train.tsv", 363846},      {"QQP/dev.tsv", 40430},
      {"QQP/test.tsv", 390965},       {"MNLI/train.tsv", 392702},
      {"MNLI/dev_matched.tsv", 9815}, {"MNLI/dev_mismatched.tsv", 9832},
      {"QNLI/train.tsv", 104743},     {"QNLI/dev.tsv", 5463},
      {"QNLI/test.tsv", 5463},        {"RTE/train.tsv", 2490},
      {"RTE/dev.tsv", 277},           {"RTE/test.tsv", 3000},
      {"WNLI/train.tsv", 635},        {"WNLI/dev.tsv", 71},
      {"WNLI/test.tsv", 146},         {"diagnostic/diagnostic.tsv", 1104},
  };
  return rows;
}

// Reads every GLUE file present, checks its row count, that every test id is its row number and
// that no text kept a CR or the BOM; returns what was read by "<folder>/<file>".
const std::map<std::string, Dataset>& all_present_glue_files() {
  static const std::map<std::string, Dataset> read = [] {
    std::map<std::string, Dataset> out;
    const std::string dir = glue_dir();
    for (const GlueTask& task : glue_tasks()) {
      for (Split s : {Split::train, Split::dev, Split::test}) {
        const SplitFormat& f = task.split(s);
        for (size_t v = 0; v < f.files.size(); ++v) {
          const std::string key = task.folder + "/" + f.files[v];
          if (!fs::exists(glue_split_path(task, dir, s, f.variants[v]))) continue;
          out.emplace(key, read_glue_split(task, dir, s, f.variants[v]));
        }
      }
    }
    return out;
  }();
  return read;
}

TEST(GlueRealData, EveryPresentFileReadsWithKnownRowCount) {
  const auto& files = all_present_glue_files();
  // The files PROVENANCE.md lists must all be there.
  for (const char* folder : {"CoLA", "SST-2", "MRPC", "RTE", "STS-B"}) {
    for (const char* file : {"train.tsv", "dev.tsv", "test.tsv"}) {
      EXPECT_TRUE(files.count(std::string(folder) + "/" + file))
          << folder << "/" << file << " missing under " << glue_dir();
    }
  }
  for (const auto& [key, data] : files) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(known_rows().count(key)) << "no known row count";
    EXPECT_EQ(data.examples.size(), known_rows().at(key));
    const bool is_test = key.find("test") != std::string::npos || key.starts_with("diagnostic");
    for (size_t i = 0; i < data.examples.size(); ++i) {
      const Example& ex = data.examples[i];
      EXPECT_EQ(ex.index, static_cast<int64_t>(i));
      EXPECT_EQ(ex.has_label, !is_test);
      for (const std::string* text : {&ex.text_a, &ex.text_b}) {
        EXPECT_EQ(text->find_first_of("\r\n\t"), std::string::npos) << "row " << i;
        EXPECT_FALSE(text->starts_with("\xEF\xBB\xBF")) << "row " << i;
      }
      if (HasFailure()) return;
    }
  }
}

TEST(GlueRealData, LabelSplitsMatchProvenance) {
  const auto& files = all_present_glue_files();
  // {label id: count}; ids follow the task's label order (e.g. CoLA 1 = acceptable).
  const std::map<std::string, std::map<int32_t, int64_t>> expected = {
      {"MRPC/train.tsv", {{1, 2474}, {0, 1194}}},    {"MRPC/dev.tsv", {{1, 279}, {0, 129}}},
      {"SST-2/train.tsv", {{1, 37569}, {0, 29780}}}, {"SST-2/dev.tsv", {{1, 444}, {0, 428}}},
      {"CoLA/train.tsv", {{1, 6023}, {0, 2528}}},    {"CoLA/dev.tsv", {{1, 721}, {0, 322}}},
      {"RTE/train.tsv", {{0, 1249}, {1, 1241}}},     {"QNLI/dev.tsv", {{0, 2702}, {1, 2761}}},
      {"WNLI/train.tsv", {{0, 323}, {1, 312}}},      {"WNLI/dev.tsv", {{0, 40}, {1, 31}}},
  };
  for (const auto& [key, counts] : expected) {
    const auto it = files.find(key);
    if (it == files.end()) continue;  // presence is checked by the test above
    EXPECT_EQ(label_counts(it->second), counts) << key;
  }
  EXPECT_TRUE(files.count("MRPC/train.tsv"));
}

TEST(GlueRealData, StsbScoresSpanZeroToFive) {
  const Dataset& train = all_present_glue_files().at("STS-B/train.tsv");
  float lo = 10, hi = -10;
  for (const Example& ex : train.examples) {
    EXPECT_EQ(ex.label, -1);
    lo = std::min(lo, ex.score);
    hi = std::max(hi, ex.score);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 5.0f);
  EXPECT_EQ(train.examples[0].text_a, "A plane is taking off.");
  EXPECT_EQ(train.examples[0].text_b, "An air plane is taking off.");
  EXPECT_EQ(train.examples[1].score, 3.8f);
}

TEST(GlueRealData, KnownRows) {
  const auto& files = all_present_glue_files();
  // MRPC train starts with a BOM before "Quality"; its first row follows the header.
  const Example& mrpc = files.at("MRPC/train.tsv").examples[0];
  EXPECT_EQ(mrpc.label, 1);
  EXPECT_TRUE(
      mrpc.text_a.starts_with("Amrozi accused his brother , whom he called \" the witness"));
  EXPECT_TRUE(mrpc.has_b);
  // CoLA train has no header: its first line is an example (source, label, original label, text).
  const Example& cola = files.at("CoLA/train.tsv").examples[0];
  EXPECT_FALSE(cola.has_b);
  EXPECT_EQ(cola.label, 1);
  // CoLA dev has no final newline: its last line still counts, without a stray byte.
  EXPECT_EQ(files.at("CoLA/dev.tsv").examples.back().text_a.back(), '.');
  EXPECT_EQ(files.at("MRPC/test.tsv").examples.back().index, 1724);
  EXPECT_EQ(files.at("RTE/test.tsv").examples.back().index, 2999);
  EXPECT_EQ(files.at("CoLA/test.tsv").examples[0].text_a, "Bill whistled past the house.");
}

// ---- fixtures for the tasks whose files are not in data/glue -------------------------------

TEST(GlueFixtures, Qqp) {
  const GlueTask& qqp = glue_task("qqp");
  const Dataset train = read_glue_split(qqp, fixture_glue_dir(), Split::train);
  EXPECT_EQ(train.name, "qqp train");
  EXPECT_EQ(labels_of(train), (std::vector<int32_t>{1, 0, 1, 0, 1}));
  EXPECT_EQ(train.examples[0].text_a, "How do I learn to cook rice?");
  EXPECT_EQ(train.examples[0].text_b, "What is the best way to cook rice?");
  // Quotes, matched or not, are data.
  EXPECT_EQ(train.examples[2].text_b, "What is the meaning of \"serendipity?");
  EXPECT_EQ(train.examples[3].text_a, "Is 6'2\" tall for a man?");
  EXPECT_EQ(train.examples[4].index, 4);
  const Dataset dev = read_glue_split(qqp, fixture_glue_dir(), Split::dev);
  EXPECT_EQ(labels_of(dev), (std::vector<int32_t>{1, 0, 0}));
  const Dataset test = read_glue_split(qqp, fixture_glue_dir(), Split::test);
  ASSERT_EQ(test.examples.size(), 2u);
  EXPECT_FALSE(test.examples[1].has_label);
  EXPECT_EQ(test.examples[1].index, 1);
  EXPECT_EQ(test.examples[1].text_a, "What is a black hole?");
  EXPECT_EQ(test.examples[1].text_b, "How do stars form?");
}

TEST(GlueFixtures, MnliMatchedAndMismatched) {
  const GlueTask& mnli = glue_task("mnli");
  // entailment 0, neutral 1, contradiction 2.
  const Dataset train = read_glue_split(mnli, fixture_glue_dir(), Split::train);
  EXPECT_EQ(labels_of(train), (std::vector<int32_t>{0, 2, 1, 0}));
  EXPECT_EQ(train.examples[0].text_a, "The old man walked his dog along the river.");
  EXPECT_EQ(train.examples[0].text_b, "A man was outside with an animal.");
  EXPECT_EQ(train.examples[2].text_a, "i think we went there in \"June or July");

  const Dataset matched = read_glue_split(mnli, fixture_glue_dir(), Split::dev, "matched");
  EXPECT_EQ(matched.name, "mnli dev matched");
  EXPECT_TRUE(matched.path.ends_with("MNLI/dev_matched.tsv"));
  // gold_label (last column) decides, not the annotators' label1..label5.
  EXPECT_EQ(labels_of(matched), (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(matched.examples[1].text_b, "The door was shut.");
  const Dataset by_default = read_glue_split(mnli, fixture_glue_dir(), Split::dev);
  EXPECT_EQ(by_default.path, matched.path);

  const Dataset mismatched = read_glue_split(mnli, fixture_glue_dir(), Split::dev, "mismatched");
  EXPECT_EQ(mismatched.name, "mnli dev mismatched");
  EXPECT_EQ(labels_of(mismatched), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(mismatched.examples[0].text_a, "We thank you for your generous gift.");

  const Dataset test_m = read_glue_split(mnli, fixture_glue_dir(), Split::test, "matched");
  const Dataset test_mm = read_glue_split(mnli, fixture_glue_dir(), Split::test, "mismatched");
  EXPECT_EQ(test_m.examples.size(), 2u);
  ASSERT_EQ(test_mm.examples.size(), 1u);
  EXPECT_FALSE(test_mm.examples[0].has_label);
  EXPECT_EQ(test_mm.examples[0].text_b, "The flight was delayed.");

  EXPECT_EQ(error_of([&] { read_glue_split(mnli, fixture_glue_dir(), Split::dev, "both"); }),
            "task mnli dev split has no variant 'both'; valid: 'matched', 'mismatched'");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("rte"), "x", Split::dev, "matched"); }),
            "task rte dev split has no variant 'matched'");
}

TEST(GlueFixtures, Qnli) {
  const GlueTask& qnli = glue_task("qnli");
  const Dataset train = read_glue_split(qnli, fixture_glue_dir(), Split::train);
  EXPECT_EQ(labels_of(train), (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(train.examples[0].text_a, "When was the bridge opened?");
  EXPECT_EQ(train.examples[2].text_b, "\"Ad hoc means made for one purpose.");
  EXPECT_EQ(labels_of(read_glue_split(qnli, fixture_glue_dir(), Split::dev)),
            (std::vector<int32_t>{0, 1}));
  const Dataset test = read_glue_split(qnli, fixture_glue_dir(), Split::test);
  ASSERT_EQ(test.examples.size(), 1u);
  EXPECT_EQ(test.examples[0].text_b, "The river rises in the northern hills.");
}

TEST(GlueFixtures, WnliAndDiagnostic) {
  // WNLI's file spells 1 for entailment, which is label id 1 (names: not_entailment, entailment).
  const Dataset wnli = read_glue_split(glue_task("wnli"), fixture_glue_dir(), Split::train);
  EXPECT_EQ(labels_of(wnli), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(wnli.examples[1].text_b, "The case was too big.");
  EXPECT_EQ(read_glue_split(glue_task("wnli"), fixture_glue_dir(), Split::test).examples.size(),
            1u);

  const GlueTask& ax = glue_task("ax");
  const Dataset diag = read_glue_split(ax, fixture_glue_dir(), Split::test);
  EXPECT_EQ(diag.name, "ax test");
  ASSERT_EQ(diag.examples.size(), 3u);  // the file has no final newline
  EXPECT_EQ(diag.examples[2].text_a, "\"Quoted start without an end");
  EXPECT_EQ(diag.examples[2].text_b, "A sentence.");
  EXPECT_FALSE(diag.examples[2].has_label);
  EXPECT_EQ(error_of([&] { read_glue_split(ax, fixture_glue_dir(), Split::train); }),
            "task ax has no train split");
  EXPECT_EQ(error_of([&] { read_glue_split(ax, fixture_glue_dir(), Split::dev); }),
            "task ax has no dev split");
}

// ---- traps, on tiny files ---------------------------------------------------------------

const std::string kMrpcHeader = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String";

TEST(GlueTraps, BomCrlfNoFinalNewlineAndUnmatchedQuotes) {
  TempDir tmp;
  tmp.write("MRPC/dev.tsv", "\xEF\xBB\xBF" + kMrpcHeader +
                                "\r\n"
                                "1\t11\t12\tHe said \" hi .\tShe said \" hi \" .\r\n"
                                "0\t13\t14\t\"Open quote\tlast line has no newline");
  const Dataset d = read_glue_split(glue_task("mrpc"), tmp.dir(), Split::dev);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(labels_of(d), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(d.examples[0].text_a, "He said \" hi .");
  EXPECT_EQ(d.examples[0].text_b, "She said \" hi \" .");
  EXPECT_EQ(d.examples[1].text_a, "\"Open quote");
  EXPECT_EQ(d.examples[1].text_b, "last line has no newline");
  EXPECT_EQ(d.examples[1].index, 1);
}

TEST(GlueTraps, QuotesDoNotProtectTabs) {
  // A CSV reader would take "a<TAB>b" as one field; GLUE readers must not.
  TempDir tmp;
  const std::string path =
      tmp.write("CoLA/train.tsv", "src\t1\t\tfine .\nsrc\t0\t*\t\"quoted\ttab\"\n");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("cola"), tmp.dir(), Split::train); }),
            path + ":2: expected 4 tab-separated fields, got 5");
}

TEST(GlueTraps, OldMacLineEndingsAndBlankLines) {
  TempDir tmp;
  tmp.write("SST-2/dev.tsv", "sentence\tlabel\rgood .\t1\r\n\nbad .\t0\n\n");
  const Dataset d = read_glue_split(glue_task("sst2"), tmp.dir(), Split::dev);
  EXPECT_EQ(labels_of(d), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(d.examples[1].text_a, "bad .");
  EXPECT_EQ(d.examples[1].index, 1);
}

TEST(GlueTraps, MissingFieldNamesFileAndLine) {
  TempDir tmp;
  const std::string path = tmp.write(
      "MRPC/train.tsv", kMrpcHeader + "\n1\t1\t2\ta .\tb .\n0\t3\t4\tonly one sentence .\n");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("mrpc"), tmp.dir(), Split::train); }),
            path + ":3: expected 5 tab-separated fields, got 4");
}

TEST(GlueTraps, LineNumbersCountBlankAndCrlfLines) {
  TempDir tmp;
  const std::string path = tmp.write(
      "RTE/dev.tsv",
      "index\tsentence1\tsentence2\tlabel\r\n0\ta\tb\tentailment\r\n\r\n2\ta\tb\tyes\r\n");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("rte"), tmp.dir(), Split::dev); }),
            path + ":4: label 'yes' is not one of 'entailment', 'not_entailment' (task rte)");
}

TEST(GlueTraps, WrongHeaderWidth) {
  TempDir tmp;
  const std::string path =
      tmp.write("QNLI/dev.tsv", "index\tquestion\tsentence\n0\tq\ts\tentailment\n");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("qnli"), tmp.dir(), Split::dev); }),
            path + ":1: expected 4 tab-separated fields, got 3");
}

TEST(GlueTraps, LabelNotInSet) {
  TempDir tmp;
  const std::string path = tmp.write("MRPC/dev.tsv", kMrpcHeader + "\n2\t1\t2\ta .\tb .\n");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("mrpc"), tmp.dir(), Split::dev); }),
            path + ":2: label '2' is not one of '0', '1' (task mrpc)");
  // MNLI spells its labels as words; a number is not one.
  const std::string row = "0\t1\t1e\tg\tx\tx\tx\tx\ts1\ts2\tentailment\t1\n";
  const std::string header =
      "index\tpromptID\tpairID\tgenre\tb1\tb2\tp1\tp2\tsentence1\tsentence2\tlabel1\tgold_label\n";
  const std::string mnli = tmp.write("MNLI/train.tsv", header + row);
  EXPECT_EQ(
      error_of([&] { read_glue_split(glue_task("mnli"), tmp.dir(), Split::train); }),
      mnli + ":2: label '1' is not one of 'entailment', 'neutral', 'contradiction' (task mnli)");
}

TEST(GlueTraps, StsbScores) {
  TempDir tmp;
  const std::string header =
      "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n";
  auto row = [](const std::string& score) {
    return "0\tg\tf\t2012\t1\tnone\tnone\ta\tb\t" + score + "\n";
  };
  tmp.write("STS-B/train.tsv", header + row("0") + row("5.000") + row("2.4") + row("0.000"));
  const Dataset d = read_glue_split(glue_task("stsb"), tmp.dir(), Split::train);
  ASSERT_EQ(d.examples.size(), 4u);
  EXPECT_EQ(d.examples[1].score, 5.0f);
  EXPECT_EQ(d.examples[2].score, 2.4f);
  EXPECT_TRUE(d.examples[2].has_label);
  for (const std::string bad : {"abc", "5.5", "-0.1", "", "nan", "2.5x"}) {
    const std::string path = tmp.write("STS-B/dev.tsv", header + row("1") + row(bad));
    EXPECT_EQ(error_of([&] { read_glue_split(glue_task("stsb"), tmp.dir(), Split::dev); }),
              path + ":3: score '" + bad + "' is not a number in [0, 5]");
  }
}

TEST(GlueTraps, InvalidUtf8AnywhereInTheFile) {
  TempDir tmp;
  // Bad bytes in the CoLA source column, which the reader otherwise ignores, still fail.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xFF", "stray byte"},
      {"\xC3", "truncated sequence"},
      {"\xC0\xAF", "overlong"},
      {"\xED\xA0\x80", "surrogate"},
      {"\xF4\x90\x80\x80", "past U+10FFFF"},
  };
  const std::string good = "src\t1\t\tcaf\xC3\xA9 \xE2\x80\x9Cok\xE2\x80\x9D \xF0\x9F\x98\x80 .\n";
  for (const auto& [bytes, what] : cases) {
    const std::string content = good + good + "s" + bytes + "\t0\t*\tbad .\n";
    const std::string path = tmp.write("CoLA/train.tsv", content);
    EXPECT_EQ(error_of([&] { read_glue_split(glue_task("cola"), tmp.dir(), Split::train); }),
              path + ":3: invalid UTF-8 at byte offset " + std::to_string(2 * good.size() + 1))
        << what;
  }
  // A sequence cut off by the end of the file.
  const std::string path = tmp.write("CoLA/dev.tsv", good + "src\t1\t\tend \xE2\x80");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("cola"), tmp.dir(), Split::dev); }),
            path + ":2: invalid UTF-8 at byte offset " + std::to_string(good.size() + 11));
  tmp.write("CoLA/dev.tsv", good);
  EXPECT_EQ(read_glue_split(glue_task("cola"), tmp.dir(), Split::dev).examples[0].text_a,
            "caf\xC3\xA9 \xE2\x80\x9Cok\xE2\x80\x9D \xF0\x9F\x98\x80 .");
}

TEST(GlueTraps, EmptySplitAndMissingFile) {
  TempDir tmp;
  const std::string header_only =
      tmp.write("RTE/train.tsv", "index\tsentence1\tsentence2\tlabel\n");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("rte"), tmp.dir(), Split::train); }),
            header_only + ": no examples");
  const std::string empty = tmp.write("CoLA/train.tsv", "");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("cola"), tmp.dir(), Split::train); }),
            empty + ": no examples");
  const std::string missing = tmp.dir() + "/RTE/dev.tsv";
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("rte"), tmp.dir(), Split::dev); }),
            missing + ": cannot open file (No such file or directory)");
}

TEST(GlueTraps, TestIndexMustBeAnInteger) {
  TempDir tmp;
  const std::string path = tmp.write("SST-2/test.tsv", "index\tsentence\n0\ta .\nx1\tb .\n");
  EXPECT_EQ(error_of([&] { read_glue_split(glue_task("sst2"), tmp.dir(), Split::test); }),
            path + ":3: index 'x1' is not an integer");
}

TEST(GlueTraps, SplitPath) {
  EXPECT_EQ(glue_split_path(glue_task("mnli"), "/d", Split::dev, "mismatched"),
            "/d/MNLI/dev_mismatched.tsv");
  EXPECT_EQ(glue_split_path(glue_task("sst2"), "/d/", Split::train), "/d/SST-2/train.tsv");
  EXPECT_EQ(glue_split_path(glue_task("ax"), "/d", Split::test), "/d/diagnostic/diagnostic.tsv");
}

// ---- --train_file / --validation_file / --test_file -------------------------------------

TEST(DataFile, CsvQuotingAndStringLabels) {
  TempDir tmp;
  const std::string train = tmp.write("train.csv",
                                      "\xEF\xBB\xBFsentence2,idx,label,sentence1\r\n"
                                      "\"second, with comma\",0,pos,first\r\n"
                                      "\"say \"\"hi\"\"\",1,neg,\"two\nlines\"\r\n"
                                      "\r\n"
                                      "plain \"inner\" quote,2,pos,x\r\n");
  const DataFileLabels labels = data_file_labels(train);
  EXPECT_FALSE(labels.regression);
  EXPECT_FALSE(labels.integer);
  EXPECT_EQ(labels.names, (Strings{"neg", "pos"}));
  const Dataset d = read_data_file(train, labels);
  ASSERT_EQ(d.examples.size(), 3u);
  // sentence1/sentence2 are used when both exist, wherever they are (the BOM is not part of the
  // first column's name).
  EXPECT_EQ(d.examples[0].text_a, "first");
  EXPECT_EQ(d.examples[0].text_b, "second, with comma");
  EXPECT_EQ(d.examples[1].text_a, "two\nlines");
  EXPECT_EQ(d.examples[1].text_b, "say \"hi\"");
  EXPECT_EQ(d.examples[2].text_b, "plain \"inner\" quote");
  EXPECT_EQ(labels_of(d), (std::vector<int32_t>{1, 0, 1}));
}

// A raw QNLI file (index, question, sentence, label) trains on index + question, as run_glue.py
// picks the first two columns; the reader says so in a note. Named sentence1/sentence2: no note.
TEST(DataFile, AnIndexTakenAsTextIsNoted) {
  TempDir tmp;
  const std::string raw = tmp.write("qnli.tsv",
                                    "index\tquestion\tsentence\tlabel\n"
                                    "0\twhat is it?\tit is a test.\tentailment\n"
                                    "1\twho?\tnobody.\tnot_entailment\n");
  const Dataset d = read_data_file(raw, data_file_labels(raw));
  EXPECT_EQ(d.examples[0].text_a, "0");
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("text column 'index'"), std::string::npos) << d.notes[0];
  EXPECT_NE(d.notes[0].find("holds only integers"), std::string::npos) << d.notes[0];
  const std::string numbers = tmp.write("numbers.tsv", "id\tsentence\tlabel\n7\ta b\t1\n9\tc\t0\n");
  EXPECT_NE(read_data_file(numbers, data_file_labels(numbers)).notes.at(0).find("column 'id'"),
            std::string::npos);
  const std::string named =
      tmp.write("named.tsv", "idx\tsentence1\tsentence2\tlabel\n0\ta\tb\t1\n");
  EXPECT_TRUE(read_data_file(named, data_file_labels(named)).notes.empty());
}

TEST(DataFile, CsvErrorsNameTheRecordLine) {
  TempDir tmp;
  const std::string wrong_width = tmp.write("a.csv", "text,label\n\"multi\nline\",1\nno label\n");
  EXPECT_EQ(error_of([&] { data_file_labels(wrong_width); }),
            wrong_width + ":4: expected 2 fields (one per header column), got 1");
  const std::string open_quote = tmp.write("b.csv", "text,label\nok,1\n\"never closed,1\n");
  EXPECT_EQ(error_of([&] { data_file_labels(open_quote); }),
            open_quote + ":3: quoted field is never closed");
  const std::string dup = tmp.write("c.csv", "text,text,label\na,b,1\n");
  EXPECT_EQ(error_of([&] { data_file_labels(dup); }),
            dup + ":1: column 'text' appears twice in the header");
}

TEST(DataFile, IntegerLabelsSortNumerically) {
  TempDir tmp;
  const std::string train = tmp.write("train.csv", "text,label\na,10\nb,2\nc,1\nd,2\n");
  const DataFileLabels labels = data_file_labels(train);
  EXPECT_TRUE(labels.integer);
  EXPECT_EQ(labels.names, (Strings{"1", "2", "10"}));
  const Dataset d = read_data_file(train, labels);
  EXPECT_EQ(labels_of(d), (std::vector<int32_t>{2, 1, 0, 1}));
  EXPECT_FALSE(d.examples[0].has_b);  // one text column: single sentences

  // Unlabelled test rows carry -1; a label the train file never had is an error.
  const std::string test = tmp.write("test.csv", "text,label\nx,-1\ny,10\n");
  const Dataset t = read_data_file(test, labels);
  EXPECT_FALSE(t.examples[0].has_label);
  EXPECT_EQ(t.examples[1].label, 2);
  const std::string dev = tmp.write("dev.csv", "text,label\nx,3\n");
  EXPECT_EQ(error_of([&] { read_data_file(dev, labels); }),
            dev + ":2: label '3' is not one of '1', '2', '10'");
  const std::string bad_train = tmp.write("bad.csv", "text,label\nx,-1\n");
  EXPECT_EQ(error_of([&] { data_file_labels(bad_train); }),
            bad_train + ":2: label -1 (unlabelled) in a train file");
}

TEST(DataFile, FloatLabelsMeanRegression) {
  TempDir tmp;
  const std::string train = tmp.write("train.csv", "sentence1,sentence2,label\na,b,1\nc,d,2.5\n");
  const DataFileLabels labels = data_file_labels(train);
  EXPECT_TRUE(labels.regression);
  const Dataset d = read_data_file(train, labels);
  EXPECT_EQ(d.examples[0].score, 1.0f);
  EXPECT_EQ(d.examples[1].score, 2.5f);
  EXPECT_TRUE(d.examples[1].has_label);
  EXPECT_EQ(data_file_task(labels).metric_names, (Strings{"mse"}));
  EXPECT_TRUE(data_file_task(labels).is_regression());
  const std::string dev = tmp.write("dev.csv", "sentence1,sentence2,label\na,b,high\n");
  EXPECT_EQ(error_of([&] { read_data_file(dev, labels); }),
            dev + ":2: label 'high' is not a number");
  // Found by fuzz_data_reader: a finite double beyond float's range became an inf score.
  const std::string huge = tmp.write("huge.csv", "sentence1,sentence2,label\na,b,1e300\n");
  EXPECT_EQ(error_of([&] { read_data_file(huge, labels); }),
            huge + ":2: label '1e300' is beyond float's range");
}

TEST(DataFile, TsvTakesQuotesLiterally) {
  TempDir tmp;
  const std::string train =
      tmp.write("train.tsv", "premise\thypothesis\tlabel\n\"open\tclosed\"\tyes\r\nx\ty\tno");
  const DataFileLabels labels = data_file_labels(train);
  const Dataset d = read_data_file(train, labels);
  // No sentence1/sentence2: the first two non-label columns.
  EXPECT_EQ(d.examples[0].text_a, "\"open");
  EXPECT_EQ(d.examples[0].text_b, "closed\"");
  EXPECT_EQ(labels_of(d), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(data_file_task(labels).metric_names, (Strings{"accuracy"}));
  EXPECT_EQ(data_file_task(labels).labels, (Strings{"no", "yes"}));
}

TEST(DataFile, JsonLines) {
  TempDir tmp;
  const std::string train = tmp.write(
      "train.jsonl",
      "{\"text\": \"caf\\u00e9 \\\"q\\\"\", \"label\": 1}\n\n{\"label\": 0, \"text\": \"b\"}\r\n");
  const DataFileLabels labels = data_file_labels(train);
  EXPECT_TRUE(labels.integer);
  EXPECT_EQ(labels.names, (Strings{"0", "1"}));
  const Dataset d = read_data_file(train, labels);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[0].text_a, "caf\xC3\xA9 \"q\"");
  EXPECT_FALSE(d.examples[0].has_b);
  EXPECT_EQ(labels_of(d), (std::vector<int32_t>{1, 0}));

  const std::string floats =
      tmp.write("r.json", "{\"s\": \"a\", \"label\": 1}\n{\"s\": \"b\", \"label\": 0.5}\n");
  EXPECT_TRUE(data_file_labels(floats).regression);
  const std::string mixed =
      tmp.write("m.json", "{\"s\": \"a\", \"label\": 1}\n{\"s\": \"b\", \"label\": \"x\"}\n");
  EXPECT_EQ(error_of([&] { data_file_labels(mixed); }),
            mixed + ":2: label column mixes strings and numbers");
  const std::string broken =
      tmp.write("b.jsonl", "{\"s\": \"a\", \"label\": 1}\n{\"s\": \"b\", \n");
  EXPECT_TRUE(error_of([&] { data_file_labels(broken); }).starts_with(broken + ":2: "));
  const std::string not_text = tmp.write("n.jsonl", "{\"s\": 5, \"label\": 1}\n");
  EXPECT_EQ(error_of([&] { read_data_file(not_text, labels); }),
            not_text + ":1: column 's' must be a string, got 5");
  // An integer beyond int64 wrapped (here to -1, "unlabelled") before.
  const std::string wraps =
      tmp.write("w.jsonl", "{\"s\": \"a\", \"label\": 18446744073709551615}\n");
  EXPECT_EQ(error_of([&] { read_data_file(wraps, labels); }),
            wraps + ":1: column 'label': 18446744073709551615 is beyond int64");
  // A test file without labels.
  const std::string test = tmp.write("t.jsonl", "{\"text\": \"x\"}\n");
  EXPECT_FALSE(read_data_file(test, labels).examples[0].has_label);
}

TEST(DataFile, JsonArray) {
  TempDir tmp;
  const std::string path =
      tmp.write("train.json",
                "[{\"sentence1\": \"a\", \"sentence2\": \"b\", \"label\": \"yes\"},\n"
                " {\"sentence1\": \"c\", \"sentence2\": \"d\", \"label\": \"no\"},\n"
                " {\"sentence1\": \"e\", \"label\": \"no\"}]");
  const DataFileLabels labels = data_file_labels(path);
  EXPECT_EQ(labels.names, (Strings{"no", "yes"}));
  EXPECT_EQ(error_of([&] { read_data_file(path, labels); }),
            path + ": record 3: no value for column 'sentence2'");
}

TEST(DataFile, FileLevelErrors) {
  TempDir tmp;
  const std::string txt = tmp.write("data.txt", "a\n");
  EXPECT_EQ(error_of([&] { data_file_labels(txt); }),
            txt + ": unknown data file type '.txt' (expected .csv, .tsv, .json or .jsonl)");
  const std::string no_label = tmp.write("x.csv", "text\na\n");
  EXPECT_EQ(error_of([&] { data_file_labels(no_label); }), no_label + ": no 'label' column");
  const std::string only_label = tmp.write("y.csv", "label\n1\n");
  EXPECT_EQ(error_of([&] { read_data_file(only_label, DataFileLabels{}); }),
            only_label + ": no text column besides 'label'");
  const std::string header_only = tmp.write("z.csv", "text,label\n");
  EXPECT_EQ(error_of([&] { data_file_labels(header_only); }), header_only + ": no examples");
  const std::string bad_utf8 = tmp.write("u.csv", "text,label\n\xFE,1\n");
  EXPECT_EQ(error_of([&] { data_file_labels(bad_utf8); }),
            bad_utf8 + ":2: invalid UTF-8 at byte offset 11");
  EXPECT_EQ(error_of([&] { data_file_labels(tmp.dir() + "/none.csv"); }),
            tmp.dir() + "/none.csv: cannot open file (No such file or directory)");
}

}  // namespace
}  // namespace cpuft
