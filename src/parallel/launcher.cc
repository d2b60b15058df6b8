#include "parallel/launcher.h"

#include <charconv>
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/check.h"

namespace cpuft {

namespace {

using Env = std::map<std::string, std::string>;

// A variable counts as set when it is present and not empty.
const std::string* lookup(const Env& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

int parse_count(const std::string& name, const std::string& value) {
  int result = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, result);
  CPUFT_REQUIRE(ec == std::errc() && ptr == end && result >= 0, "launcher variable ", name, "='",
                value, "' is not a non-negative integer");
  return result;
}

// One launcher's view of this process.
struct View {
  std::string launcher;
  std::string rank_var, size_var;  // for messages
  int rank = 0, world_size = 1;
  std::optional<int> local_rank, local_size;
};

// Reads a launcher's rank/size pair and optional local pair. nullopt when none of its variables
// is set; an error when the rank/size pair is incomplete.
std::optional<View> read_view(const Env& env, const std::string& launcher,
                              const std::string& rank_var, const std::string& size_var,
                              const std::string& local_rank_var,
                              const std::string& local_size_var) {
  const std::string* rank = lookup(env, rank_var);
  const std::string* size = lookup(env, size_var);
  const std::string* local_rank = local_rank_var.empty() ? nullptr : lookup(env, local_rank_var);
  const std::string* local_size = local_size_var.empty() ? nullptr : lookup(env, local_size_var);
  if (!rank && !size && !local_rank && !local_size) return std::nullopt;
  if (!rank || !size) {
    const std::string& set = rank         ? rank_var
                             : size       ? size_var
                             : local_rank ? local_rank_var
                                          : local_size_var;
    throw Error(str(launcher, " launch: ", set, " is set but ", rank ? size_var : rank_var,
                    " is not; these variables must be set together (a partial set would make "
                    "every process believe it is alone)"));
  }
  View view;
  view.launcher = launcher;
  view.rank_var = rank_var;
  view.size_var = size_var;
  view.rank = parse_count(rank_var, *rank);
  view.world_size = parse_count(size_var, *size);
  CPUFT_REQUIRE(view.world_size >= 1, launcher, " launch: ", size_var, "=0");
  CPUFT_REQUIRE(view.rank < view.world_size, launcher, " launch: ", rank_var, "=", view.rank,
                " is not below ", size_var, "=", view.world_size);
  if (local_rank) view.local_rank = parse_count(local_rank_var, *local_rank);
  if (local_size) view.local_size = parse_count(local_size_var, *local_size);
  return view;
}

// Slurm's "2(x3),1" task-count lists: entry i is the number of tasks on node i.
std::vector<int> expand_tasks_per_node(const std::string& name, const std::string& value) {
  std::vector<int> counts;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string::npos) comma = value.size();
    const std::string item = value.substr(pos, comma - pos);
    const size_t paren = item.find("(x");
    int repeat = 1;
    std::string count = item;
    if (paren != std::string::npos) {
      CPUFT_REQUIRE(item.back() == ')', "launcher variable ", name, "='", value,
                    "' is not a Slurm task list like 2(x3),1");
      count = item.substr(0, paren);
      repeat = parse_count(name, item.substr(paren + 2, item.size() - paren - 3));
    }
    const int n = parse_count(name, count);
    for (int i = 0; i < repeat; ++i) counts.push_back(n);
    pos = comma + 1;
  }
  return counts;
}

