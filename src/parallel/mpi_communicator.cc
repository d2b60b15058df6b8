// MpiCommunicator: Communicator over MPI's C API (Open MPI by default; any MPI-3 library works).
//
// Every collective is non-blocking (MPI_Iallreduce, MPI_Ibcast, MPI_Ibarrier, MPI_Iallgather(v))
// and completed by polling MPI_Test with a deadline, so no call can block forever on a dead peer.
// Errors are returned, not fatal (MPI_ERRORS_RETURN on our duplicate of MPI_COMM_WORLD), and become
// cpuft::Error naming the call.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "core/check.h"
#include "parallel/communicator.h"
#include "parallel/pending_ops.h"

namespace cpuft {

namespace {

bool g_mpi_communicator_alive = false;

// MPI has no bf16 type: the values travel as MPI_UINT16_T and this op sums them, each pair in fp32
// rounded back to bf16 (round_to_bf16), as NCCL sums bf16.
void bf16_sum(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const bf16*>(in);
  auto* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = round_to_bf16(to_float(a[i]) + to_float(b[i]));
}

MPI_Request null_request() {
  return MPI_REQUEST_NULL;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return str("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

std::string launch_mismatch_hint(const std::string& launcher) {
  if (launcher == "slurm")
    return "srun must start MPI programs with a PMI plugin: srun --mpi=pmix (Open MPI) or "
           "--mpi=pmi2 (MPICH)";
  if (launcher == "torchrun")
    return "torchrun-style variables alone cannot start MPI; launch with mpirun, mpiexec or srun";
  return "the program's MPI library is not the one whose launcher started it (e.g. MPICH's "
         "mpiexec.hydra starting an Open MPI program); use the matching mpirun";
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const LaunchInfo& launch) : Communicator(0, 1) {
    CPUFT_REQUIRE(!g_mpi_communicator_alive, "only one MPI communicator may exist per process");
    int finalized = 0;
    MPI_Finalized(&finalized);
    CPUFT_REQUIRE(!finalized, "MPI was already finalized in this process");
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // Open MPI's non-blocking all-reduce picks a binomial tree for fewer than 4 ranks or
      // MPI_IN_PLACE, which measured 2-2.5x slower than its ring at 25-100 MB on 2 ranks
      // (docs/distributed.md). Ask for the ring unless the user chose (other MPIs ignore this).
      setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
      // Open MPI's TCP transport sends a message above its eager limit (64 KiB) through a
      // rendezvous: request, clear-to-send, data, each turn waiting for the other rank's next MPI
      // call, and a rank calls MPI only between the products of backward. Sent eagerly (up to
      // 4 MiB), a bucket's pieces need fewer of those turns: on a 1600 Mbit/s link, 2 one-core
      // MiniLM ranks waited 3.2-4.1% of a step after backward instead of 5.3-5.8% (fp32 exchange)
      // and finished 10.6-10.7 of 13 buckets during backward instead of 9.9-10.1
      // (docs/scaling.md). Unless the user chose; other MPIs and transports ignore these.
      setenv("OMPI_MCA_btl_tcp_eager_limit", "4194304", /*overwrite=*/0);
      setenv("OMPI_MCA_btl_tcp_max_send_size", "4194304", /*overwrite=*/0);
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      owns_mpi_ = true;
      CPUFT_REQUIRE(provided >= MPI_THREAD_FUNNELED,
                    "the MPI library does not provide MPI_THREAD_FUNNELED");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &world_size_), "MPI_Comm_size");
    check(MPI_Op_create(bf16_sum, /*commute=*/1, &bf16_sum_), "MPI_Op_create");
    if (launch.launched() && (launch.world_size != world_size_ || launch.rank != rank_)) {
      const std::string message = str(launch.launcher, " says rank ", launch.rank, " of ",
                                      launch.world_size, " but MPI sees rank ", rank_, " of ",
                                      world_size_, ": the processes would train separate models; ",
                                      launch_mismatch_hint(launch.launcher));
      if (world_size_ == 1 && owns_mpi_) {  // a lone singleton can finalise safely
        MPI_Comm_free(&comm_);
        MPI_Finalize();
        owns_mpi_ = false;
      }
      throw Error(message);
    }
    g_mpi_communicator_alive = true;
  }

  ~MpiCommunicator() override {
    g_mpi_communicator_alive = false;
    // MPI_Finalize synchronises with the peers: after a failure, or with operations in flight, it
    // could wait forever for a lost rank. Exit without it; the launcher reports the others.
    if (failed_ || ops_.any_busy() || std::uncaught_exceptions() > 0) return;
    MPI_Op_free(&bf16_sum_);
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }

