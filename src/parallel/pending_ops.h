// What the MPI and oneCCL communicators share: the table of non-blocking operations in flight
// behind Communicator::Handle, and the bounded wait that turns a stall into an error.
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "parallel/communicator.h"

namespace cpuft {

// Operations in flight, each with its library request (MPI_Request, ccl::event); kEmpty makes the
// library's "no request" value. Entries are reused; a handle carries the entry's generation so
// that a stale handle is caught.
template <typename Request, Request (*kEmpty)()>
class PendingOps {
 public:
  struct Op {
    Request request = kEmpty();
    bool busy = false;
    uint32_t generation = 0;
    int64_t floats = 0;
    OpContext context;
  };

  PendingOps() : ops_(64) {}

  // A free entry for a new operation (grows past 64 in flight, which a normal step never needs);
  // the caller starts the operation into op.request, then calls activate().
  Op& acquire() {
    for (Op& op : ops_)
      if (!op.busy) return op;
    ops_.emplace_back();
    return ops_.back();
  }
  Communicator::Handle activate(Op& op, int64_t floats, const OpContext& context) {
    op.busy = true;
    op.floats = floats;
    op.context = context;
    return Communicator::Handle{static_cast<int32_t>(&op - ops_.data()), op.generation};
  }
  Op& get(Communicator::Handle handle) {
    CPUFT_CHECK(handle.slot >= 0 && static_cast<size_t>(handle.slot) < ops_.size(),
                "unknown communicator handle");
    Op& op = ops_[static_cast<size_t>(handle.slot)];
    CPUFT_CHECK(op.busy && op.generation == handle.generation,
                "communicator handle used after completion");
    return op;
  }
  void release(Op& op) {
    op.busy = false;
    op.request = kEmpty();
    ++op.generation;
  }
  bool any_busy() const {
    for (const Op& op : ops_)
      if (op.busy) return true;
    return false;
  }

 private:
  std::vector<Op> ops_;
};

// "all-reduce of bucket 3 at step 120", or "all-reduce of N floats" outside gradient buckets.
inline std::string describe_all_reduce(const OpContext& context, int64_t floats) {
  if (context.bucket >= 0)
    return str("all-reduce of bucket ", context.bucket, " at step ", context.step);
  return str("all-reduce of ", floats, " floats");
}

// Calls done() until it returns true; after timeout_seconds throws "rank R: <what()> did not
// complete within T s; a peer may have died" (and sets *failed). Spins first (lowest latency),
// then yields the core between calls so that an oversubscribed peer, OpenMP thread or oneCCL
// worker can run.
template <typename Done, typename Describe>
void poll_until(Done&& done, int rank, double timeout_seconds, bool* failed, Describe&& what) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (int64_t iteration = 0;; ++iteration) {
    if (done()) return;
    if (iteration > 1000) sched_yield();
    if ((iteration & 15) == 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > timeout_seconds) {
      *failed = true;
      throw Error(str("rank ", rank, ": ", what(), " did not complete within ", timeout_seconds,
                      " s; a peer may have died"));
    }
  }
}

}  // namespace cpuft
