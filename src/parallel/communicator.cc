#include "parallel/communicator.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/check.h"

namespace cpuft {

Communicator::Communicator(int rank, int world_size)
    : rank_(rank), world_size_(world_size), timeout_seconds_(default_dist_timeout_seconds()) {}

void Communicator::set_timeout_seconds(double seconds) {
  CPUFT_REQUIRE(seconds > 0, "the communication timeout must be positive, got ", seconds, " s");
  timeout_seconds_ = seconds;
}

double default_dist_timeout_seconds() {
  const char* text = std::getenv("CPUFT_DIST_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return 300.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  CPUFT_REQUIRE(end != text && *end == '\0' && seconds > 0, "CPUFT_DIST_TIMEOUT_S='", text,
                "' is not a positive number of seconds");
  return seconds;
}

SingleProcessCommunicator::SingleProcessCommunicator() : Communicator(0, 1) {}

Communicator::Handle SingleProcessCommunicator::all_reduce_sum_async(float* data, int64_t n,
                                                                     const OpContext&) {
  CPUFT_CHECK(n >= 0 && (data != nullptr || n == 0), "all-reduce of ", n, " floats");
  CPUFT_CHECK(!outstanding_, "the single-process communicator holds one handle at a time");
  outstanding_ = true;
  return Handle{0, ++generation_};
}

Communicator::Handle SingleProcessCommunicator::all_reduce_sum_bf16_async(bf16* data, int64_t n,
                                                                          const OpContext&) {
  CPUFT_CHECK(n >= 0 && (data != nullptr || n == 0), "all-reduce of ", n, " bf16 values");
  CPUFT_CHECK(!outstanding_, "the single-process communicator holds one handle at a time");
  outstanding_ = true;
  return Handle{0, ++generation_};
}

bool SingleProcessCommunicator::test(Handle handle) {
  wait(handle);
  return true;
}

void SingleProcessCommunicator::wait(Handle handle) {
  CPUFT_CHECK(outstanding_ && handle.slot == 0 && handle.generation == generation_,
              "stale or unknown communicator handle");
  outstanding_ = false;
}

void SingleProcessCommunicator::broadcast(void* bytes, int64_t size, int root) {
  CPUFT_CHECK(root == 0 && size >= 0 && (bytes != nullptr || size == 0), "broadcast from ", root);
}

std::vector<std::string> SingleProcessCommunicator::all_gather_string(const std::string& value) {
  return {value};
}

void SingleProcessCommunicator::abort(int exit_code) {
  std::exit(exit_code);
}

bool ccl_available() {
#ifdef CPUFT_HAVE_CCL
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Communicator> make_communicator(const std::string& backend,
                                                const LaunchInfo& launch) {
  std::string chosen = backend;
  if (chosen == "auto") {
    if (!launch.launched())
      chosen = "single";
    else if (launch.launcher == "torchrun" && ccl_available())
      chosen = "ccl";
    else
      chosen = "mpi";
  }
  if (chosen == "single") {
    CPUFT_REQUIRE(launch.world_size == 1, "--dist_backend single, but the launcher (",
                  launch.describe(), ") started ", launch.world_size,
                  " processes: each would train its own model; use --dist_backend mpi");
    return std::make_unique<SingleProcessCommunicator>();
  }
  if (chosen == "mpi") return make_mpi_communicator(launch);
  if (chosen == "ccl") {
#ifdef CPUFT_HAVE_CCL
    return make_ccl_communicator(launch);
#else
    throw Error(
        "--dist_backend ccl: this cpuft was built without oneCCL (run scripts/fetch_oneccl.sh and "
        "reconfigure; see docs/distributed.md, section oneCCL); use --dist_backend mpi");
#endif
  }
  throw Error(str("--dist_backend '", backend, "' is not one of auto, mpi, ccl, single"));
}

}  // namespace cpuft
