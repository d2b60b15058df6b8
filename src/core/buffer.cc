#include "core/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace cpuft {

namespace {
constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePage = 2u << 20;
}  // namespace

void* allocate_aligned_zeroed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  // Big buffers are aligned to 2 MiB so that the kernel can back them with huge pages.
  const std::size_t alignment = bytes >= kHugePage ? kHugePage : kAlignment;
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (alignment == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
  std::memset(p, 0, rounded);  // first touch here, once, not inside a training step
  return p;
}

void free_aligned(void* p) noexcept {
  std::free(p);
}

void zero_bytes(void* p, std::size_t bytes) {
  if (bytes != 0) std::memset(p, 0, bytes);
}

}  // namespace cpuft
