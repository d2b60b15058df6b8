// TensorBoardWriter: the file name, the TFRecord framing and CRCs, the Event protos (decoded with
// the same .proto, and one record checked byte for byte against hand-encoded protobuf), errors;
// and the transformers TensorBoardCallback mapping of log entries and the log folder.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <tensorboard_event.pb.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "io/tensorboard_logs.h"
#include "io/tensorboard_writer.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
namespace tb = ::cpuft::tensorboard;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "cpuft_tensorboard_XXXXXX").string();
    CPUFT_CHECK(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    path_ = pattern;
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t le(const std::string& bytes, std::size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Splits a TFRecord file, checking both CRCs of every record and that nothing trails.
std::vector<std::string> read_records(const std::string& path) {
  const std::string file = read_file(path);
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size()) << "truncated header at " << at;
    if (at + 12 > file.size()) break;
    const uint64_t length = le(file, at, 8);
    EXPECT_EQ(le(file, at + 8, 4), masked_crc32c(file.data() + at, 8)) << "length CRC at " << at;
    EXPECT_LE(at + 12 + length + 4, file.size()) << "truncated record at " << at;
    if (at + 12 + length + 4 > file.size()) break;
    std::string data = file.substr(at + 12, length);
    EXPECT_EQ(le(file, at + 12 + length, 4), masked_crc32c(data.data(), data.size()))
        << "data CRC at " << at;
    records.push_back(std::move(data));
    at += 12 + length + 4;
  }
  return records;
}

std::vector<tb::Event> read_events(const std::string& path) {
  std::vector<tb::Event> events;
  for (const std::string& record : read_records(path)) {
    tb::Event event;
    EXPECT_TRUE(event.ParseFromString(record));
    events.push_back(event);
  }
  return events;
}

TEST(TensorBoardCrc, Crc32cKnownAnswers) {
  // The CRC-32C check value (RFC 3720 B.4 and every CRC catalogue): "123456789" -> 0xE3069283.
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of 0
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(masked_crc32c("123456789", 9), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TensorBoardWriter, FileNameAndFirstRecord) {
  TempDir dir;
  const std::string log_dir = (dir.path() / "runs" / "a").string();  // parents are created
  const double before = unix_time_now();
  std::string path;
  {
    TensorBoardWriter writer(log_dir);
    path = writer.path();
  }
  const double after = unix_time_now();
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(log_dir));
  // events.out.tfevents.<10 digits>.<host, which may hold dots>.<pid>.<n>
  const std::string name = fs::path(path).filename().string();
  const std::string prefix = "events.out.tfevents.";
  ASSERT_TRUE(name.starts_with(prefix)) << name;
  const std::string rest = name.substr(prefix.size());
  const std::size_t n_dot = rest.rfind('.');
  ASSERT_NE(n_dot, std::string::npos) << name;
  const std::size_t pid_dot = rest.rfind('.', n_dot - 1);
  ASSERT_NE(pid_dot, std::string::npos) << name;
  ASSERT_GT(rest.size(), 11u) << name;
  const std::string seconds = rest.substr(0, 10);
  EXPECT_EQ(rest[10], '.') << name;
  EXPECT_EQ(seconds.find_first_not_of("0123456789"), std::string::npos) << name;
  EXPECT_GE(std::stoll(seconds), static_cast<long long>(before));
  EXPECT_LE(std::stoll(seconds), static_cast<long long>(after));
  EXPECT_EQ(rest.substr(11, pid_dot - 11), host_name());
  EXPECT_EQ(rest.substr(pid_dot + 1, n_dot - pid_dot - 1), std::to_string(getpid()));
  const std::string n = rest.substr(n_dot + 1);
  EXPECT_FALSE(n.empty());
  EXPECT_EQ(n.find_first_not_of("0123456789"), std::string::npos) << name;

  const auto events = read_events(path);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].source_metadata().writer(), "cpuft");
  EXPECT_EQ(events[0].step(), 0);
  EXPECT_GE(events[0].wall_time(), before);
  EXPECT_LE(events[0].wall_time(), after);
}

