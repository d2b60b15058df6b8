// libFuzzer target for the data file readers: --train_file/--validation_file/--test_file (.csv,
// .tsv, .json, .jsonl) and the GLUE task splits. Any file must either be read or throw
// cpuft::Error; what is read must be consistent (label ids inside the label set, a text b exactly
// when the reader says so). Any other exception, crash, hang, leak or sanitizer report is a bug.
//
// The readers take paths, so each input is written to a file in a scratch folder first. The first
// byte chooses what the rest is:
//   bit 7 clear: a data file, its type from bits 0-1 (.csv .tsv .jsonl .json); read as a train file
//                (data_file_labels, then read_data_file with those labels) and, with the label set
//                bits 2-3 choose (strings, integers, regression), as a validation/test file;
//   bit 7 set:   one GLUE split (task, split and variant from bits 0-6) read by read_glue_split.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/check.h"
#include "data/data_reader.h"
#include "data/glue_tasks.h"

namespace {

namespace fs = std::filesystem;

// A scratch folder of this process, in memory where /dev/shm exists (a file is written per
// input), removed at exit (never destroyed, so the exit handler may use it).
const fs::path& scratch() {
  static const fs::path* const dir = [] {
    const fs::path base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
    const auto* d = new fs::path(base / ("cpuft_fuzz_data_reader_" + std::to_string(::getpid())));
    fs::create_directories(*d);
    std::atexit([] { fs::remove_all(scratch()); });
    return d;
  }();
  return *dir;
}

void write_file(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

void check(const cpuft::Dataset& data, const cpuft::DataFileLabels* labels, int num_labels) {
  const int32_t n = labels != nullptr ? static_cast<int32_t>(labels->names.size()) : num_labels;
  const bool regression = labels != nullptr ? labels->regression : num_labels == 0;
  for (const cpuft::Example& ex : data.examples) {
    if (!ex.has_b && !ex.text_b.empty()) std::abort();
    if (ex.has_label && !regression && (ex.label < 0 || ex.label >= n)) std::abort();
    if (ex.has_label && regression && !std::isfinite(ex.score)) std::abort();
    if (!ex.has_label && ex.label != -1) std::abort();
  }
}

void read_data_file(uint8_t mode, std::string_view bytes) {
  static const char* const kExtensions[] = {".csv", ".tsv", ".jsonl", ".json"};
  const std::string path = (scratch() / (std::string("data") + kExtensions[mode & 3])).string();
  write_file(path, bytes);
  try {
    const cpuft::DataFileLabels labels = cpuft::data_file_labels(path);
    if (!labels.regression && labels.names.empty()) std::abort();
    check(cpuft::read_data_file(path, labels), &labels, 0);
    (void)cpuft::data_file_task(labels);
  } catch (const cpuft::Error&) {
    // Rejected as a train file: expected.
  }
  // The same file as validation/test data, with labels a train file would have given.
  cpuft::DataFileLabels labels;
  switch ((mode >> 2) & 3) {
    case 0:
      labels.names = {"contradiction", "entailment", "neutral"};
      break;
    case 1:
      labels.integer = true;
      labels.names = {"0", "1"};
      break;
    default:
      labels.regression = true;
      break;
  }
  check(cpuft::read_data_file(path, labels), &labels, 0);
}

void read_glue(uint8_t mode, std::string_view bytes) {
  const std::vector<cpuft::GlueTask>& tasks = cpuft::glue_tasks();
  const cpuft::GlueTask& task = tasks[(mode & 0x7f) % tasks.size()];
  const auto split = static_cast<cpuft::Split>((mode & 0x7f) / tasks.size() % 3);
  const cpuft::SplitFormat& format = task.split(split);
  if (format.files.empty()) return;
  const size_t slot = (mode & 0x7f) / tasks.size() / 3 % format.files.size();
  const std::string dir = (scratch() / "glue").string();
  write_file(fs::path(dir) / task.folder / format.files[slot], bytes);
  const cpuft::Dataset data = cpuft::read_glue_split(task, dir, split, format.variants[slot]);
  check(data, nullptr, task.is_regression() ? 0 : task.num_labels());
  if (data.examples.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] & 0x80) {
      read_glue(data[0], bytes);
    } else {
      read_data_file(data[0], bytes);
    }
  } catch (const cpuft::Error&) {
    // Rejected input: expected.
  }
  return 0;
}
