// CclCommunicator: Communicator over Intel oneCCL (CPU build, OFI transport), the library the
// reference stack (PyTorch + oneCCL bindings) all-reduces with.
//
// Rendezvous (oneCCL's key-value store, "KVS", which exchanges the transport addresses):
//   - under an MPI launcher (Open MPI, Hydra, Slurm with a PMI plugin): rank 0 creates the main KVS
//     and its address travels to the others by MPI broadcast. MPI stays initialised for that and
//     for abort() (MPI_Abort ends the whole job when one rank fails);
//   - under torchrun-style variables: every rank opens the KVS at MASTER_ADDR:MASTER_PORT
//     (oneCCL's ip_port attribute); no MPI at all.
//
// Progress: oneCCL runs collectives on its own worker thread (CCL_WORKER_COUNT, default 1), so
// test() only reads completion and buckets progress while the backward pass computes. With
// CCL_WORKER_OFFLOAD=0, which start_distributed (train/distributed.cc) sets when the rank has a
// compute thread on every core, there is no worker: test() drives the collectives, at the
// trainer's polls between products, as with MPI (see grad_reducer.h).
//
// Environment set for oneCCL before ccl::init(), each only when the user has not set it:
//   CCL_ATL_TRANSPORT=ofi   oneCCL's MPI transport would load libmpi.so.12 (the MPICH ABI) into a
//                           process that may already run Open MPI (libmpi.so.40);
//   CCL_PROCESS_LAUNCHER=none, CCL_LOCAL_RANK, CCL_LOCAL_SIZE   from our launcher detection:
//                           oneCCL otherwise guesses the local rank (it places its worker
//                           thread by it);
//   CCL_KVS_IFACE, FI_TCP_IFACE = the interface this host uses to reach MASTER_ADDR (asked of the
//                           kernel's routing table): oneCCL otherwise takes the first non-loopback
//                           interface for its store and libfabric picks its own, and a wrong guess
//                           (a docker bridge, a management NIC; loopback when MASTER_ADDR is
//                           127.0.0.1) is a silent hang, the reference stack's classic. An
//                           unreachable MASTER_ADDR is refused;
//   CCL_ATL_SHM=1           with several ranks on this host: their traffic goes through libfabric's
//                           shared-memory provider instead of TCP over loopback (measured
//                           2.1-3.3x at 25 MB, 2.4-3.0x at 100 MB on 2 ranks, docs/distributed.md);
//   CCL_ENABLE_OMP_COLL=0   its OpenMP collectives need the MPI transport;
//   CCL_LOG_LEVEL=error     at its default (warn) oneCCL prints a line per rank for each of the
//                           variables above; CCL_LOG_LEVEL=warn or info brings them back.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <oneapi/ccl.hpp>

#include "core/check.h"
#include "parallel/communicator.h"
#include "parallel/pending_ops.h"

namespace cpuft {

namespace {

bool g_ccl_communicator_alive = false;

ccl::event no_event() {
  return ccl::event();
}

// MASTER_ADDR as a numeric IPv4 address (oneCCL's KVS takes no host names).
std::string numeric_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  CPUFT_REQUIRE(status == 0 && found != nullptr, "MASTER_ADDR='", host,
                "' does not resolve to an IPv4 address: ", gai_strerror(status));
  char text[INET_ADDRSTRLEN] = {};
  const auto* address = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  inet_ntop(AF_INET, &address->sin_addr, text, sizeof(text));
  freeaddrinfo(found);
  return text;
}

// The network interface whose address this host would use to reach `ip` (a UDP connect sends
// nothing; getsockname then tells which local address the route picked).
std::string interface_towards(const std::string& ip, int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  CPUFT_REQUIRE(fd >= 0, "socket(): ", std::strerror(errno));
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &target.sin_addr);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  const bool routed =
      connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int error = errno;
  close(fd);
  CPUFT_REQUIRE(routed, "MASTER_ADDR ", ip,
                " is not reachable from this host: ", std::strerror(error));
  ifaddrs* interfaces = nullptr;
  CPUFT_REQUIRE(getifaddrs(&interfaces) == 0, "getifaddrs(): ", std::strerror(errno));
  std::string name;
  for (const ifaddrs* i = interfaces; i != nullptr && name.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == local.sin_addr.s_addr)
      name = i->ifa_name;
  }
  freeifaddrs(interfaces);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  CPUFT_REQUIRE(!name.empty(), "no network interface holds ", text,
                ", the address this host uses to reach MASTER_ADDR ", ip);
  return name;
}

void set_default_env(const char* name, const std::string& value) {
  setenv(name, value.c_str(), /*overwrite=*/0);
}

