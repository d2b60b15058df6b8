// find_glue_data and the hub parquet reader, on tests/fixtures/glue_parquet (a hub cache written
// by tools/make_parquet_fixtures.py) and data/glue.
#include "data/glue_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "core/check.h"
#include "core/scoped_env.h"
#include "test_paths.h"

namespace cpuft {
namespace {

const char* const kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string hub_root(const std::string& which = "hub") {
  return testing::fixture_path("glue_parquet/" + which);
}

std::string snapshot(const std::string& which = "hub") {
  return hub_root(which) + "/datasets--nyu-mll--glue/snapshots/" + kCommit;
}

// The message of the Error `fn` throws ("" when it throws none).
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define SKIP_WITHOUT_ARROW()                                                                \
  if (!glue_parquet_supported())                                                            \
  GTEST_SKIP() << "built without Apache Arrow (scripts/fetch_arrow.sh, then reconfigure); " \
                  "the hub parquet reader is not compiled in"

TEST(GlueSource, HubCacheFolderAsHuggingfaceHubResolvesIt) {
  ScopedEnv home("HOME", "/home/u");
  ScopedEnv a("HF_HUB_CACHE", std::nullopt), b("HUGGINGFACE_HUB_CACHE", std::nullopt),
      c("HF_HOME", std::nullopt), d("XDG_CACHE_HOME", std::nullopt);
  EXPECT_EQ(hf_hub_cache_dir(), "/home/u/.cache/huggingface/hub");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(hf_hub_cache_dir(), "/xdg/huggingface/hub");
    ScopedEnv hf_home("HF_HOME", "~/hf");
    EXPECT_EQ(hf_hub_cache_dir(), "/home/u/hf/hub");
    ScopedEnv legacy("HUGGINGFACE_HUB_CACHE", "/legacy");
    EXPECT_EQ(hf_hub_cache_dir(), "/legacy");
    ScopedEnv hub("HF_HUB_CACHE", "/hub");
    EXPECT_EQ(hf_hub_cache_dir(), "/hub");
  }
}

TEST(GlueSource, HubSplitNames) {
  const GlueTask& mnli = glue_task("mnli");
  EXPECT_EQ(hub_split_name(mnli, Split::train), "train");
  EXPECT_EQ(hub_split_name(mnli, Split::dev), "validation_matched");
  EXPECT_EQ(hub_split_name(mnli, Split::dev, "mismatched"), "validation_mismatched");
  EXPECT_EQ(hub_split_name(mnli, Split::test, "matched"), "test_matched");
  EXPECT_EQ(hub_split_name(mnli, Split::test, "mismatched"), "test_mismatched");
  EXPECT_EQ(hub_split_name(glue_task("mrpc"), Split::dev), "validation");
  EXPECT_EQ(hub_split_name(glue_task("ax"), Split::test), "test");
  EXPECT_EQ(error_of([] { hub_split_name(glue_task("ax"), Split::train); }),
            "task ax has no train split");
  EXPECT_EQ(error_of([&] { hub_split_name(mnli, Split::dev, "both"); }),
            "task mnli dev split has no variant 'both'; valid: 'matched', 'mismatched'");
}

TEST(GlueSource, ParquetFilesInShardOrder) {
  const std::string snap = snapshot();
  const std::vector<std::string> qnli = glue_parquet_files(glue_task("qnli"), snap, Split::train);
  ASSERT_EQ(qnli.size(), 2u);
  EXPECT_EQ(qnli[0], snap + "/qnli/train-00000-of-00002.parquet");
  EXPECT_EQ(qnli[1], snap + "/qnli/train-00001-of-00002.parquet");
  const std::vector<std::string> mnli =
      glue_parquet_files(glue_task("mnli"), snap, Split::test, "mismatched");
  ASSERT_EQ(mnli.size(), 1u);
  EXPECT_EQ(mnli[0], snap + "/mnli/test_mismatched-00000-of-00001.parquet");
  EXPECT_EQ(error_of([&] { glue_parquet_files(glue_task("qnli"), snap, Split::test); }),
            snap + "/qnli: no test-*-of-*.parquet (task qnli test split in the hub cache)");
}

TEST(GlueSource, FindsTheHubSnapshotFirst) {
  SKIP_WITHOUT_ARROW();
  ScopedEnv glue_dir("GLUE_DIR", testing::glue_dir());
  GlueSearch search;
  search.hub_cache = hub_root();
  const GlueSource source = find_glue_data(glue_task("mrpc"), search);
  EXPECT_EQ(source.kind, GlueSource::Kind::hub_parquet);
  EXPECT_EQ(source.dir, snapshot());
  EXPECT_EQ(source.origin, "Hugging Face hub cache, nyu-mll/glue at main");

  search.revision = kCommit;  // a commit hash instead of a ref
  EXPECT_EQ(find_glue_data(glue_task("mrpc"), search).dir, snapshot());

  // The hub cache of HF_HUB_CACHE when no folder is given.
  ScopedEnv hub("HF_HUB_CACHE", hub_root());
  EXPECT_EQ(find_glue_data(glue_task("mnli")).dir, snapshot());
}

TEST(GlueSource, FallsBackOnGlueDirThenTheRepository) {
  const std::string empty_cache = testing::fixture_path("glue_parquet/no_such_cache");
  GlueSearch search;
  search.hub_cache = empty_cache;
  {
    ScopedEnv glue_dir("GLUE_DIR", testing::glue_dir());
    const GlueSource source = find_glue_data(glue_task("rte"), search);
    EXPECT_EQ(source.kind, GlueSource::Kind::tsv);
    EXPECT_EQ(source.dir, testing::glue_dir());
    EXPECT_EQ(source.origin, "GLUE_DIR");
  }
  ScopedEnv glue_dir("GLUE_DIR", std::nullopt);
  const GlueSource repo = find_glue_data(glue_task("rte"), search);
  EXPECT_EQ(repo.kind, GlueSource::Kind::tsv);
  EXPECT_EQ(repo.origin, "the repository's data/glue");
  EXPECT_TRUE(std::filesystem::equivalent(repo.dir, testing::glue_dir()));

  // A hub cache without the task's config passes on to the TSV folders.
  search.hub_cache = hub_root();
  EXPECT_EQ(find_glue_data(glue_task("rte"), search).kind, GlueSource::Kind::tsv);

  // --data_dir is the only place when given.
  search.data_dir = "/somewhere/glue";
  const GlueSource given = find_glue_data(glue_task("mrpc"), search);
  EXPECT_EQ(given.kind, GlueSource::Kind::tsv);
  EXPECT_EQ(given.dir, "/somewhere/glue");
  EXPECT_EQ(given.origin, "--data_dir");
}

TEST(GlueSource, NothingFoundListsEveryPlaceOnOneLine) {
  ScopedEnv glue_dir("GLUE_DIR", std::nullopt);
  GlueSearch search;
  search.hub_cache = hub_root();
  search.repo_data_dir = testing::glue_dir();
  EXPECT_FALSE(locate_glue_data(glue_task("qqp"), search));
  const std::string message = error_of([&] { find_glue_data(glue_task("qqp"), search); });
  EXPECT_EQ(message,
            "no data for task qqp (give --data_dir, or download it with "
            "datasets.load_dataset(\"nyu-mll/glue\", \"qqp\")); tried: " +
                snapshot() + "/qqp (not there); " + hub_root() +
                "/datasets--glue (not there); $GLUE_DIR (not set); " + testing::glue_dir() +
                "/QQP (not there)");
  EXPECT_EQ(message.find('\n'), std::string::npos);

  search.revision = "v2";
  const std::string no_ref = error_of([&] { find_glue_data(glue_task("qqp"), search); });
  EXPECT_NE(no_ref.find(hub_root() + "/datasets--nyu-mll--glue (no refs/v2 and no snapshots/v2)"),
            std::string::npos)
      << no_ref;
}

TEST(GlueParquet, MrpcGivesTheRowsOfTheTsvFiles) {
  SKIP_WITHOUT_ARROW();
  const GlueTask& mrpc = glue_task("mrpc");
  const GlueSource hub{GlueSource::Kind::hub_parquet, snapshot(), "test"};
  const GlueSource tsv{GlueSource::Kind::tsv, testing::glue_dir(), "test"};
  struct Case {
    Split split;
    size_t rows;
  };
  for (const Case& c : {Case{Split::train, 5}, Case{Split::dev, 3}, Case{Split::test, 2}}) {
    const Dataset parquet = read_glue_split(mrpc, hub, c.split);
    const Dataset text = read_glue_split(mrpc, tsv, c.split);
    EXPECT_EQ(parquet.name, text.name);
    ASSERT_EQ(parquet.examples.size(), c.rows);
    for (size_t i = 0; i < c.rows; ++i) {
      const Example& p = parquet.examples[i];
      const Example& t = text.examples[i];
      EXPECT_EQ(p.text_a, t.text_a) << i;
      EXPECT_EQ(p.text_b, t.text_b) << i;
      EXPECT_TRUE(p.has_b);
      EXPECT_EQ(p.has_label, t.has_label) << i;
      EXPECT_EQ(p.label, t.label) << i;
      EXPECT_EQ(p.index, t.index) << i;
    }
  }
  const Dataset train = read_glue_split(mrpc, hub, Split::train);
  EXPECT_EQ(train.path, snapshot() + "/mrpc/train-00000-of-00001.parquet");
  EXPECT_EQ(train.examples[0].label, 1);  // equivalent
  EXPECT_EQ(train.examples[1].label, 0);  // not_equivalent
  EXPECT_EQ(train.examples[0].text_a.substr(0, 22), "Amrozi accused his bro");
}

TEST(GlueParquet, StsbScores) {
  SKIP_WITHOUT_ARROW();
  const GlueTask& stsb = glue_task("stsb");
  const Dataset train = read_glue_parquet_split(stsb, snapshot(), Split::train);
  ASSERT_EQ(train.examples.size(), 3u);
  EXPECT_EQ(train.name, "stsb train");
  EXPECT_EQ(train.examples[0].text_a, "A plane is taking off.");
  EXPECT_EQ(train.examples[0].text_b, "An air plane is taking off.");
  EXPECT_FLOAT_EQ(train.examples[0].score, 5.0f);
  EXPECT_FLOAT_EQ(train.examples[1].score, 3.8f);
  EXPECT_FLOAT_EQ(train.examples[2].score, 0.0f);
  for (const Example& e : train.examples) {
    EXPECT_TRUE(e.has_label);
    EXPECT_EQ(e.label, -1);
  }
  EXPECT_FLOAT_EQ(read_glue_parquet_split(stsb, snapshot(), Split::dev).examples[1].score, 4.75f);
  const Dataset test = read_glue_parquet_split(stsb, snapshot(), Split::test);
  ASSERT_EQ(test.examples.size(), 1u);
  EXPECT_FALSE(test.examples[0].has_label);
}

TEST(GlueParquet, MnliSplitsAndLabels) {
  SKIP_WITHOUT_ARROW();
  const GlueTask& mnli = glue_task("mnli");
  const Dataset train = read_glue_parquet_split(mnli, snapshot(), Split::train);
  ASSERT_EQ(train.examples.size(), 5u);
  EXPECT_EQ(train.examples[0].text_a, "Conceptually cream skimming has two basic dimensions.");
  EXPECT_EQ(train.examples[0].text_b, "Product and geography are what make cream skimming work.");
  std::vector<std::string> names;
  for (const Example& e : train.examples) names.push_back(mnli.labels[size_t(e.label)]);
  EXPECT_EQ(names, (std::vector<std::string>{"neutral", "entailment", "entailment", "entailment",
                                             "contradiction"}));
  const Dataset matched = read_glue_parquet_split(mnli, snapshot(), Split::dev);
  EXPECT_EQ(matched.name, "mnli dev matched");
  ASSERT_EQ(matched.examples.size(), 2u);
  const Dataset mismatched = read_glue_parquet_split(mnli, snapshot(), Split::dev, "mismatched");
  EXPECT_EQ(mismatched.name, "mnli dev mismatched");
  ASSERT_EQ(mismatched.examples.size(), 3u);
  EXPECT_EQ(mismatched.examples[0].label, 2);  // contradiction
  const Dataset test = read_glue_parquet_split(mnli, snapshot(), Split::test, "mismatched");
  ASSERT_EQ(test.examples.size(), 2u);
  EXPECT_FALSE(test.examples[1].has_label);
  EXPECT_EQ(test.examples[1].index, 1);
  EXPECT_EQ(read_glue_parquet_split(mnli, snapshot(), Split::test).examples.size(), 1u);
}

TEST(GlueParquet, ColaSingleSentencesAndUnicode) {
  SKIP_WITHOUT_ARROW();
  const Dataset train = read_glue_parquet_split(glue_task("cola"), snapshot(), Split::train);
  ASSERT_EQ(train.examples.size(), 4u);
  EXPECT_FALSE(train.examples[0].has_b);
  EXPECT_EQ(train.examples[2].text_a, "They drank the pub.");
  EXPECT_EQ(train.examples[2].label, 0);  // unacceptable
  EXPECT_EQ(
      train.examples[3].text_a,
      "\xC3\x87"
      "a m'\xC3\xA9tonne: na\xC3\xAFve caf\xC3\xA9, Stra\xC3\x9F"
      "e, "
      "\xE6\x9D\xB1\xE4\xBA\xAC, \xF0\x9F\x98\x80 \xE2\x80\x94 \xE2\x80\x9Cquoted\xE2\x80\x9D.");
  EXPECT_EQ(train.examples[3].label, 1);  // acceptable
}

TEST(GlueParquet, QnliShardsAreConcatenated) {
  SKIP_WITHOUT_ARROW();
  const GlueTask& qnli = glue_task("qnli");
  const Dataset train = read_glue_parquet_split(qnli, snapshot(), Split::train);
  EXPECT_EQ(train.path, snapshot() + "/qnli/train-*.parquet");
  ASSERT_EQ(train.examples.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(train.examples[i].index, int64_t(i));
  EXPECT_EQ(train.examples[3].text_a,
            "Wie hei\xC3\x9Ft die Stadt? \xC2\xBF"
            "D\xC3\xB3nde est\xC3\xA1?");
  EXPECT_EQ(qnli.labels[size_t(train.examples[0].label)], "not_entailment");
  EXPECT_EQ(qnli.labels[size_t(train.examples[3].label)], "entailment");
}

TEST(GlueParquet, LabelsAreMappedByClassLabelName) {
  SKIP_WITHOUT_ARROW();
  // This file lists its ClassLabel names as not_entailment, entailment: its label 0 is
  // not_entailment, which is id 1 of the task (and of the hub's rte).
  const GlueTask& rte = glue_task("rte");
  const Dataset train = read_glue_parquet_split(rte, snapshot("hub_permuted"), Split::train);
  ASSERT_EQ(train.examples.size(), 2u);
  EXPECT_EQ(rte.labels[size_t(train.examples[0].label)], "not_entailment");
  EXPECT_EQ(rte.labels[size_t(train.examples[1].label)], "entailment");
  // A task whose label names the file does not have.
  GlueTask renamed = rte;
  renamed.labels = {"yes", "no"};
  const std::string wrong =
      error_of([&] { read_glue_parquet_split(renamed, snapshot("hub_permuted"), Split::train); });
  EXPECT_EQ(wrong, snapshot("hub_permuted") +
                       "/rte/train-00000-of-00001.parquet: ClassLabel name 'not_entailment' is not "
                       "a label of task rte");
}

TEST(GlueParquet, CorruptFilesGiveOneLine) {
  SKIP_WITHOUT_ARROW();
  // train: cut in half; validation: a TSV file; test: column data overwritten, footer intact.
  const GlueTask& mrpc = glue_task("mrpc");
  const std::string folder = snapshot("corrupt") + "/mrpc/";
  struct Case {
    Split split;
    std::string file;
  };
  for (const Case& c :
       {Case{Split::train, "train"}, Case{Split::dev, "validation"}, Case{Split::test, "test"}}) {
    const std::string message =
        error_of([&] { read_glue_parquet_split(mrpc, snapshot("corrupt"), c.split); });
    EXPECT_EQ(message.rfind(folder + c.file +
                                "-00000-of-00001.parquet: not a readable parquet "
                                "file: ",
                            0),
              0u)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// A build with Arrow reads parquet; one without says, in one line, how to get it.
TEST(GlueParquet, ArrowPresenceMatchesTheBuild) {
#ifdef CPUFT_HAVE_ARROW
  EXPECT_TRUE(glue_parquet_supported());
#else
  ASSERT_FALSE(glue_parquet_supported());
  const std::string message =
      error_of([] { read_glue_parquet_split(glue_task("mrpc"), snapshot(), Split::train); });
  EXPECT_NE(message.find("scripts/fetch_arrow.sh"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  // The hub snapshot is passed over, and the place tried says why.
  ScopedEnv glue_dir("GLUE_DIR", std::nullopt);
  GlueSearch search;
  search.hub_cache = hub_root();
  search.repo_data_dir = "";
  const std::string none = error_of([&] { find_glue_data(glue_task("mrpc"), search); });
  EXPECT_NE(none.find("/mrpc (parquet, but this build has no Apache Arrow: scripts/fetch_arrow.sh"),
            std::string::npos)
      << none;
#endif
}

}  // namespace
}  // namespace cpuft
