#include "data/glue_source.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "core/check.h"
#include "data/glue_parquet_file.h"

#ifndef CPUFT_REPO_GLUE_DIR
#error "CPUFT_REPO_GLUE_DIR must be defined (src/data/CMakeLists.txt does)"
#endif

namespace cpuft {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

std::string expand_home(const std::string& path) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
  std::string home = env("HOME");
  if (home.empty()) home = "/root";
  return home + path.substr(1);
}

bool is_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);  // follows the hub cache's symlinks into blobs/
}

std::string read_ref(const std::string& path) {
  std::ifstream in(path);
  std::string commit;
  std::getline(in, commit);
  while (!commit.empty() && (commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
  return commit;
}

// The hub's text columns of each config (run_glue.py's task_to_keys; ax as mnli).
glue_parquet::Columns hub_columns(const GlueTask& task) {
  static const std::map<std::string, std::pair<std::string, std::string>> keys = {
      {"cola", {"sentence", ""}},           {"sst2", {"sentence", ""}},
      {"mrpc", {"sentence1", "sentence2"}}, {"stsb", {"sentence1", "sentence2"}},
      {"qqp", {"question1", "question2"}},  {"mnli", {"premise", "hypothesis"}},
      {"qnli", {"question", "sentence"}},   {"rte", {"sentence1", "sentence2"}},
      {"wnli", {"sentence1", "sentence2"}}, {"ax", {"premise", "hypothesis"}},
  };
  const auto it = keys.find(task.name);
  if (it == keys.end()) throw Error(str("task ", task.name, " is not a config of nyu-mll/glue"));
  return {it->second.first, it->second.second, false};
}

// The variant of `split` that `variant` names ("" is the first), with read_glue_split's errors.
std::string split_variant(const GlueTask& task, Split split, const std::string& variant) {
  const SplitFormat& format = task.split(split);
  if (format.files.empty()) {
    throw Error(str("task ", task.name, " has no ", split_name(split), " split"));
  }
  if (variant.empty()) return format.variants[0];
  if (std::find(format.variants.begin(), format.variants.end(), variant) != format.variants.end()) {
    return variant;
  }
  std::string valid;
  for (const std::string& v : format.variants) {
    if (!v.empty()) valid += (valid.empty() ? "'" : ", '") + v + "'";
  }
  throw Error(str("task ", task.name, " ", split_name(split), " split has no variant '", variant,
                  "'", valid.empty() ? "" : "; valid: ", valid));
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
}

// Whether `name` is "<split>-<i>-of-<n>.parquet"; sets i and n. (Not std::regex: GCC 12's
// <regex> gives a false -Wmaybe-uninitialized under the sanitizers.)
bool shard_name(const std::string& name, const std::string& split, long& i, long& n) {
  const std::string prefix = split + "-", suffix = ".parquet";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  const std::string middle =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  const size_t of = middle.find("-of-");
  if (of == std::string::npos) return false;
  const std::string first = middle.substr(0, of), second = middle.substr(of + 4);
  if (!all_digits(first) || !all_digits(second)) return false;
  i = std::stol(first);
  n = std::stol(second);
  return true;
}

// The snapshot folder of `revision` in the cache of one hub dataset repository, or "" with the
// reason in `why`.
std::string snapshot_of(const std::string& repo_dir, const std::string& revision,
                        std::string& why) {
  if (!is_dir(repo_dir)) {
    why = "not there";
    return "";
  }
  const std::string ref = repo_dir + "/refs/" + revision;
  std::string commit;
  if (is_file(ref)) {
    commit = read_ref(ref);
  } else if (is_dir(repo_dir + "/snapshots/" + revision)) {
    commit = revision;  // a commit hash
  } else {
    why = str("no refs/", revision, " and no snapshots/", revision);
    return "";
  }
  const std::string snapshot = repo_dir + "/snapshots/" + commit;
  if (!is_dir(snapshot)) {
    why = str("refs/", revision, " names ", commit, ", which has no snapshot folder");
    return "";
  }
  return snapshot;
}

}  // namespace

std::string default_repo_glue_dir() {
  return CPUFT_REPO_GLUE_DIR;
}

std::string hf_hub_cache_dir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    if (const std::string v = env(name); !v.empty()) return expand_home(v);
  }
  if (const std::string home = env("HF_HOME"); !home.empty()) return expand_home(home) + "/hub";
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) {
    return expand_home(xdg) + "/huggingface/hub";
  }
  return expand_home("~/.cache/huggingface/hub");
}

