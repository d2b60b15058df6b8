#include "train/distributed.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "core/stats.h"

namespace cpuft {

std::vector<int> affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

namespace {

std::string describe_cores(const std::vector<int>& cores) {
  std::string text;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    text += str(text.empty() ? "" : ",", cores[i]);
    if (j > i) text += str("-", cores[j]);
    i = j + 1;
  }
  return text;
}

// Pins OpenMP thread i to cores[i % cores.size()].
void pin_threads(const std::vector<int>& cores, int threads) {
  omp_set_num_threads(threads);
#pragma omp parallel num_threads(threads)
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cores[static_cast<size_t>(omp_get_thread_num()) % cores.size()], &set);
    sched_setaffinity(0, sizeof set, &set);
  }
}

}  // namespace

void default_ccl_worker_offload(int threads, size_t cores) {
  // Two 1-core hosts on a 1600 Mbit/s link: 0.85x one rank with the worker, 1.42x without it.
  if (threads >= static_cast<int>(cores)) setenv("CCL_WORKER_OFFLOAD", "0", /*overwrite=*/0);
}

DistContext start_distributed(const std::string& backend, double timeout_seconds) {
  DistContext d;
  d.launch = detect_launch_from_process_env();

  std::vector<int> cores = affinity_cores();
  const long host_cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int local_size = std::max(1, d.launch.local_size);
  if (local_size > 1 && static_cast<long>(cores.size()) == host_cores) {
    // Not bound by the launcher: this rank takes its slice of the host's cores.
    const size_t per_rank = std::max<size_t>(1, cores.size() / static_cast<size_t>(local_size));
    auto slice_of = [&](int local_rank) {
      const size_t begin = (static_cast<size_t>(local_rank) * per_rank) % cores.size();
      std::vector<int> slice;
      for (size_t i = 0; i < per_rank; ++i) slice.push_back(cores[(begin + i) % cores.size()]);
      return slice;
    };
    // oneCCL's worker thread of local rank r goes to the r-th core of CCL_WORKER_AFFINITY; left to
    // itself ("auto") it takes the host's last cores, all inside the last rank's slice. Give each
    // rank's worker the last core of that rank's own slice (ignored by the MPI backend).
    std::string workers;
    for (int r = 0; r < local_size; ++r) workers += str(r == 0 ? "" : ",", slice_of(r).back());
    setenv("CCL_WORKER_AFFINITY", workers.c_str(), /*overwrite=*/0);
    cores = slice_of(d.launch.local_rank);
  }
  d.threads = static_cast<int>(cores.size());
  if (const char* requested = std::getenv("OMP_NUM_THREADS"); requested && *requested) {
    const int n = std::atoi(requested);
    const char* allow = std::getenv("CPUFT_ALLOW_OVERSUBSCRIPTION");
    CPUFT_REQUIRE(n * local_size <= host_cores || (allow && std::strcmp(allow, "1") == 0),
                  "OMP_NUM_THREADS=", n, " with ", local_size, " ranks on this host needs ",
                  n * local_size, " cores but it has ", host_cores,
                  "; lower OMP_NUM_THREADS (or set CPUFT_ALLOW_OVERSUBSCRIPTION=1)");
    if (n > 0) d.threads = n;
  }
  default_ccl_worker_offload(d.threads, cores.size());  // ignored by the MPI backend
  d.comm = make_communicator(backend, d.launch);
  d.comm->set_timeout_seconds(timeout_seconds);
  if (d.world_size() > 1 || local_size > 1)
    pin_threads(cores, d.threads);
  else
    omp_set_num_threads(d.threads);
  d.binding = str("cores ", describe_cores(cores), " (", d.threads, " threads)");
  return d;
}

std::vector<std::string> describe_ranks(DistContext& dist) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string mine = str(dist.launch.describe(), "; ", dist.binding, "; backend ",
                               dist.comm->name(), "; host ", host, " pid ", getpid());
  std::vector<std::string> all = dist.comm->all_gather_string(mine);
  for (size_t r = 0; r < all.size(); ++r) all[r] = str("rank ", r, ": ", all[r]);
  return all;
}

