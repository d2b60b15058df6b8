// libFuzzer target for `cpuft train`'s arguments: HfArgumentParser's grammar (hf_arguments.h), the
// JSON and YAML args files, every flag's value parser (train_flags.h) and the checks of
// validate_train_config. Any input must either give a TrainConfig or throw cpuft::Error (a
// UsageError for bad flags); any other exception, crash, hang, leak or sanitizer report is a bug.
//
// The first byte chooses what the rest is; NUL bytes separate command-line arguments:
//   0: the arguments;
//   1: a JSON args file (up to the first NUL), then the arguments after it;
//   2: the same with a YAML args file;
//   3: the arguments, bf16 available (validate_train_config's other branch).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "gemm/matmul_plan.h"
#include "train/train_config.h"
#include "train/train_flags.h"

namespace cpuft {

// validate_train_config's one call into gemm, whose matmul_plan.cc (oneDNN, and a CPU feature
// name clang 14 lacks) is not built here; the same one-line refusal.
void require_bf16_matmul(const char* flag, bool available) {
  CPUFT_REQUIRE(available, flag, " needs a CPU with AVX512_BF16 or AMX-BF16 instructions");
}

}  // namespace cpuft

namespace {

namespace fs = std::filesystem;

// A scratch folder of this process, in memory where /dev/shm exists (a file is written per
// input), removed at exit (never destroyed, so the exit handler may use it).
const fs::path& scratch() {
  static const fs::path* const dir = [] {
    const fs::path base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
    const auto* d = new fs::path(base / ("cpuft_fuzz_train_args_" + std::to_string(::getpid())));
    fs::create_directories(*d);
    std::atexit([] { fs::remove_all(scratch()); });
    return d;
  }();
  return *dir;
}

std::vector<std::string> split_nul(std::string_view in) {
  std::vector<std::string> args;
  while (true) {
    const size_t nul = in.find('\0');
    args.emplace_back(in.substr(0, nul));
    if (nul == std::string_view::npos) return args;
    in.remove_prefix(nul + 1);
  }
}

void run(const uint8_t* data, size_t size) {
  if (size == 0) return;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const uint8_t mode = data[0] % 4;
  std::vector<std::string> args;
  if (mode == 1 || mode == 2) {
    const size_t nul = in.find('\0');
    const fs::path file = scratch() / (mode == 1 ? "args.json" : "args.yaml");
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    const std::string_view text = in.substr(0, nul);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) std::abort();
    args.push_back(file.string());
    if (nul != std::string_view::npos) {
      for (std::string& a : split_nul(in.substr(nul + 1))) args.push_back(std::move(a));
    }
  } else if (!in.empty()) {
    args = split_nul(in);
  }
  cpuft::TrainConfig config;
  if (!cpuft::parse_train_arguments(args, config)) return;  // --help
  (void)cpuft::training_args_json(config).dump();
  cpuft::validate_train_config(config, mode == 3);
  (void)cpuft::training_args_json(config).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(data, size);
  } catch (const cpuft::Error&) {
    // Rejected input (UsageError included): expected.
  }
  return 0;
}
