#include "core/memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace cpuft {

namespace {

// The first number of a file ("max" or an unreadable file: -1).
int64_t read_number(const char* path) {
  std::ifstream in(path);
  int64_t value = -1;
  if (!(in >> value)) return -1;
  return value;
}

int64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    int64_t kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %ld kB", &kib) == 1) return kib * 1024;
  }
  return -1;
}

}  // namespace

int64_t available_memory_bytes() {
  int64_t available = mem_available();
  const int64_t limit = read_number("/sys/fs/cgroup/memory.max");
  const int64_t used = read_number("/sys/fs/cgroup/memory.current");
  if (limit > 0 && used >= 0) {
    const int64_t room = std::max<int64_t>(0, limit - used);
    available = available < 0 ? room : std::min(available, room);
  }
  return available;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1e11)
    std::snprintf(text, sizeof text, "%.0f GB", bytes / 1e9);
  else if (bytes >= 1e9)
    std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  else
    std::snprintf(text, sizeof text, "%.0f MB", bytes / 1e6);
  return text;
}

}  // namespace cpuft
