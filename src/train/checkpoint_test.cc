// Checkpoints of each optimizer: AdamW's optimizer.safetensors is byte for byte the file cpuft
// wrote before optimizers were interchangeable, SGD's momentum round-trips, and a checkpoint of
// one optimizer is refused by another in one line. The output folder's lock and the removal of
// what an interrupted run left (output_lock.h).
#include "train/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "data/tokenizer.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "test_paths.h"
#include "train/output_lock.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;

const char* kTinyConfig = R"({
  "vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
  "intermediate_size": 24, "max_position_embeddings": 16, "num_labels": 2
})";

std::vector<char> bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct CheckpointFixture : ::testing::Test {
  CheckpointFixture()
      : config(parse_model_config(kTinyConfig, "tiny.json")),
        layout(config),
        n(static_cast<size_t>(layout.total_floats())),
        params(n),
        grads(n),
        dir(fs::temp_directory_path() / ("cpuft_checkpoint_test." + std::to_string(getpid()))),
        tokenizer(load_tokenizer(testing::fixture_path("tokenizers/bert_json_uncased"))) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    for (float& p : params) p = normal(rng);
    for (float& g : grads) g = normal(rng);
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~CheckpointFixture() override { fs::remove_all(dir); }

  // Two steps, then checkpoint-2 in dir.
  fs::path train_and_save(Optimizer& optimizer) {
    optimizer.step(params.data(), grads.data(), 1e-2, {});
    optimizer.step(params.data(), grads.data(), 1e-2, {});
    const nlohmann::json history = nlohmann::json::array();
    const BestModel best{TrainConfig{}};
    save_checkpoint(dir, CheckpointContent{2, 1.0, 4, history, best, 1}, layout, params.data(),
                    optimizer, nlohmann::json::object(), *tokenizer, 0, TrainConfig{});
    return dir / "checkpoint-2";
  }

  // The parameters' elements (the buffer's alignment padding is not saved).
  bool same_params(const std::vector<float>& a, const std::vector<float>& b) const {
    for (const ParamSpec& spec : layout.specs())
      for (int64_t i = spec.offset; i < spec.offset + spec.numel; ++i)
        if (a[static_cast<size_t>(i)] != b[static_cast<size_t>(i)]) return false;
    return true;
  }

  std::string load_error(const fs::path& checkpoint, Optimizer& optimizer) {
    std::vector<float> p(n);
    try {
      load_checkpoint(checkpoint.string(), layout, p.data(), optimizer);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  ModelConfig config;
  ParamLayout layout;
  size_t n;
  std::vector<float> params, grads;
  fs::path dir;
  std::unique_ptr<Tokenizer> tokenizer;
};

TEST_F(CheckpointFixture, AdamWFileIsTheOneCpuftAlwaysWrote) {
  const auto opt = make_optimizer("adamw_torch", "", layout, OptimizerOptions{});
  AdamW& adamw = dynamic_cast<AdamW&>(*opt);
  const fs::path checkpoint = train_and_save(adamw);
  // The writer before the Optimizer interface, verbatim.
  std::vector<TensorToWrite> moments;
  for (const ParamSpec& spec : layout.specs()) {
    moments.push_back({"exp_avg." + spec.name, spec.shape, adamw.exp_avg().data() + spec.offset});
    moments.push_back(
        {"exp_avg_sq." + spec.name, spec.shape, adamw.exp_avg_sq().data() + spec.offset});
  }
  write_safetensors((dir / "old.safetensors").string(), moments,
                    {{"adamw_steps", std::to_string(adamw.steps_taken())}});
  const std::vector<char> now = bytes_of(checkpoint / "optimizer.safetensors");
  ASSERT_FALSE(now.empty());
  EXPECT_EQ(now, bytes_of(dir / "old.safetensors"));

  // And it resumes: moments and step count back, the next step identical.
  const auto resumed = make_optimizer("adamw_torch_fused", "", layout, OptimizerOptions{});
  std::vector<float> p(n);
  load_checkpoint(checkpoint.string(), layout, p.data(), *resumed);
  EXPECT_TRUE(same_params(p, params));
  EXPECT_EQ(resumed->steps_taken(), 2);
  opt->step(params.data(), grads.data(), 1e-2, {});
  resumed->step(p.data(), grads.data(), 1e-2, {});
  EXPECT_TRUE(same_params(p, params));
}

TEST_F(CheckpointFixture, SgdMomentumRoundTrips) {
  const auto opt =
      make_optimizer("sgd", "momentum=0.9", layout, OptimizerOptions{0.9, 0.999, 1e-8, 0.01});
  const fs::path checkpoint = train_and_save(*opt);
  const SafetensorsFile file =
      SafetensorsFile::open((checkpoint / "optimizer.safetensors").string());
  EXPECT_EQ(file.metadata().at("sgd_steps"), "2");
  EXPECT_EQ(file.tensors().size(), layout.specs().size());
  EXPECT_NE(file.find("momentum_buffer." + layout.specs().front().name), nullptr);

  const auto resumed =
      make_optimizer("sgd", "momentum=0.9", layout, OptimizerOptions{0.9, 0.999, 1e-8, 0.01});
  std::vector<float> p(n);
  load_checkpoint(checkpoint.string(), layout, p.data(), *resumed);
  EXPECT_EQ(resumed->steps_taken(), 2);
  std::vector<float> m0(opt->state_buffers()[0].values->span().begin(),
                        opt->state_buffers()[0].values->span().end());
  std::vector<float> m1(resumed->state_buffers()[0].values->span().begin(),
                        resumed->state_buffers()[0].values->span().end());
  EXPECT_EQ(m0, m1);
  opt->step(params.data(), grads.data(), 1e-2, {});
  resumed->step(p.data(), grads.data(), 1e-2, {});
  EXPECT_TRUE(same_params(p, params));  // the momentum went on, not restarted from the gradient
}

TEST_F(CheckpointFixture, AnotherOptimizersCheckpointIsRefused) {
  const auto adamw = make_optimizer("adamw_torch", "", layout, OptimizerOptions{});
  const fs::path adamw_checkpoint = train_and_save(*adamw);
  const auto sgd = make_optimizer("sgd", "", layout, OptimizerOptions{});
  const std::string e = load_error(adamw_checkpoint, *sgd);
  EXPECT_NE(e.find("holds the state of optimizer 'adamw'; this run's is 'sgd'"), std::string::npos)
      << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);

  fs::rename(adamw_checkpoint, dir / "adamw");
  const auto momentum = make_optimizer("sgd", "momentum=0.9", layout, OptimizerOptions{});
  const fs::path sgd_checkpoint = train_and_save(*momentum);
  EXPECT_NE(load_error(sgd_checkpoint, *adamw).find("holds the state of optimizer 'sgd'"),
            std::string::npos);
  const std::string plain = load_error(sgd_checkpoint, *sgd);
  EXPECT_NE(plain.find("another momentum setting"), std::string::npos) << plain;
}

// --save_total_limit never deletes the best checkpoint; with a limit of 1 and a best that is not
// the newest, two are kept (HF's _sorted_checkpoints), and trainer_state.json names the best.
TEST_F(CheckpointFixture, TheBestCheckpointOutlivesTheLimit) {
  const std::unique_ptr<Optimizer> optimizer =
      make_optimizer("adamw_torch", "", layout, OptimizerOptions{});
  TrainConfig flags;
  flags.metric_for_best_model = "accuracy";
  BestModel best(flags);
  const nlohmann::json history = nlohmann::json::array();
  auto save = [&](int64_t step, double accuracy) {
    best.observe({{"eval_accuracy", accuracy}}, step);
    best.saved(step, (dir / str("checkpoint-", step)).string());
    save_checkpoint(dir, CheckpointContent{step, 1.0, 8, history, best, 1}, layout, params.data(),
                    *optimizer, nlohmann::json::object(), *tokenizer, 1, flags);
  };
  save(2, 0.5);
  save(4, 0.9);  // the best
  save(6, 0.7);
  save(8, 0.9);  // equal is not better
  std::vector<std::string> kept;
  for (const auto& entry : fs::directory_iterator(dir)) kept.push_back(entry.path().filename());
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"checkpoint-4", "checkpoint-8"}));
  std::ifstream in(dir / "checkpoint-8" / "trainer_state.json");
  const nlohmann::json state = nlohmann::json::parse(in);
  EXPECT_EQ(state["best_model_checkpoint"], (dir / "checkpoint-4").string());
  EXPECT_EQ(state["best_metric"], 0.9);
  EXPECT_EQ(state["best_global_step"], 4);
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::string lock_error(const fs::path& dir) {
  try {
    OutputLock second(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

TEST_F(CheckpointFixture, ASecondLockIsRefusedNamingTheHolder) {
  std::string error;
  {
    OutputLock first(dir);
    ASSERT_TRUE(first.held());
    // Another open file in this process is another flock owner: refused, naming this pid.
    error = lock_error(dir);
    const std::string prefix = str("--output_dir ", dir.string(), " is in use by pid ", getpid(),
                                   " on host ", host_name(), " (since ");
    EXPECT_EQ(error.substr(0, prefix.size()), prefix) << error;
    EXPECT_TRUE(error.ends_with(" UTC); wait for it or choose another folder")) << error;
    // And in a child process.
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(lock_error(dir).starts_with(prefix) ? 0 : 1);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child took the lock";
  }
  // Released: the lock file is gone and the folder can be locked again.
  EXPECT_FALSE(fs::exists(dir / kOutputLockName));
  EXPECT_TRUE(OutputLock(dir).held());
}

TEST_F(CheckpointFixture, AKilledHoldersLockIsFree) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OutputLock lock(dir);
    _exit(0);  // as a SIGKILL: no destructor runs, the file stays, the kernel drops the lock
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(fs::exists(dir / kOutputLockName));
  OutputLock next(dir);
  EXPECT_TRUE(next.held());
  std::ifstream in(dir / kOutputLockName);
  std::string holder;
  std::getline(in, holder);
  EXPECT_TRUE(holder.starts_with(str(getpid(), "@", host_name(), " "))) << holder;
}

TEST_F(CheckpointFixture, StaleTemporariesAreRemovedAndNothingElse) {
  for (const char* folder : {".checkpoint-5.tmp", ".checkpoint-3.deleted.tmp", "checkpoint-4"}) {
    fs::create_directories(dir / folder);
    std::ofstream(dir / folder / "model.safetensors") << "x";
  }
  for (const char* file : {"model.safetensors.tmp-999", "vocab.txt.tmp-12", "notes.tmp-draft",
                           "vocab.txt", kOutputLockName})
    std::ofstream(dir / file) << "x";
  EXPECT_EQ(remove_stale_temporaries(dir),
            (std::vector<std::string>{".checkpoint-3.deleted.tmp", ".checkpoint-5.tmp",
                                      "model.safetensors.tmp-999", "vocab.txt.tmp-12"}));
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{kOutputLockName, "checkpoint-4",
                                                     "notes.tmp-draft", "vocab.txt"}));
  EXPECT_TRUE(remove_stale_temporaries(dir).empty());
}

