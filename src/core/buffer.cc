#include "core/buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace cpuft {

namespace {
constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePage = 2u << 20;

// memset over all OpenMP threads, one 2 MiB piece at a time: the first touch of a fresh buffer is
// the kernel zeroing its pages on faults, on the faulting core (perf: 56% of the CPU time of a
// one-step MiniLM run on MRPC), and zeroing the gradients every step is
// bound by memory bandwidth, which one core does not reach. On a machine with several NUMA nodes,
// each thread's pieces are also placed on its own node at first touch.
void parallel_zero(void* p, std::size_t bytes) {
  auto* bytes_at = static_cast<unsigned char*>(p);
  const auto pieces = static_cast<int64_t>((bytes + kHugePage - 1) / kHugePage);
#pragma omp parallel for schedule(static) if (pieces > 1)
  for (int64_t i = 0; i < pieces; ++i) {
    const std::size_t begin = static_cast<std::size_t>(i) * kHugePage;
    std::memset(bytes_at + begin, 0, std::min(kHugePage, bytes - begin));
  }
}
}  // namespace

void* allocate_aligned_zeroed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  // Big buffers are aligned to 2 MiB so that the kernel can back them with huge pages.
  const std::size_t alignment = bytes >= kHugePage ? kHugePage : kAlignment;
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (alignment == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
  parallel_zero(p, rounded);  // first touch here, once, not inside a training step
  return p;
}

void free_aligned(void* p) noexcept {
  std::free(p);
}

void zero_bytes(void* p, std::size_t bytes) {
  if (bytes != 0) parallel_zero(p, bytes);
}

}  // namespace cpuft
