// Collectives of a communicator (MPI or oneCCL), run under mpirun or a torchrun-style launcher with
// any number of ranks (ctest -L dist):
// all-reduce on odd sizes (several in flight at once, completed by test() and by wait()),
// broadcast from the last rank, all_gather_string of strings of different lengths, barrier, and
// the link probe a run starts with (fp32 and bf16).
// Exits non-zero on the first mismatch, printing the rank and the case.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/check.h"
#include "parallel/communicator.h"
#include "parallel/launcher.h"
#include "parallel/link_probe.h"

namespace {

int g_rank = 0;

#define EXPECT_OR_DIE(condition, ...)                                      \
  do {                                                                     \
    if (!(condition)) {                                                    \
      std::fprintf(stderr, "rank %d: FAILED %s: %s\n", g_rank, #condition, \
                   ::cpuft::str(__VA_ARGS__).c_str());                     \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

// Small integers: every sum is exact in float.
float value(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * (i % 13) - rank);
}

void check_all_reduce(cpuft::Communicator& comm) {
  const int world = comm.world_size();
  const std::vector<int64_t> sizes = {1, 3, 17, 1023, 65537, 1000003};
  std::vector<std::vector<float>> buffers;
  for (int64_t n : sizes) {
    std::vector<float> data(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = value(comm.rank(), i);
    buffers.push_back(std::move(data));
  }
  // All in flight at once; even ones completed by polling test(), odd ones by wait().
  std::vector<cpuft::Communicator::Handle> handles;
  for (size_t k = 0; k < sizes.size(); ++k)
    handles.push_back(comm.all_reduce_sum_async(buffers[k].data(), sizes[k],
                                                cpuft::OpContext{static_cast<int64_t>(k), 0}));
  for (size_t k = 0; k < sizes.size(); k += 2)
    while (!comm.test(handles[k])) {
    }
  for (size_t k = 1; k < sizes.size(); k += 2) comm.wait(handles[k]);
  for (size_t k = 0; k < sizes.size(); ++k) {
    for (int64_t i = 0; i < sizes[k]; ++i) {
      float expected = 0;
      for (int r = 0; r < world; ++r) expected += value(r, i);
      EXPECT_OR_DIE(buffers[k][static_cast<size_t>(i)] == expected, "all-reduce of ", sizes[k],
                    " floats: element ", i, " is ", buffers[k][static_cast<size_t>(i)],
                    ", expected ", expected);
    }
  }
  // Zero floats is legal and completes.
  comm.wait(comm.all_reduce_sum_async(nullptr, 0));
}

// bf16: the same small integers (exact in bf16, and so are their sums), and with 2 ranks one sum
// that must round: 1 + 3 x 2^-8 lies half-way between 1 + 2^-7 and 1 + 2^-6 and goes to the even
// one, 1 + 2^-6 (truncation would give 1 + 2^-7).
void check_all_reduce_bf16(cpuft::Communicator& comm) {
  const int world = comm.world_size();
  for (int64_t n : {int64_t{1}, int64_t{1023}, int64_t{300007}}) {
    std::vector<cpuft::bf16> data(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      data[static_cast<size_t>(i)] = cpuft::round_to_bf16(value(comm.rank(), i));
    if (world == 2) data[0] = cpuft::round_to_bf16(comm.rank() == 0 ? 1.0f : 3.0f / 256);
    comm.wait(comm.all_reduce_sum_bf16_async(data.data(), n));
    for (int64_t i = 0; i < n; ++i) {
      float expected = 0;
      for (int r = 0; r < world; ++r) expected += value(r, i);
      if (world == 2 && i == 0) expected = 1.0f + 1.0f / 64;
      const float got = cpuft::to_float(data[static_cast<size_t>(i)]);
      EXPECT_OR_DIE(got == expected, "bf16 all-reduce of ", n, " values: element ", i, " is ", got,
                    ", expected ", expected);
    }
  }
}

// The link probe a run starts with, collectively on every backend and dtype: both points timed,
// the sizes asked for. (Which point is slower depends on the backend and the load: oneCCL's small
// all-reduce can take longer than its 4 MB one.)
void check_link_probe(cpuft::Communicator& comm) {
  for (bool bf16 : {false, true}) {
    const cpuft::LinkProbe probe = cpuft::probe_link(comm, 1 << 20, bf16);
    EXPECT_OR_DIE(probe.world_size == comm.world_size(), "probe of ", probe.world_size, " ranks");
    EXPECT_OR_DIE(probe.large_bytes == (int64_t{1} << 20) * (bf16 ? 2 : 4), "large probe of ",
                  probe.large_bytes, " bytes");
    EXPECT_OR_DIE(probe.small_seconds > 0 && probe.large_seconds > 0, bf16 ? "bf16" : "fp32",
                  " probe: ", probe.small_seconds, " s, ", probe.large_seconds, " s");
    const double at_large = probe.seconds(static_cast<double>(probe.large_bytes));
    EXPECT_OR_DIE(std::abs(at_large - probe.large_seconds) <= 1e-12 * probe.large_seconds ||
                      probe.small_seconds > probe.large_seconds,
                  "the large point is not on the cost curve");
  }
}

void check_broadcast(cpuft::Communicator& comm) {
  const int root = comm.world_size() - 1;
  std::vector<unsigned char> bytes(100003);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(comm.rank() == root ? (i * 7 + 3) & 0xff : 0);
  comm.broadcast(bytes.data(), static_cast<int64_t>(bytes.size()), root);
  for (size_t i = 0; i < bytes.size(); ++i)
    EXPECT_OR_DIE(bytes[i] == static_cast<unsigned char>((i * 7 + 3) & 0xff), "broadcast byte ", i);
}

void check_all_gather_string(cpuft::Communicator& comm) {
  // Rank r sends r copies of 'a' + r, so rank 0 sends an empty string.
  const std::string mine(static_cast<size_t>(comm.rank()), static_cast<char>('a' + comm.rank()));
  const std::vector<std::string> all = comm.all_gather_string(mine);
  EXPECT_OR_DIE(static_cast<int>(all.size()) == comm.world_size(), "got ", all.size(), " strings");
  for (int r = 0; r < comm.world_size(); ++r)
    EXPECT_OR_DIE(all[static_cast<size_t>(r)] ==
                      std::string(static_cast<size_t>(r), static_cast<char>('a' + r)),
                  "string of rank ", r, " is '", all[static_cast<size_t>(r)], "'");
}

}  // namespace

// Usage: dist_collectives_test [BACKEND [EXPECTED_NAME]]   (default: auto, expecting mpi)
int main(int argc, char** argv) {
  const std::string backend = argc > 1 ? argv[1] : "auto";
  const std::string expected = argc > 2 ? argv[2] : backend == "auto" ? "mpi" : backend;
  try {
    const cpuft::LaunchInfo launch = cpuft::detect_launch_from_process_env();
    auto comm = cpuft::make_communicator(backend, launch);
    g_rank = comm->rank();
    EXPECT_OR_DIE(comm->name() == expected, "backend ", comm->name(), ", expected ", expected);
    EXPECT_OR_DIE(comm->world_size() >= 2, "run under mpirun with at least 2 ranks, got ",
                  comm->world_size());
    EXPECT_OR_DIE(comm->world_size() == launch.world_size, "launcher says ", launch.world_size);
    check_all_reduce(*comm);
    check_all_reduce_bf16(*comm);
    check_broadcast(*comm);
    check_link_probe(*comm);
    check_all_gather_string(*comm);
    comm->barrier();
    std::printf("rank %d of %d (%s): collectives OK\n", comm->rank(), comm->world_size(),
                launch.describe().c_str());
  } catch (const cpuft::Error& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", g_rank, e.what());
    return 1;
  }
  return 0;
}