std::optional<View> read_slurm(const Env& env) {
  std::optional<View> view =
      read_view(env, "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "");
  if (!view) return view;
  for (const char* name :
       {"SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    const std::string* value = lookup(env, name);
    if (!value) continue;
    const std::vector<int> counts = expand_tasks_per_node(name, *value);
    const std::string* node = lookup(env, "SLURM_NODEID");
    if (counts.size() == 1) {
      view->local_size = counts[0];
    } else if (node) {
      const int index = parse_count("SLURM_NODEID", *node);
      CPUFT_REQUIRE(index < static_cast<int>(counts.size()), "slurm launch: SLURM_NODEID=", index,
                    " but ", name, "='", *value, "' lists ", counts.size(), " nodes");
      view->local_size = counts[static_cast<size_t>(index)];
    } else {
      bool uniform = true;
      for (int c : counts) uniform = uniform && c == counts[0];
      CPUFT_REQUIRE(uniform, "slurm launch: ", name, "='", *value,
                    "' differs between nodes and SLURM_NODEID is not set");
      view->local_size = counts[0];
    }
    break;
  }
  return view;
}

void require_agreement(const View& a, const View& b) {
  CPUFT_REQUIRE(a.rank == b.rank && a.world_size == b.world_size,
                "launchers disagree: ", a.launcher, " says rank ", a.rank, " of ", a.world_size,
                " (", a.rank_var, "/", a.size_var, ") but ", b.launcher, " says rank ", b.rank,
                " of ", b.world_size, " (", b.rank_var, "/", b.size_var,
                "); unset the stale variables or launch with one launcher");
}

}  // namespace

std::string LaunchInfo::describe() const {
  if (!launched()) return "none: single process";
  std::string text = str(launcher, ": rank ", rank, " of ", world_size, ", local rank ", local_rank,
                         " of ", local_size);
  if (!master_addr.empty()) text += str(", master ", master_addr, ":", master_port);
  return text;
}

LaunchInfo detect_launch(const Env& env) {
  std::vector<View> mpi_views;  // innermost launchers, in precedence order
  if (auto v = read_view(env, "openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"))
    mpi_views.push_back(*v);
  std::optional<View> slurm = read_slurm(env);
  // srun --mpi=pmi2 sets PMI_RANK (without PMI_SIZE) beside the SLURM_* variables: that PMI_RANK
  // belongs to srun, not to a Hydra launch.
  const bool srun_pmi_rank = slurm && lookup(env, "PMI_RANK") && !lookup(env, "PMI_SIZE");
  if (srun_pmi_rank) {
    CPUFT_REQUIRE(parse_count("PMI_RANK", *lookup(env, "PMI_RANK")) == slurm->rank,
                  "launchers disagree: PMI_RANK=", *lookup(env, "PMI_RANK"),
                  " but SLURM_PROCID=", slurm->rank);
  } else if (auto v = read_view(env, "hydra", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
                                "MPI_LOCALNRANKS")) {
    mpi_views.push_back(*v);
  }
  std::optional<View> torchrun =
      read_view(env, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE");

  std::vector<View> present = mpi_views;
  if (mpi_views.empty() && slurm) present.push_back(*slurm);
  if (torchrun) present.push_back(*torchrun);
  if (present.empty()) return LaunchInfo{};
  const View& chosen = present.front();
  for (size_t i = 1; i < present.size(); ++i) require_agreement(chosen, present[i]);

  LaunchInfo info;
  info.launcher = chosen.launcher;
  info.rank = chosen.rank;
  info.world_size = chosen.world_size;
  // The local rank and size come from the chosen launcher or, when it gives none, from another
  // launcher that agrees on rank and size (srun + PMI): never from the global rank.
  std::optional<int> local_rank = chosen.local_rank, local_size = chosen.local_size;
  std::vector<View> donors = present;
  if (slurm && !mpi_views.empty()) donors.push_back(*slurm);
  for (const View& other : donors) {
    if (other.rank != chosen.rank || other.world_size != chosen.world_size) continue;
    if (!local_rank) local_rank = other.local_rank;
    if (!local_size) local_size = other.local_size;
  }
  if (info.world_size > 1) {
    CPUFT_REQUIRE(local_rank.has_value(), chosen.launcher, " launch: rank ", info.rank, " of ",
                  info.world_size,
                  " but no local rank is set (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, "
                  "SLURM_LOCALID or LOCAL_RANK); cpuft does not guess it from the global rank");
    CPUFT_REQUIRE(local_size.has_value(), chosen.launcher, " launch: rank ", info.rank, " of ",
                  info.world_size,
                  " but the number of processes on this host is not set "
                  "(OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, SLURM_*TASKS_PER_NODE or "
                  "LOCAL_WORLD_SIZE)");
  }
  info.local_rank = local_rank.value_or(0);
  info.local_size = local_size.value_or(1);
  CPUFT_REQUIRE(info.local_size >= 1 && info.local_rank < info.local_size, chosen.launcher,
                " launch: local rank ", info.local_rank, " is not below the local size ",
                info.local_size);
  CPUFT_REQUIRE(info.local_size <= info.world_size, chosen.launcher, " launch: local size ",
                info.local_size, " exceeds the world size ", info.world_size);

  const std::string* addr = lookup(env, "MASTER_ADDR");
  const std::string* port = lookup(env, "MASTER_PORT");
  if (addr) info.master_addr = *addr;
  if (port) info.master_port = parse_count("MASTER_PORT", *port);
  if (info.launcher == "torchrun" && info.world_size > 1) {
    CPUFT_REQUIRE(addr && port, "torchrun launch: RANK/WORLD_SIZE are set but ",
                  addr ? "MASTER_PORT" : "MASTER_ADDR", " is not");
  }
  return info;
}

LaunchInfo detect_launch_from_process_env() {
  static const char* const kNames[] = {"OMPI_COMM_WORLD_RANK",
                                       "OMPI_COMM_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                                       "PMI_RANK",
                                       "PMI_SIZE",
                                       "MPI_LOCALRANKID",
                                       "MPI_LOCALNRANKS",
                                       "SLURM_PROCID",
                                       "SLURM_NTASKS",
                                       "SLURM_LOCALID",
                                       "SLURM_NODEID",
                                       "SLURM_STEP_TASKS_PER_NODE",
                                       "SLURM_NTASKS_PER_NODE",
                                       "SLURM_TASKS_PER_NODE",
                                       "RANK",
                                       "WORLD_SIZE",
                                       "LOCAL_RANK",
                                       "LOCAL_WORLD_SIZE",
                                       "MASTER_ADDR",
                                       "MASTER_PORT"};
  Env env;
  for (const char* name : kNames)
    if (const char* value = std::getenv(name)) env[name] = value;
  return detect_launch(env);
}

}  // namespace cpuft