int g_terminate_rank = -1;

// oneCCL reports a lost peer by throwing from its own worker thread, where nobody can catch it:
// std::terminate. Print one line instead of an abort with a backtrace, and exit; the launcher
// (mpirun, torchrun) then ends the other ranks.
[[noreturn]] void on_terminate() {
  std::string what = "unknown error";
  if (std::exception_ptr error = std::current_exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
  }
  std::fprintf(stderr,
               "error: rank %d: oneCCL failed in its worker thread: %s; a peer may have died\n",
               g_terminate_rank, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

class CclCommunicator final : public Communicator {
 public:
  explicit CclCommunicator(const LaunchInfo& launch) : Communicator(0, 1) {
    CPUFT_REQUIRE(!g_ccl_communicator_alive, "only one oneCCL communicator may exist per process");
    const bool torchrun = launch.launcher == "torchrun";
    if (torchrun) {
      CPUFT_REQUIRE(!launch.master_addr.empty() && launch.master_port > 0,
                    "--dist_backend ccl under torchrun-style variables needs MASTER_ADDR and "
                    "MASTER_PORT (oneCCL's rendezvous address)");
    } else if (launch.launched()) {
      bootstrap_ = make_mpi_communicator(launch);  // refuses a launcher/MPI mismatch
    }
    rank_ = launch.rank;
    world_size_ = launch.world_size;

    set_default_env("CCL_LOG_LEVEL", "error");
    set_default_env("CCL_ATL_TRANSPORT", "ofi");
    set_default_env("CCL_PROCESS_LAUNCHER", "none");
    set_default_env("CCL_LOCAL_RANK", std::to_string(launch.local_rank));
    set_default_env("CCL_LOCAL_SIZE", std::to_string(launch.local_size));
    set_default_env("CCL_ENABLE_OMP_COLL", "0");
    if (launch.local_size > 1) set_default_env("CCL_ATL_SHM", "1");
    std::string ip_port;
    if (torchrun) {
      const std::string ip = numeric_ipv4(launch.master_addr);
      const std::string iface = interface_towards(ip, launch.master_port);
      set_default_env("CCL_KVS_IFACE", iface);
      set_default_env("FI_TCP_IFACE", iface);
      ip_port = str(ip, "_", launch.master_port);
    }

    g_terminate_rank = rank_;
    std::set_terminate(on_terminate);
    try {
      ccl::init();
      if (torchrun) {
        ccl::kvs_attr attr = ccl::default_kvs_attr;  // create_kvs_attr() trips -Wpedantic
        attr.set<ccl::kvs_attr_id::ip_port>(ccl::string(ip_port.c_str()));
        kvs_ = ccl::create_main_kvs(attr);
      } else if (world_size_ == 1) {
        kvs_ = ccl::create_main_kvs();
      } else {
        ccl::kvs::address_type address{};
        if (rank_ == 0) {
          kvs_ = ccl::create_main_kvs();
          address = kvs_->get_address();
        }
        bootstrap_->broadcast(address.data(), static_cast<int64_t>(address.size()), 0);
        if (rank_ != 0) kvs_ = ccl::create_kvs(address);
      }
      comm_ = new ccl::communicator(ccl::create_communicator(world_size_, rank_, kvs_));
    } catch (const ccl::exception& e) {
      throw Error(str("rank ", rank_, ": oneCCL start-up failed: ", e.what()));
    }
    CPUFT_REQUIRE(comm_->rank() == rank_ && comm_->size() == world_size_, "oneCCL sees rank ",
                  comm_->rank(), " of ", comm_->size(), " but the launcher (", launch.describe(),
                  ") says rank ", rank_, " of ", world_size_);
    g_ccl_communicator_alive = true;
  }

  ~CclCommunicator() override {
    g_ccl_communicator_alive = false;
    // After a failure, tearing the communicator down would talk to the lost peer: leave it.
    if (failed_ || ops_.any_busy() || std::uncaught_exceptions() > 0) return;
    delete comm_;
  }

  Handle all_reduce_sum_async(float* data, int64_t n, const OpContext& context) override {
    return start_all_reduce(data, n, ccl::datatype::float32, context);
  }

  Handle all_reduce_sum_bf16_async(bf16* data, int64_t n, const OpContext& context) override {
    return start_all_reduce(data, n, ccl::datatype::bfloat16, context);
  }

  bool test(Handle handle) override {
    auto& op = ops_.get(handle);
    const bool done = tested(op.request);
    if (done) ops_.release(op);
    return done;
  }

  void wait(Handle handle) override {
    auto& op = ops_.get(handle);
    poll(op.request, [&] { return describe_all_reduce(op.context, op.floats); });
    ops_.release(op);
  }

  void broadcast(void* bytes, int64_t size, int root) override {
    CPUFT_CHECK(size >= 0 && (bytes != nullptr || size == 0), "broadcast of ", size, " bytes");
    CPUFT_REQUIRE(root >= 0 && root < world_size_, "broadcast from rank ", root, " of ",
                  world_size_);
    if (size == 0) return;
    ccl::event event;
    guard("ccl::broadcast", [&] {
      event = ccl::broadcast(bytes, static_cast<size_t>(size), ccl::datatype::uint8, root, *comm_);
    });
    poll(event, [&] { return str("broadcast of ", size, " bytes from rank ", root); });
  }

  // An all-reduce of one float: ccl::barrier blocks inside the call (no timeout possible) and was
  // seen to leave one of 3 ranks waiting after the others had passed it.
  void barrier() override {
    ccl::event event;
    guard("ccl::allreduce", [&] {
      event = ccl::allreduce(&barrier_token_, &barrier_token_, 1, ccl::datatype::float32,
                             ccl::reduction::sum, *comm_);
    });
    poll(event, [] { return std::string("barrier"); });
  }

  std::vector<std::string> all_gather_string(const std::string& value) override {
    const auto world = static_cast<size_t>(world_size_);
    const std::vector<size_t> ones(world, 1);
    uint64_t length = value.size();
    std::vector<uint64_t> lengths(world);
    ccl::event event;
    guard("ccl::allgatherv", [&] {
      event = ccl::allgatherv(&length, 1, lengths.data(), ones, ccl::datatype::uint64, *comm_);
    });
    poll(event, [] { return std::string("all-gather of string lengths"); });
    std::vector<size_t> counts(lengths.begin(), lengths.end());
    size_t total = 0;
    for (size_t count : counts) total += count;
    std::string joined(total, '\0');
    if (total > 0) {  // oneCCL refuses zero-byte collectives with null buffers
      guard("ccl::allgatherv", [&] {
        event = ccl::allgatherv(value.data(), value.size(), joined.data(), counts,
                                ccl::datatype::int8, *comm_);
      });
      poll(event, [] { return std::string("all-gather of strings"); });
    }
    std::vector<std::string> result;
    size_t offset = 0;
    for (size_t count : counts) {
      result.push_back(joined.substr(offset, count));
      offset += count;
    }
    return result;
  }

  std::string name() const override { return "ccl"; }

  void abort(int exit_code) override {
    if (bootstrap_) bootstrap_->abort(exit_code);  // MPI_Abort: the launcher ends every rank
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exit_code);  // torchrun-style launchers end the others when one rank exits
  }

 private:
  // Runs a oneCCL call; its exceptions become cpuft::Error naming this rank and the call.
  template <typename Call>
  void guard(const char* name, Call&& call) {
    try {
      call();
    } catch (const ccl::exception& e) {
      failed_ = true;
      throw Error(str("rank ", rank_, ": ", name, " failed: ", e.what(), "; a peer may have died"));
    }
  }

  // In-place ccl::allreduce (sum) of n values of `type`.
  Handle start_all_reduce(void* data, int64_t n, ccl::datatype type, const OpContext& context) {
    CPUFT_CHECK(n >= 0 && (data != nullptr || n == 0), "all-reduce of ", n, " values");
    auto& op = ops_.acquire();
    guard("ccl::allreduce", [&] {
      op.request =
          ccl::allreduce(data, data, static_cast<size_t>(n), type, ccl::reduction::sum, *comm_);
    });
    return ops_.activate(op, n, context);
  }

  bool tested(ccl::event& event) {
    bool done = false;
    guard("ccl::event::test", [&] { done = event.test(); });
    return done;
  }

  // Tests `event` until it completes, bounded by timeout_seconds() (poll_until).
  template <typename Describe>
  void poll(ccl::event& event, Describe&& what) {
    poll_until([&] { return tested(event); }, rank_, timeout_seconds_, &failed_, what);
  }

  std::unique_ptr<Communicator> bootstrap_;  // MPI, when an MPI launcher started us
  ccl::shared_ptr_class<ccl::kvs> kvs_;
  ccl::communicator* comm_ = nullptr;  // owned; leaked on purpose after a failure (see dtor)
  bool failed_ = false;
  float barrier_token_ = 0;
  PendingOps<ccl::event, no_event> ops_;
};

}  // namespace

std::unique_ptr<Communicator> make_ccl_communicator(const LaunchInfo& launch) {
  return std::make_unique<CclCommunicator>(launch);
}

}  // namespace cpuft