std::optional<GlueSource> locate_glue_data(const GlueTask& task, const GlueSearch& search,
                                           std::vector<std::string>* tried) {
  auto note = [&](const std::string& place, const std::string& why) {
    if (tried) tried->push_back(str(place, " (", why, ")"));
  };
  if (!search.data_dir.empty()) {
    return GlueSource{GlueSource::Kind::tsv, search.data_dir, "--data_dir"};
  }

  // The hub cache: what run_glue.py's load_dataset("glue", task) reads.
  const std::string cache = search.hub_cache.empty() ? hf_hub_cache_dir() : search.hub_cache;
  if (!search.revision.empty()) {
    const std::pair<const char*, const char*> repos[] = {
        {"datasets--nyu-mll--glue", "nyu-mll/glue"}, {"datasets--glue", "glue"}};
    for (const auto& [folder, repo] : repos) {
      const std::string repo_dir = cache + "/" + folder;
      std::string why;
      const std::string snapshot = snapshot_of(repo_dir, search.revision, why);
      if (snapshot.empty()) {
        note(repo_dir, why);
        continue;
      }
      if (!is_dir(snapshot + "/" + task.name)) {
        note(snapshot + "/" + task.name, "not there");
        continue;
      }
      if (!glue_parquet::supported()) {
        note(snapshot + "/" + task.name,
             "parquet, but this build has no Apache Arrow: scripts/fetch_arrow.sh, then rebuild");
        continue;
      }
      return GlueSource{GlueSource::Kind::hub_parquet, snapshot,
                        str("Hugging Face hub cache, ", repo, " at ", search.revision)};
    }
  }

  // TSV folders in download_glue_data.py's layout.
  auto tsv = [&](const std::string& dir, const std::string& origin) -> std::optional<GlueSource> {
    if (dir.empty()) return std::nullopt;
    const std::string folder = dir + "/" + task.folder;
    if (is_dir(folder)) return GlueSource{GlueSource::Kind::tsv, dir, origin};
    note(folder, "not there");
    return std::nullopt;
  };
  if (auto s = tsv(env("GLUE_DIR"), "GLUE_DIR")) return s;
  if (env("GLUE_DIR").empty() && tried) tried->push_back("$GLUE_DIR (not set)");
  if (auto s = tsv(search.repo_data_dir, "the repository's data/glue")) return s;
  return std::nullopt;
}

GlueSource find_glue_data(const GlueTask& task, const GlueSearch& search) {
  std::vector<std::string> tried;
  if (auto source = locate_glue_data(task, search, &tried)) return *source;
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : "; ") + t;
  throw Error(str("no data for task ", task.name,
                  " (give --data_dir, or download it with "
                  "datasets.load_dataset(\"nyu-mll/glue\", \"",
                  task.name, "\")); tried: ", list));
}

std::string hub_split_name(const GlueTask& task, Split split, const std::string& variant) {
  const std::string v = split_variant(task, split, variant);
  std::string name = split == Split::train ? "train" : split == Split::dev ? "validation" : "test";
  if (!v.empty()) name += "_" + v;
  return name;
}

std::vector<std::string> glue_parquet_files(const GlueTask& task, const std::string& snapshot_dir,
                                            Split split, const std::string& variant) {
  const std::string split_hub = hub_split_name(task, split, variant);
  const std::string folder = snapshot_dir + "/" + task.name;
  // <split>-<i>-of-<n>.parquet, as nyu-mll/glue's main branch has them.
  std::map<long, std::string> shards;
  long count = -1;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    long i = 0, n = 0;
    if (!shard_name(it->path().filename().string(), split_hub, i, n)) continue;
    shards[i] = it->path().string();
    count = std::max(count, n);
  }
  std::vector<std::string> files;
  if (!shards.empty()) {
    for (long i = 0; i < count; ++i) {
      const auto s = shards.find(i);
      if (s == shards.end()) {
        throw Error(str(folder, "/", split_hub, ": shard ", i, " of ", count, " is missing"));
      }
      files.push_back(s->second);
    }
    return files;
  }
  // <split>/NNNN.parquet (the refs/convert/parquet branch).
  for (fs::directory_iterator it(folder + "/" + split_hub, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() == ".parquet") files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    throw Error(str(folder, ": no ", split_hub, "-*-of-*.parquet (task ", task.name, " ",
                    split_name(split), variant.empty() ? "" : " ", variant,
                    " split in the hub cache)"));
  }
  return files;
}

bool glue_parquet_supported() {
  return glue_parquet::supported();
}

Dataset read_glue_parquet_split(const GlueTask& task, const std::string& snapshot_dir, Split split,
                                const std::string& variant) {
  glue_parquet::Columns columns = hub_columns(task);
  columns.test_split = split == Split::test;
  const std::string v = split_variant(task, split, variant);
  const std::vector<std::string> files = glue_parquet_files(task, snapshot_dir, split, variant);
  Dataset data;
  data.name = str(task.name, " ", split_name(split));
  if (!v.empty()) data.name += " " + v;
  data.path = files.size() == 1 ? files[0]
                                : str(snapshot_dir, "/", task.name, "/",
                                      hub_split_name(task, split, variant), "-*.parquet");
  int64_t row = 0;
  for (const std::string& file : files) glue_parquet::append_file(file, task, columns, data, row);
  if (data.examples.empty()) throw Error(str(data.path, ": no examples"));
  return data;
}

Dataset read_glue_split(const GlueTask& task, const GlueSource& source, Split split,
                        const std::string& variant) {
  if (source.kind == GlueSource::Kind::hub_parquet) {
    return read_glue_parquet_split(task, source.dir, split, variant);
  }
  return read_glue_split(task, source.dir, split, variant);
}

}  // namespace cpuft
