// cpuft train's command line: HfArgumentParser's grammar, the four flag classes, args files, and
// the table against transformers' own list of TrainingArguments fields.
#include "train/train_flags.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/check.h"
#include "test_paths.h"

namespace fs = std::filesystem;

namespace cpuft {
namespace {

using Args = std::vector<std::string>;

TrainConfig parse(const Args& args) {
  TrainConfig config;
  EXPECT_TRUE(parse_train_arguments(args, config));
  return config;
}

// The usage error's text; "" when the arguments parse.
std::string usage_error(const Args& args) {
  TrainConfig config;
  try {
    parse_train_arguments(args, config);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

bool has_notice(const TrainConfig& c, const std::string& part) {
  for (const std::string& notice : c.notices)
    if (notice.find(part) != std::string::npos) return true;
  return false;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / str("cpuft_flags_", ::getpid(), "_", name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(TrainFlags, RunGlueLineAndDefaults) {
  const TrainConfig c =
      parse({"--model_name_or_path", "m", "--task_name", "mrpc", "--do_train", "--do_eval",
             "--learning_rate", "2e-5", "--num_train_epochs", "3", "--per_device_train_batch_size",
             "32", "--output_dir", "o", "--evaluation_strategy", "epoch"});
  EXPECT_TRUE(c.do_train);
  EXPECT_TRUE(c.do_eval);
  EXPECT_FALSE(c.do_predict);
  EXPECT_DOUBLE_EQ(c.learning_rate, 2e-5);
  EXPECT_EQ(c.per_device_train_batch_size, 32);
  EXPECT_EQ(c.per_device_eval_batch_size, 8);  // TrainingArguments' default
  EXPECT_EQ(c.max_seq_length, 128);            // run_glue's default
  EXPECT_EQ(c.eval_strategy, "epoch");         // mapped from the old name, with a notice
  EXPECT_TRUE(has_notice(c, "--evaluation_strategy epoch: mapped -> --eval_strategy"));
  EXPECT_EQ(c.seed, 42u);
}

TEST(TrainFlags, BooleanGrammarOfHfArgumentParser) {
  TrainConfig c = parse({"--do_train", "--overwrite_output_dir", "True", "--do_eval=YES",
                         "--do_predict", "0", "--disable_tqdm", "t", "--seed=7"});
  EXPECT_TRUE(c.do_train);
  EXPECT_TRUE(c.overwrite_output_dir);
  EXPECT_TRUE(c.do_eval);
  EXPECT_FALSE(c.do_predict);
  EXPECT_TRUE(c.disable_tqdm);
  EXPECT_EQ(c.seed, 7u);
  // A boolean's next word must be a boolean, as argparse with string_to_bool.
  EXPECT_NE(usage_error({"--do_train", "maybe"}).find("--do_train: expected a boolean"),
            std::string::npos);
  EXPECT_NE(usage_error({"--do_train=maybe"})
                .find("--do_train: expected a boolean (true/false, yes/no, 1/0), got 'maybe'"),
            std::string::npos);
  // --no_X exists for booleans whose default is true, and only for them.
  c = parse({"--no_pad_to_max_length", "--no_dataloader_pin_memory"});
  EXPECT_TRUE(has_notice(c, "--pad_to_max_length false: accepted, changes nothing"));
  EXPECT_NE(usage_error({"--no_do_train"}).find("unknown flag --no_do_train"), std::string::npos);
}

TEST(TrainFlags, ValuesListsAndPrefixes) {
  TrainConfig c = parse({"--report_to", "tensorboard", "--per_device_train", "4", "--learning_rate",
                         "-1e-3", "--output_dir=a=b"});
  EXPECT_EQ(c.report_to, (Args{"tensorboard"}));
  EXPECT_EQ(c.per_device_train_batch_size, 4);  // a unique prefix, as argparse's allow_abbrev
  EXPECT_DOUBLE_EQ(c.learning_rate, -1e-3);     // a negative number is a value, not a flag
  EXPECT_EQ(c.output_dir, "a=b");
  EXPECT_NE(usage_error({"--per_device", "4"}).find("ambiguous flag --per_device"),
            std::string::npos);
  EXPECT_NE(usage_error({"--max_steps", "ten"}).find("--max_steps: expected an integer, got 'ten'"),
            std::string::npos);
  EXPECT_NE(usage_error({"--learning_rate"}).find("--learning_rate needs a value"),
            std::string::npos);
  EXPECT_NE(usage_error({"--num_train_epochs", "inf"}).find("expected a finite number"),
            std::string::npos);
  EXPECT_NE(usage_error({"--learning_rate", "nan"}).find("expected a finite number"),
            std::string::npos);
  EXPECT_NE(usage_error({"--report_to", "wandb"}).find("use tensorboard, all or none"),
            std::string::npos);
  EXPECT_NE(usage_error({"--log_level", "loud"}).find("--log_level: 'loud' is not one of"),
            std::string::npos);
  // Found by fuzz_train_args: an int flag's value beyond int's range wrapped (4294967424 -> 128).
  EXPECT_EQ(usage_error({"--max_seq_length", "4294967424"}),
            "--max_seq_length: 4294967424 is out of range");
  EXPECT_EQ(usage_error({"--local_rank", "-4294967295"}),
            "--local_rank: -4294967295 is out of range");
  // Found by fuzz_train_args: a value that is not UTF-8 made training_args.json's dump() throw.
  EXPECT_EQ(usage_error({"--output_dir", "runs/\xff"}),
            "--output_dir: the value is not valid UTF-8");
  // A flag given twice: the last value wins, as argparse.
  c = parse({"--seed", "1", "--seed", "2"});
  EXPECT_EQ(c.seed, 2u);
}

TEST(TrainFlags, UnknownFlagNamesTheNearest) {
  EXPECT_EQ(usage_error({"--learning_rte", "1"}),
            "unknown flag --learning_rte (did you mean --learning_rate?)");
  EXPECT_TRUE(usage_error({"--learning_rat", "1"}).empty());  // a prefix, as argparse
  EXPECT_EQ(usage_error({"--zzzzzzzzzzzzzzzz"}), "unknown flag --zzzzzzzzzzzzzzzz");
  EXPECT_NE(usage_error({"-x"}).find("unknown flag -x"), std::string::npos);
  EXPECT_NE(usage_error({"stray"}).find("unexpected argument 'stray'"), std::string::npos);
}

TEST(TrainFlags, MappedNoticedAndRefused) {
  TrainConfig c = parse({"--xpu_backend", "ccl", "--no_cuda", "True", "--local_rank", "1",
                         "--ddp_bucket_cap_mb", "50", "--ddp_timeout", "60", "--fp16", "False"});
  EXPECT_EQ(c.dist_backend, "ccl");
  EXPECT_DOUBLE_EQ(c.bucket_cap_mb, 50);
  EXPECT_DOUBLE_EQ(c.dist_timeout, 60);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_TRUE(has_notice(c, "--xpu_backend ccl: mapped -> --dist_backend"));
  EXPECT_TRUE(has_notice(c, "--no_cuda true: accepted, changes nothing: cpuft runs only on CPUs"));
  EXPECT_TRUE(has_notice(c, "--fp16 false: accepted, changes nothing"));
  EXPECT_EQ(c.notices.size(), 6u);  // one line per flag that is not plainly implemented
  EXPECT_EQ(parse({"--ddp_backend", "gloo"}).dist_backend, "auto");
  EXPECT_EQ(parse({"--ddp_backend", "mpi"}).dist_backend, "mpi");
  EXPECT_NE(usage_error({"--ddp_backend", "nccl"}).find("use mpi, ccl or gloo"), std::string::npos);
  EXPECT_EQ(usage_error({"--fp16"}),
            "--fp16 true: CPUs have no fp16 training path here; use --bf16");
  EXPECT_NE(usage_error({"--push_to_hub", "True"}).find("no network"), std::string::npos);
  EXPECT_NE(usage_error({"--no_save_safetensors"}).find("never pickles"), std::string::npos);
  EXPECT_NE(usage_error({"--fsdp", "full_shard", "auto_wrap"}).find("data parallel only"),
            std::string::npos);
  EXPECT_TRUE(usage_error({"--save_safetensors", "True"}).empty());
}

TEST(TrainFlags, ArgsFilesAndTheCommandLineHasTheLastWord) {
  const std::string json = temp_file("args.json", R"({
      "model_name_or_path": "m", "do_train": true, "learning_rate": 3e-5, "output_dir": "o",
      "task_name": "rte", "report_to": ["none"], "seed": 5, "run_name": null,
      "lr_scheduler_kwargs": {"power": 2.0}, "no_cuda": "True"})");
  TrainConfig c = parse({json, "--seed", "9"});
  EXPECT_TRUE(c.do_train);
  EXPECT_DOUBLE_EQ(c.learning_rate, 3e-5);
  EXPECT_EQ(c.task_name, "rte");
  EXPECT_EQ(c.seed, 9u);  // the command line wins over the file
  EXPECT_EQ(c.run_name, "");
  EXPECT_EQ(c.lr_scheduler_kwargs, R"({"power":2.0})");
  EXPECT_TRUE(has_notice(c, "--no_cuda true (" + json + "): accepted"));

  const std::string yaml = temp_file("args.yaml",
                                     "model_name_or_path: m\n"
                                     "do_train: yes\n"
                                     "learning_rate: 4.0e-5\n"
                                     "report_to:\n  - tensorboard\n"
                                     "output_dir: out dir\n");
  c = parse({yaml});
  EXPECT_TRUE(c.do_train);
  EXPECT_DOUBLE_EQ(c.learning_rate, 4e-5);
  EXPECT_EQ(c.report_to, (Args{"tensorboard"}));
  EXPECT_EQ(c.output_dir, "out dir");

  const std::string typo = temp_file("typo.json", R"({"learning_rat": 3e-5})");
  EXPECT_NE(usage_error({typo}).find("unknown key 'learning_rat' (did you mean --learning_rate?)"),
            std::string::npos);
  const std::string wrong = temp_file("wrong.json", R"({"learning_rate": "fast"})");
  EXPECT_NE(usage_error({wrong}).find("--learning_rate: expected a finite number, got 'fast'"),
            std::string::npos);
  const std::string broken = temp_file("broken.yml", "a: [1, 2\n");
  TrainConfig config;
  try {
    parse_train_arguments({broken}, config);
    ADD_FAILURE() << "broken YAML accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid YAML"), std::string::npos);
  }
  // Found by fuzz_train_args: a number JSON cannot hold was nlohmann's out_of_range, uncaught.
  const std::string huge = temp_file("huge.json", R"({"learning_rate": 1e999})");
  try {
    parse_train_arguments({huge}, config);
    ADD_FAILURE() << "1e999 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(huge + ": not valid JSON"), std::string::npos);
  }
  // Found by fuzz_train_args: nested aliases expanded to 10^9 values.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += str("a", i, ": &a", i, " [");
    for (int j = 0; j < 10; ++j) text += str(j ? ", " : "", "*a", i - 1);
    text += "]\n";
  }
  const std::string laughs = temp_file("laughs.yaml", text);
  try {
    parse_train_arguments({laughs}, config);
    ADD_FAILURE() << "nested aliases accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              laughs + ": expands to more than 100000 values (nested aliases?)");
  }
  // Found by fuzz_train_args: a YAML key that is not UTF-8 (in a dict value) made dump() throw.
  const std::string latin1 = temp_file("latin1.yaml", "report_to:\n  \xff: 1\n");
  try {
    parse_train_arguments({latin1}, config);
    ADD_FAILURE() << "invalid UTF-8 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), latin1 + ": not valid UTF-8 at byte 13");
  }
  EXPECT_NE(usage_error({json, "extra.json"}).find("one args file at most"), std::string::npos);
  for (const std::string& f : {json, yaml, typo, wrong, broken, huge, laughs, latin1})
    fs::remove(f);
}

std::set<std::string> names_in(const std::string& fixture) {
  std::ifstream in(testing::fixture_path("training_arguments/" + fixture));
  EXPECT_TRUE(in.good()) << fixture;
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') names.insert(line);
  return names;
}

// Every field of transformers 5.24's TrainingArguments, of 4.46's and of run_glue.py has a row,
// with the origin it claims.
TEST(TrainFlags, EveryTrainingArgumentsFieldIsClassified) {
  const std::set<std::string> v5 = names_in("transformers-5.24.txt");
  const std::set<std::string> v4 = names_in("transformers-4.46.3.txt");
  const std::set<std::string> run_glue = names_in("run_glue.txt");
  EXPECT_GT(v5.size(), 100u);
  EXPECT_GT(v4.size(), 120u);
  std::map<std::string, std::string> origin;
  for (const TrainFlag& flag : train_flags()) {
    EXPECT_TRUE(origin.emplace(flag.name, flag.origin).second) << "two rows for " << flag.name;
    EXPECT_FALSE(flag.doc.empty()) << flag.name;
    if (flag.cls == FlagClass::implemented || flag.cls == FlagClass::mapped) {
      EXPECT_TRUE(flag.set) << flag.name;
    }
  }
  for (const std::string& name : v5) {
    ASSERT_TRUE(origin.count(name)) << "TrainingArguments." << name << " has no row";
    EXPECT_EQ(origin[name], "TrainingArguments") << name;
  }
  for (const std::string& name : v4) {
    ASSERT_TRUE(origin.count(name)) << "TrainingArguments (4.46)." << name << " has no row";
    if (!v5.count(name)) {
      EXPECT_EQ(origin[name], "TrainingArguments 4.x") << name;
    }
  }
  for (const std::string& name : run_glue) {
    ASSERT_TRUE(origin.count(name)) << "run_glue.py's " << name << " has no row";
    EXPECT_EQ(origin[name], "run_glue") << name;
  }
}

// docs/cli.md holds the table as train_flags_markdown() prints it.
TEST(TrainFlags, DocsHoldTheTable) {
  std::ifstream in(testing::source_dir() + "/docs/cli.md");
  ASSERT_TRUE(in.good());
  std::stringstream docs;
  docs << in.rdbuf();
  EXPECT_NE(docs.str().find(train_flags_markdown()), std::string::npos)
      << "docs/cli.md's flag table is stale: run tools/update_cli_flag_table.py";
}

TEST(TrainFlags, HelpListsEveryClass) {
  TrainConfig c;
  EXPECT_FALSE(parse_train_arguments({"--help"}, c));
  const std::string help = train_flags_help();
  for (const char* part : {"implemented:", "mapped:", "accepted, changes nothing:", "refused:",
                           "--no_pad_to_max_length", "--xpu_backend"})
    EXPECT_NE(help.find(part), std::string::npos) << part;
}

}  // namespace
}  // namespace cpuft
