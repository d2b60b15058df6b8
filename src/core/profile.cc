#include "core/profile.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace cpuft::profile {

namespace {

struct Slot {
  std::string name;
  double seconds = 0;
  int64_t calls = 0;
};

std::mutex& slots_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<Slot>& slots() {
  static std::vector<Slot> all;
  return all;
}

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* value = std::getenv("CPUFT_PROFILE");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return on;
}

int register_slot(const std::string& name) {
  std::lock_guard<std::mutex> lock(slots_mutex());
  // Several call sites may share a name (forward and backward of one op in two files): merge.
  for (size_t i = 0; i < slots().size(); ++i)
    if (slots()[i].name == name) return static_cast<int>(i);
  slots().push_back(Slot{name});
  return static_cast<int>(slots().size()) - 1;
}

namespace {
thread_local bool region_open = false;
}  // namespace

bool open_outermost() {
  if (region_open || omp_in_parallel()) return false;
  region_open = true;
  return true;
}

void close_outermost() {
  region_open = false;
}

void add(int slot, double seconds) {
  Slot& s = slots()[static_cast<size_t>(slot)];
  s.seconds += seconds;
  ++s.calls;
}

void reset() {
  for (Slot& s : slots()) {
    s.seconds = 0;
    s.calls = 0;
  }
}

std::string report() {
  if (!enabled()) return "";
  std::vector<Slot> sorted = slots();
  std::sort(sorted.begin(), sorted.end(),
            [](const Slot& a, const Slot& b) { return a.seconds > b.seconds; });
  double total = 0;
  for (const Slot& s : sorted) total += s.seconds;
  std::string out = "region                      seconds    calls   share\n";
  for (const Slot& s : sorted) {
    if (s.calls == 0) continue;
    char line[160];
    std::snprintf(line, sizeof line, "%-26s %9.3f %8lld %6.1f%%\n", s.name.c_str(), s.seconds,
                  static_cast<long long>(s.calls), total > 0 ? 100.0 * s.seconds / total : 0.0);
    out += line;
  }
  return out;
}

}  // namespace cpuft::profile