TEST_F(CheckpointFixture, ClaimLocksThenCleans) {
  fs::create_directories(dir / ".checkpoint-7.tmp");
  SingleProcessCommunicator comm;
  {
    const ClaimedOutputFolder claimed = claim_output_folder(comm, dir, /*saver=*/true);
    EXPECT_TRUE(claimed.lock.held());
    EXPECT_EQ(claimed.removed, ".checkpoint-7.tmp");
    // A second claim is refused and removes nothing of the first's.
    fs::create_directories(dir / ".checkpoint-8.tmp");
    try {
      claim_output_folder(comm, dir, true);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(" is in use by pid "), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::exists(dir / ".checkpoint-8.tmp"));
    // A rank that does not write takes nothing.
    EXPECT_FALSE(claim_output_folder(comm, dir, false).lock.held());
  }
  EXPECT_EQ(names_in(dir), std::vector<std::string>{".checkpoint-8.tmp"});
}

// A checkpoint saved over an existing one of the same step (after a resume) and the ones the limit
// deletes leave no temporary folder.
TEST_F(CheckpointFixture, SavingAgainAndRotatingLeaveNoTemporaries) {
  const std::unique_ptr<Optimizer> optimizer =
      make_optimizer("adamw_torch", "", layout, OptimizerOptions{});
  const nlohmann::json history = nlohmann::json::array();
  const BestModel best{TrainConfig{}};
  for (int64_t step : {1, 2, 3, 2, 3, 4})
    save_checkpoint(dir, CheckpointContent{step, 1.0, 8, history, best, 1}, layout, params.data(),
                    *optimizer, nlohmann::json::object(), *tokenizer, 2, TrainConfig{});
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"checkpoint-3", "checkpoint-4"}));
  EXPECT_EQ(names_in(dir / "checkpoint-4"),
            (std::vector<std::string>{"config.json", "model.safetensors", "optimizer.safetensors",
                                      "special_tokens_map.json", "tokenizer_config.json",
                                      "trainer_state.json", "vocab.txt"}));
}

// A write that fails half-way (the file-size limit stands for a full disk) is one line naming the
// file and the reason, and leaves nothing of the checkpoint behind.
TEST_F(CheckpointFixture, AFailedSaveLeavesNothing) {
  const std::unique_ptr<Optimizer> optimizer =
      make_optimizer("adamw_torch", "", layout, OptimizerOptions{});
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 1024;  // below model.safetensors
  void (*previous)(int) = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    train_and_save(*optimizer);
  } catch (const Error& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(error, (dir / ".checkpoint-2.tmp" / "model.safetensors").string() +
                       ": cannot write: " + std::strerror(EFBIG));
  EXPECT_TRUE(names_in(dir).empty());
}

}  // namespace
}  // namespace cpuft
