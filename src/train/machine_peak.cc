#include "train/machine_peak.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "core/atomic_file.h"
#include "core/check.h"
#include "core/timer.h"
#include "train/distributed.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cpuft {

namespace {

// A fifth of the benchmarks' probe time: 5 repeats of about 20 ms.
constexpr double kProbeScale = 0.2;

std::string cache_path() {
  if (const char* path = std::getenv("CPUFT_PEAK_CACHE"); path != nullptr && *path != '\0')
    return path;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return (fs::path(xdg) / "cpuft" / "peaks.json").string();
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return (fs::path(home) / ".cache" / "cpuft" / "peaks.json").string();
  return "";
}

json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json::object();
  json cache = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return cache.is_object() ? cache : json::object();
}

}  // namespace

int runnable_threads(int threads, int cores) {
  return cores > 0 ? std::min(threads, cores) : threads;
}

double probe_core_share(double cpu_seconds, double wall_seconds, int runnable) {
  if (!(cpu_seconds > 0) || !(wall_seconds > 0) || runnable <= 0) return 1;
  return std::min(1.0, cpu_seconds / (wall_seconds * static_cast<double>(runnable)));
}

double peak_min_core_share() {
  const char* text = std::getenv("CPUFT_PEAK_MIN_SHARE");
  if (text == nullptr || *text == '\0') return 0.8;
  char* end = nullptr;
  const double share = std::strtod(text, &end);
  CPUFT_REQUIRE(end != text && *end == '\0' && share >= 0 && share <= 1,
                "CPUFT_PEAK_MIN_SHARE=", text, " (want a number from 0 to 1)");
  return share;
}

namespace {

// The cache's key: the CPU, the threads that can run at once and the kind of products. Keyed by
// runnable threads: 2 threads pinned to one core measure one core's peak, as 1 thread does, and
// must not stand for 2 threads on 2 cores.
std::string cache_key(bool bf16, int threads) {
  const int runnable = runnable_threads(threads, static_cast<int>(affinity_cores().size()));
  return cpu_model_string() + "|" + std::to_string(runnable) + " threads|" +
         (bf16 ? "bf16 products" : "fp32 products");
}

// The entry's peak, or nothing (gflops 0) when it is missing or malformed.
ComputePeak cached_peak(const json& cache, const std::string& key) {
  const auto it = cache.find(key);
  if (it == cache.end() || !it->is_object()) return {};
  const json& entry = *it;
  if (!entry.contains("gflops") || !entry["gflops"].is_number() ||
      !(entry["gflops"].get<double>() > 0) || !entry.contains("unit") || !entry["unit"].is_string())
    return {};
  return {entry["gflops"].get<double>(), entry["unit"].get<std::string>()};
}

// Probes this process's peak now (`result.peak`, `core_share`, `busy`).
void probe(MachinePeak& result, bool bf16, int threads, double min_share) {
  const int runnable = runnable_threads(threads, static_cast<int>(affinity_cores().size()));
  const Stopwatch wall;
  const double cpu_before = process_cpu_seconds();
  result.peak = measure_compute_peak(bf16, threads, kProbeScale);
  const double cpu = process_cpu_seconds() - cpu_before, seconds = wall.seconds();
  result.core_share = probe_core_share(cpu, seconds, runnable);
  result.busy = result.core_share < min_share;
}

// An exclusive flock on `path`.lock while alive (creating the cache's folder): runs and ranks on
// one host read, compare and write the cache one after another, so none writes a lower peak over a
// higher one or drops another's entry. No lock where the file cannot be opened (best effort).
class CacheLock {
 public:
  explicit CacheLock(const std::string& path) {
    std::error_code error;
    fs::create_directories(fs::path(path).parent_path(), error);
    fd_ = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~CacheLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

// Best effort, under a CacheLock. Whether the entry was written.
bool write_entry(json cache, const std::string& path, const std::string& key,
                 const ComputePeak& peak) {
  try {
    cache[key] = {
        {"gflops", peak.gflops}, {"unit", peak.unit}, {"measured", utc_now("%Y-%m-%dT%H:%M:%SZ")}};
    AtomicFile file(path);
    file.write(cache.dump(2) + "\n");
    file.commit();
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

MachinePeak machine_peak(bool bf16, int threads) {
  const double min_share = peak_min_core_share();  // read first: a bad value is an error on any run
  MachinePeak result;
  result.cache_path = cache_path();
  const std::string key = cache_key(bf16, threads);
  if (const ComputePeak cached = result.cache_path.empty()
                                     ? ComputePeak{}
                                     : cached_peak(read_cache(result.cache_path), key);
      cached.gflops > 0) {
    result.peak = cached;
    result.cached = true;
    return result;
  }
  probe(result, bf16, threads, min_share);
  if (result.cache_path.empty() || result.peak.gflops <= 0 || result.busy) return result;
  const CacheLock lock(result.cache_path);
  // Read again under the lock: another run may have written other entries meanwhile.
  result.saved = write_entry(read_cache(result.cache_path), result.cache_path, key, result.peak);
  return result;
}

MachinePeak raise_machine_peak(bool bf16, int threads, const MachinePeak& current) {
  const double min_share = peak_min_core_share();
  MachinePeak again;
  again.cache_path = cache_path();
  probe(again, bf16, threads, min_share);
  // A probe whose threads were held back by another process reads low: it counts for nothing.
  if (again.busy || !(again.peak.gflops > current.peak.gflops)) return current;
  // Written only when more than kPeakRaiseMargin above the entry, so that the cache does not move
  // with every probe's own spread. The maximum is the right summary: a probe cannot run faster
  // than the hardware, only slower (a neighbour, a lower clock).
  if (!again.cache_path.empty()) {
    const CacheLock lock(again.cache_path);
    const std::string key = cache_key(bf16, threads);
    const json cache = read_cache(again.cache_path);  // as now: another run may have raised it
    if (again.peak.gflops > (1 + kPeakRaiseMargin) * cached_peak(cache, key).gflops)
      again.saved = write_entry(cache, again.cache_path, key, again.peak);
  }
  return again;
}

}  // namespace cpuft