TEST(TensorBoardWriter, TwoWritersInOneFolderGetTwoFiles) {
  TempDir dir;
  TensorBoardWriter a(dir.path().string());
  TensorBoardWriter b(dir.path().string());
  EXPECT_NE(a.path(), b.path());
}

TEST(TensorBoardWriter, ScalarsAndTextsReadBack) {
  TempDir dir;
  TensorBoardWriter writer(dir.path().string());
  writer.add_text("args", R"({"learning_rate": 5e-05})");
  writer.add_scalar("train/loss", 0.6931f, 10, 1700000000.25);
  writer.add_scalar("eval/accuracy", 0.75f, 20, 1700000001.5);
  writer.add_text("train/note", "héllo\nworld", 20, 1700000002.0);
  writer.flush();

  const auto events = read_events(writer.path());
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");

  const tb::Event& args = events[1];
  EXPECT_EQ(args.step(), 0);
  ASSERT_TRUE(args.has_summary());
  ASSERT_EQ(args.summary().value_size(), 1);
  const auto& text = args.summary().value(0);
  EXPECT_EQ(text.tag(), "args/text_summary");
  EXPECT_EQ(text.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(text.metadata().plugin_data().content(), "");
  ASSERT_TRUE(text.has_tensor());
  EXPECT_EQ(text.tensor().dtype(), tb::DT_STRING);
  ASSERT_EQ(text.tensor().tensor_shape().dim_size(), 1);
  EXPECT_EQ(text.tensor().tensor_shape().dim(0).size(), 1);
  ASSERT_EQ(text.tensor().string_val_size(), 1);
  EXPECT_EQ(text.tensor().string_val(0), R"({"learning_rate": 5e-05})");

  EXPECT_EQ(events[2].wall_time(), 1700000000.25);
  EXPECT_EQ(events[2].step(), 10);
  ASSERT_EQ(events[2].summary().value_size(), 1);
  EXPECT_EQ(events[2].summary().value(0).tag(), "train/loss");
  EXPECT_EQ(events[2].summary().value(0).value_case(), tb::Summary::Value::kSimpleValue);
  EXPECT_EQ(events[2].summary().value(0).simple_value(), 0.6931f);
  EXPECT_FALSE(events[2].summary().value(0).has_metadata());

  EXPECT_EQ(events[3].summary().value(0).tag(), "eval/accuracy");
  EXPECT_EQ(events[3].step(), 20);
  EXPECT_EQ(events[3].wall_time(), 1700000001.5);

  EXPECT_EQ(events[4].summary().value(0).tag(), "train/note/text_summary");
  EXPECT_EQ(events[4].summary().value(0).tensor().string_val(0), "héllo\nworld");
  EXPECT_EQ(events[4].step(), 20);
}

// The scalar record byte for byte, encoded by hand from the field numbers of tensorboard's
// event.proto and summary.proto: the generated code cannot agree with itself on a wrong number.
TEST(TensorBoardWriter, ScalarRecordBytes) {
  TempDir dir;
  TensorBoardWriter writer(dir.path().string());
  writer.add_scalar("a", 2.0f, 3, 1.5);
  const auto records = read_records(writer.path());
  ASSERT_EQ(records.size(), 2u);
  const unsigned char expected[] = {
      0x09, 0,    0,   0, 0,    0, 0, 0xf8, 0x3f,  // wall_time = 1 (64-bit): 1.5
      0x10, 0x03,                                  // step = 2 (varint): 3
      0x2a, 0x0a,                                  // summary = 5 (length-delimited): 10 bytes
      0x0a, 0x08,                                  //   value = 1: 8 bytes
      0x0a, 0x01, 'a',                             //     tag = 1: "a"
      0x15, 0,    0,   0, 0x40,                    //     simple_value = 2 (32-bit): 2.0f
  };
  EXPECT_EQ(records[1], std::string(reinterpret_cast<const char*>(expected), sizeof(expected)));
}

TEST(TensorBoardWriter, RecordsAreInTheFileBeforeFlush) {
  TempDir dir;
  TensorBoardWriter writer(dir.path().string());
  writer.add_scalar("train/loss", 1.0f, 1);
  // No flush: another reader (or a crash now) sees both complete records.
  EXPECT_EQ(read_records(writer.path()).size(), 2u);
}

TEST(TensorBoardWriter, CannotCreateFolderNamesIt) {
  TempDir dir;
  const fs::path file = dir.path() / "file";
  std::ofstream(file) << "x";
  const std::string log_dir = (file / "runs").string();
  try {
    TensorBoardWriter writer(log_dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(log_dir), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  // A log dir that is a file.
  EXPECT_THROW(TensorBoardWriter(file.string()), Error);
}

TEST(TensorBoardWriter, DiskFullNamesTheFile) {
  TempDir dir;
  TensorBoardWriter writer(dir.path().string());
  // A file size limit makes write(2) fail with EFBIG as a full disk fails with ENOSPC.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &old), 0);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string what;
  try {
    for (int i = 0; i < 1000; ++i) writer.add_text("t", std::string(100, 'x'), i);
  } catch (const Error& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  sigaction(SIGXFSZ, &old, nullptr);
  EXPECT_NE(what.find(writer.path()), std::string::npos) << what;
  EXPECT_NE(what.find("cannot write"), std::string::npos) << what;
}

TEST(TensorBoardWriter, AddAfterCloseThrows) {
  TempDir dir;
  TensorBoardWriter writer(dir.path().string());
  writer.close();
  writer.close();
  EXPECT_THROW(writer.add_scalar("x", 1.0f, 1), Error);
}

TEST(TensorBoardLogs, RewriteLogs) {
  EXPECT_EQ(tensorboard_tag("loss"), "train/loss");
  EXPECT_EQ(tensorboard_tag("learning_rate"), "train/learning_rate");
  EXPECT_EQ(tensorboard_tag("epoch"), "train/epoch");
  EXPECT_EQ(tensorboard_tag("eval_accuracy"), "eval/accuracy");
  EXPECT_EQ(tensorboard_tag("eval_loss"), "eval/loss");
  EXPECT_EQ(tensorboard_tag("test_f1"), "test/f1");
  EXPECT_EQ(tensorboard_tag("train_runtime"), "train/train_runtime");
  EXPECT_EQ(tensorboard_tag("evaluation"), "train/evaluation");  // "eval_" with the underscore only
  EXPECT_EQ(tensorboard_tag("eval_"), "eval/");
}

TEST(TensorBoardLogs, TrainEntry) {
  const auto entry = nlohmann::ordered_json::parse(
      R"({"loss": 0.6931, "grad_norm": 1.25, "learning_rate": 4.5e-05, "epoch": 0.5, "step": 50})");
  const TensorBoardLog log = tensorboard_log(entry);
  EXPECT_EQ(log.step, 50);
  ASSERT_EQ(log.scalars.size(), 4u);  // "step" is the event's step, not a scalar
  EXPECT_EQ(log.scalars[0].tag, "train/loss");
  EXPECT_EQ(log.scalars[0].value, 0.6931f);
  EXPECT_EQ(log.scalars[1].tag, "train/grad_norm");
  EXPECT_EQ(log.scalars[2].tag, "train/learning_rate");
  EXPECT_EQ(log.scalars[2].value, 4.5e-05f);
  EXPECT_EQ(log.scalars[3].tag, "train/epoch");
  EXPECT_TRUE(log.texts.empty());
  EXPECT_TRUE(log.warnings.empty());
}

TEST(TensorBoardLogs, EvalEntryAndOtherValueKinds) {
  const auto entry = nlohmann::json::parse(
      R"({"eval_accuracy": 0.8, "eval_runtime": 1, "test_f1": 0.7, "eval_note": "text",
          "flag": true, "nothing": null, "list": [1, 2], "step": 7})");
  const TensorBoardLog log = tensorboard_log(entry);
  EXPECT_EQ(log.step, 7);
  std::vector<std::string> tags;
  for (const auto& s : log.scalars) tags.push_back(s.tag);
  // nlohmann::json visits keys sorted.
  EXPECT_EQ(tags,
            (std::vector<std::string>{"eval/accuracy", "eval/runtime", "train/flag", "test/f1"}));
  EXPECT_EQ(log.scalars[1].value, 1.0f);  // an int is a scalar
  EXPECT_EQ(log.scalars[2].value, 1.0f);  // a bool is an int in Python
  ASSERT_EQ(log.texts.size(), 1u);
  EXPECT_EQ(log.texts[0].tag, "eval/note");
  EXPECT_EQ(log.texts[0].text, "text");
  ASSERT_EQ(log.warnings.size(), 2u);
  EXPECT_NE(log.warnings[0].find("\"train/list\""), std::string::npos) << log.warnings[0];
  EXPECT_NE(log.warnings[0].find("we dropped this attribute"), std::string::npos);
  EXPECT_NE(log.warnings[1].find("NoneType"), std::string::npos) << log.warnings[1];
}

TEST(TensorBoardLogs, EntryWithoutStepIsRefused) {
  EXPECT_THROW(tensorboard_log(nlohmann::json::parse(R"({"loss": 1.0})")), Error);
  EXPECT_THROW(tensorboard_log(nlohmann::json::parse(R"({"loss": 1.0, "step": 1.5})")), Error);
  EXPECT_THROW(tensorboard_log(nlohmann::json::parse("[1]")), Error);
}

TEST(TensorBoardLogs, WriteLogWritesAtTheEntryStep) {
  TempDir dir;
  TensorBoardWriter writer(dir.path().string());
  write_tensorboard_log(writer,
                        tensorboard_log(nlohmann::ordered_json::parse(
                            R"({"eval_loss": 0.5, "eval_note": "hi", "step": 12})")),
                        123.0);
  const auto events = read_events(writer.path());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].summary().value(0).tag(), "eval/loss");
  EXPECT_EQ(events[1].summary().value(0).simple_value(), 0.5f);
  EXPECT_EQ(events[1].step(), 12);
  EXPECT_EQ(events[1].wall_time(), 123.0);
  EXPECT_EQ(events[2].summary().value(0).tag(), "eval/note/text_summary");
  EXPECT_EQ(events[2].step(), 12);
}

TEST(TensorBoardLogs, LogDir) {
  std::tm t{};
  t.tm_year = 2024 - 1900;
  t.tm_mon = 2;  // March
  t.tm_mday = 5;
  t.tm_hour = 7;
  t.tm_min = 8;
  t.tm_sec = 9;
  EXPECT_EQ(tensorboard_log_dir("out", std::nullopt, t, "node1", "/root"),
            "out/runs/Mar05_07-08-09_node1");
  EXPECT_EQ(tensorboard_log_dir("out/", std::nullopt, t, "node1", "/root"),
            "out/runs/Mar05_07-08-09_node1");
  EXPECT_EQ(tensorboard_log_dir("out", std::string("~/tb"), t, "node1", "/root"), "/root/tb");
  EXPECT_EQ(tensorboard_log_dir("out", std::string("/x/tb"), t, "node1", "/root"), "/x/tb");
  EXPECT_EQ(tensorboard_log_dir("out", std::string("a~/tb"), t, "node1", "/root"), "a~/tb");
  const std::string now = tensorboard_log_dir("out");
  if (std::getenv("TENSORBOARD_LOGGING_DIR") == nullptr) {
    EXPECT_TRUE(now.starts_with("out/runs/")) << now;
    EXPECT_TRUE(now.ends_with("_" + host_name())) << now;
  }
}

}  // namespace
}  // namespace cpuft