  Handle all_reduce_sum_async(float* data, int64_t n, const OpContext& context) override {
    return start_all_reduce(data, n, MPI_FLOAT, MPI_SUM, context);
  }

  Handle all_reduce_sum_bf16_async(bf16* data, int64_t n, const OpContext& context) override {
    return start_all_reduce(data, n, MPI_UINT16_T, bf16_sum_, context);
  }

  bool test(Handle handle) override {
    auto& op = ops_.get(handle);
    const bool done = tested(&op.request);
    if (done) ops_.release(op);
    return done;
  }

  void wait(Handle handle) override {
    auto& op = ops_.get(handle);
    poll(&op.request, [&] { return describe_all_reduce(op.context, op.floats); });
    ops_.release(op);
  }

  void broadcast(void* bytes, int64_t size, int root) override {
    CPUFT_CHECK(size >= 0 && (bytes != nullptr || size == 0), "broadcast of ", size, " bytes");
    CPUFT_REQUIRE(root >= 0 && root < world_size_, "broadcast from rank ", root, " of ",
                  world_size_);
    constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
    auto* cursor = static_cast<char*>(bytes);
    for (int64_t done = 0; done < size; done += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, size - done));
      MPI_Request request;
      check(MPI_Ibcast(cursor + done, count, MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
      poll(&request, [&] { return str("broadcast of ", size, " bytes from rank ", root); });
    }
  }

  void barrier() override {
    MPI_Request request;
    check(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
    poll(&request, [] { return std::string("barrier"); });
  }

  std::vector<std::string> all_gather_string(const std::string& value) override {
    CPUFT_REQUIRE(value.size() <= INT_MAX, "all_gather_string of ", value.size(), " bytes");
    const int length = static_cast<int>(value.size());
    std::vector<int> lengths(static_cast<size_t>(world_size_));
    MPI_Request request;
    check(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_, &request),
          "MPI_Iallgather");
    poll(&request, [] { return std::string("all-gather of string lengths"); });
    std::vector<int> offsets(lengths.size());
    int64_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    CPUFT_REQUIRE(total <= INT_MAX, "all_gather_string: ", total, " bytes in all");
    std::string joined(static_cast<size_t>(total), '\0');
    check(MPI_Iallgatherv(value.data(), length, MPI_CHAR, joined.data(), lengths.data(),
                          offsets.data(), MPI_CHAR, comm_, &request),
          "MPI_Iallgatherv");
    poll(&request, [] { return std::string("all-gather of strings"); });
    std::vector<std::string> result;
    for (size_t r = 0; r < lengths.size(); ++r)
      result.push_back(
          joined.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
    return result;
  }

  std::string name() const override { return "mpi"; }

  void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    // The launcher forwards this rank's output through its own proxy; MPI_Abort right away can
    // end the job before the error line got out (seen with MPICH's Hydra). A moment first.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

 private:
  void check(int code, const char* call) {
    if (code == MPI_SUCCESS) [[likely]]
      return;
    failed_ = true;
    throw Error(str("rank ", rank_, ": ", call, " failed: ", mpi_error_text(code),
                    "; a peer may have died"));
  }

  // In-place MPI_Iallreduce of n values of `type` with `op`.
  Handle start_all_reduce(void* data, int64_t n, MPI_Datatype type, MPI_Op op_kind,
                          const OpContext& context) {
    CPUFT_CHECK(n >= 0 && (data != nullptr || n == 0), "all-reduce of ", n, " values");
    CPUFT_REQUIRE(n <= INT_MAX, "rank ", rank_, ": an all-reduce of ", n,
                  " values exceeds MPI's int count; use smaller buckets (--bucket_cap_mb)");
    auto& op = ops_.acquire();
    check(
        MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), type, op_kind, comm_, &op.request),
        "MPI_Iallreduce");
    return ops_.activate(op, n, context);
  }

  bool tested(MPI_Request* request) {
    int done = 0;
    check(MPI_Test(request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done != 0;
  }

  // Tests `request` until it completes, bounded by timeout_seconds() (poll_until).
  template <typename Describe>
  void poll(MPI_Request* request, Describe&& what) {
    poll_until([&] { return tested(request); }, rank_, timeout_seconds_, &failed_, what);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op bf16_sum_ = MPI_OP_NULL;
  bool owns_mpi_ = false;
  bool failed_ = false;
  PendingOps<MPI_Request, null_request> ops_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo& launch) {
  return std::make_unique<MpiCommunicator>(launch);
}

}  // namespace cpuft
