// How much memory this process may still take, for checks before large allocations.
#pragma once

#include <cstdint>
#include <string>

namespace cpuft {

// Bytes this process can allocate without swapping or being killed: the kernel's MemAvailable
// (/proc/meminfo), lowered to the room left under this cgroup's memory limit (cgroup v2
// memory.max - memory.current) when one is set. -1 when neither can be read.
int64_t available_memory_bytes();

// "1.5 GB", "820 MB": for messages.
std::string format_bytes(double bytes);

}  // namespace cpuft
