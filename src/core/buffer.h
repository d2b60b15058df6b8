// AlignedBuffer: one big, 64-byte aligned, zero-initialised array, allocated once.
//
// Why not std::vector: buffers here are tens to hundreds of MB and live for the whole run. On
// these machines the first touch of a fresh 4 KiB page costs ~11 us, so big buffers ask for
// transparent huge pages (2 MiB-aligned fresh mappings) and are by default touched once at
// allocation, never inside a training step. A buffer sized for the worst case that a run rarely
// fills (the activation arena: every layer's tensors for the largest batch the data can make)
// asks for FirstTouch::on_use instead: its pages are the kernel's zero pages until a step writes
// them, so it holds memory only for the largest batch the run has seen (MiniLM on MRPC, one
// epoch: 91 MB less), for a few huge-page faults in the first steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cpuft {

enum class FirstTouch { at_allocation, on_use };

void* allocate_aligned_zeroed(std::size_t bytes, FirstTouch touch = FirstTouch::at_allocation);
void free_aligned(void* p, std::size_t bytes) noexcept;  // bytes: as allocated

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count, FirstTouch touch = FirstTouch::at_allocation)
      : data_(static_cast<T*>(allocate_aligned_zeroed(count * sizeof(T), touch))), size_(count) {}
  ~AlignedBuffer() { free_aligned(data_, size_ * sizeof(T)); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      free_aligned(data_, size_ * sizeof(T));
      data_ = other.data_;
      size_ = other.size_;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }
  void zero();

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

void zero_bytes(void* p, std::size_t bytes);

// Zeroes [p, p + bytes) by handing its whole pages back to the kernel (MADV_DONTNEED; the bytes
// of partial pages at either end are cleared): reads then see the kernel's shared zero page and
// take no memory until something writes. For a range whose pages are mostly never written (the
// word table's gradient: a step writes the rows of its tokens). Call keep_small_pages on the
// range first, or a write would fault in a 2 MiB huge page.
void release_zeroed(void* p, std::size_t bytes);
// No transparent huge pages for the whole pages of [p, p + bytes) (MADV_NOHUGEPAGE).
void keep_small_pages(void* p, std::size_t bytes);

template <typename T>
void AlignedBuffer<T>::zero() {
  zero_bytes(data_, size_ * sizeof(T));
}

}  // namespace cpuft
