#include "core/buffer.h"

#include <sys/mman.h>
#include <unistd.h>

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

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer every buffer comes from the (instrumented) heap, so that an access past
// its end is caught; FirstTouch::on_use then touches at allocation too.
constexpr bool kHeapOnly = true;
#else
constexpr bool kHeapOnly = false;
#endif

// Big buffers are 2 MiB-aligned so that the kernel can back them with huge pages, and are a fresh
// private mapping of their own (zero pages, whatever the heap held before).
std::size_t alignment_of(std::size_t bytes) {
  return bytes >= kHugePage ? kHugePage : kAlignment;
}
bool is_mapped(std::size_t bytes) {
  return !kHeapOnly && bytes >= kHugePage;
}
std::size_t rounded_size(std::size_t bytes) {
  const std::size_t alignment = alignment_of(bytes);
  return (bytes + alignment - 1) / alignment * alignment;
}
void* map_huge_aligned(std::size_t rounded) {
  const std::size_t length = rounded + kHugePage;
  void* m = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto first = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t begin = (first + kHugePage - 1) / kHugePage * kHugePage;
  const std::uintptr_t end = begin + rounded, last = first + length;
  if (begin > first) munmap(m, begin - first);  // the unaligned head and tail go back
  if (last > end) munmap(reinterpret_cast<void*>(end), last - end);
  void* p = reinterpret_cast<void*>(begin);
  madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}
}  // namespace

void* allocate_aligned_zeroed(std::size_t bytes, FirstTouch touch) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = rounded_size(bytes);
  if (!is_mapped(bytes)) {
    void* p = std::aligned_alloc(alignment_of(bytes), rounded);
    if (p == nullptr) throw std::bad_alloc();
    if (bytes >= kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
    parallel_zero(p, rounded);
    return p;
  }
  void* p = map_huge_aligned(rounded);
  // Already zero: touching is only to take the faults here, not inside a training step.
  if (touch == FirstTouch::at_allocation) parallel_zero(p, rounded);
  return p;
}

void free_aligned(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (is_mapped(bytes))
    munmap(p, rounded_size(bytes));
  else
    std::free(p);
}

void zero_bytes(void* p, std::size_t bytes) {
  if (bytes != 0) parallel_zero(p, bytes);
}

namespace {
// The whole pages inside [p, p + bytes): [*begin, *end), empty when there are none.
void whole_pages(void* p, std::size_t bytes, unsigned char** begin, unsigned char** end) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t b = (first + page - 1) / page * page, e = (first + bytes) / page * page;
  *begin = reinterpret_cast<unsigned char*>(b);
  *end = reinterpret_cast<unsigned char*>(std::max(b, e));
}
}  // namespace

namespace {
// Whether MADV_DONTNEED leaves private anonymous pages reading as zero here, as Linux documents:
// checked once on a page of its own, since a sandbox or an emulator may accept the call and keep
// the bytes; then release_zeroed zeroes by hand.
bool dontneed_zeroes() {
  static const bool works = [] {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* m = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return false;
    auto* bytes = static_cast<volatile unsigned char*>(m);
    bytes[0] = 1;
    const bool ok = madvise(m, page, MADV_DONTNEED) == 0 && bytes[0] == 0;
    munmap(m, page);
    return ok;
  }();
  return works;
}
}  // namespace

void release_zeroed(void* p, std::size_t bytes) {
  if (bytes == 0) return;
  unsigned char *begin, *end;
  whole_pages(p, bytes, &begin, &end);
  auto* first = static_cast<unsigned char*>(p);
  if (begin == end || !dontneed_zeroes() ||
      madvise(begin, static_cast<std::size_t>(end - begin), MADV_DONTNEED) != 0) {
    parallel_zero(p, bytes);  // no whole page, or the kernel refused: zero by hand
    return;
  }
  std::memset(first, 0, static_cast<std::size_t>(begin - first));
  std::memset(end, 0, static_cast<std::size_t>(first + bytes - end));
}

void keep_small_pages(void* p, std::size_t bytes) {
  unsigned char *begin, *end;
  whole_pages(p, bytes, &begin, &end);
  if (begin != end) madvise(begin, static_cast<std::size_t>(end - begin), MADV_NOHUGEPAGE);
}

}  // namespace cpuft