std::string fingerprint_floats(const float* data, size_t count) {
  constexpr int64_t kChunks = 64;
  const auto n = static_cast<int64_t>(count);
  uint64_t chunk_hash[kChunks];
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < kChunks; ++c) {
    const int64_t begin = n * c / kChunks, end = n * (c + 1) / kChunks;
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over 64-bit words (two floats each)
    int64_t i = begin;
    for (; i + 1 < end; i += 2) {
      uint64_t word;
      std::memcpy(&word, data + i, sizeof word);
      h = (h ^ word) * 0x100000001b3ull;
    }
    if (i < end) {
      uint32_t last;
      std::memcpy(&last, data + i, sizeof last);
      h = (h ^ last) * 0x100000001b3ull;
    }
    chunk_hash[c] = h;
  }
  return fingerprint(chunk_hash, sizeof chunk_hash);
}

std::string fingerprint(const void* data, size_t bytes) {
  const uint64_t h = fnv1a64(data, bytes);
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

void check_ranks_agree(Communicator& comm,
                       const std::vector<std::pair<std::string, std::string>>& facts) {
  if (comm.world_size() == 1) return;
  std::string mine;
  for (const auto& [name, value] : facts) mine += name + "=" + value + "\n";
  const std::vector<std::string> all = comm.all_gather_string(mine);
  for (int r = 1; r < comm.world_size(); ++r) {
    if (all[r] == all[0]) continue;
    // Name the first fact that differs.
    size_t a = 0, b = 0;
    while (a < all[0].size() && b < all[r].size()) {
      const size_t ea = all[0].find('\n', a), eb = all[r].find('\n', b);
      const std::string la = all[0].substr(a, ea - a), lb = all[r].substr(b, eb - b);
      if (la != lb)
        throw AgreedError(str("ranks disagree: rank 0 has ", la, " but rank ", r, " has ", lb));
      a = ea + 1;
      b = eb + 1;
    }
    throw AgreedError(str("ranks 0 and ", r, " disagree on the run's set-up"));
  }
}

void agree_on_failure(Communicator& comm, const std::string& failure) {
  if (comm.world_size() == 1) {
    if (!failure.empty()) throw AgreedError(failure);
    return;
  }
  // A failed rank's line is never empty: "failed: <what>" ("" means no failure).
  const std::vector<std::string> all =
      comm.all_gather_string(failure.empty() ? "" : "failed: " + failure);
  int first = -1, failed = 0;
  bool alike = true;
  for (int r = 0; r < comm.world_size(); ++r) {
    if (all[r].empty()) {
      alike = false;
      continue;
    }
    if (first < 0) first = r;
    alike = alike && all[r] == all[first];
    ++failed;
  }
  if (first < 0) return;
  const std::string what = all[first].substr(8);
  if (alike) throw AgreedError(what);
  throw AgreedError(str("rank ", first, ": ", what,
                        failed > 1 ? str(" (and ", failed - 1, " more ranks failed)") : ""));
}

std::vector<float> gather_strided_rows(Communicator& comm, const std::vector<float>& local,
                                       int64_t rows_total, int64_t K) {
  if (comm.world_size() == 1) return local;
  const std::string bytes(reinterpret_cast<const char*>(local.data()),
                          local.size() * sizeof(float));
  const std::vector<std::string> all = comm.all_gather_string(bytes);
  std::vector<float> out(static_cast<size_t>(rows_total * K));
  const int world = comm.world_size();
  for (int r = 0; r < world; ++r) {
    const int64_t count = static_cast<int64_t>(all[r].size() / sizeof(float)) / K;
    for (int64_t j = 0; j < count; ++j) {
      const int64_t row = r + j * world;
      if (row >= rows_total) break;
      std::memcpy(out.data() + row * K, all[r].data() + j * K * sizeof(float), K * sizeof(float));
    }
  }
  return out;
}

}  // namespace cpuft
