#include "io/hub_cache.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/check.h"

namespace fs = std::filesystem;

namespace cpuft {

namespace {

// A hub repository id: "name" or "org/name", of letters, digits, '-', '_', '.'.
bool is_repo_id(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.back() == '/' ||
      name.find("..") != std::string::npos)
    return false;
  int slashes = 0;
  for (char c : name) {
    if (c == '/') {
      ++slashes;
    } else if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return slashes <= 1;
}

std::string repo_folder_name(const std::string& repo_id) {
  std::string folder = "models--";
  for (char c : repo_id) folder += c == '/' ? std::string("--") : std::string(1, c);
  return folder;
}

// The snapshot of `revision` in a repository folder, or "" when absent.
fs::path snapshot_of(const fs::path& repo, const std::string& revision) {
  std::error_code error;
  std::string commit = revision;
  std::ifstream ref(repo / "refs" / revision);
  if (ref.good()) std::getline(ref, commit);
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!commit.empty() && fs::is_regular_file(snapshot / "config.json", error)) return snapshot;
  return {};
}

}  // namespace

ResolvedModel resolve_model_folder(const std::string& name_or_path, const std::string& revision,
                                   const std::string& cache_root, const std::string& what) {
  std::error_code error;
  if (fs::is_directory(name_or_path, error)) return {name_or_path, ""};
  CPUFT_REQUIRE(is_repo_id(name_or_path), what, " ", name_or_path,
                ": no such folder (a Hugging Face model folder, or a hub name such as "
                "google-bert/bert-base-cased found in the hub cache)");
  const std::string rev = revision.empty() ? "main" : revision;
  const fs::path repo = fs::path(cache_root) / repo_folder_name(name_or_path);
  if (const fs::path snapshot = snapshot_of(repo, rev); !snapshot.empty())
    return {snapshot.string(), str(what, " ", name_or_path, ": ", snapshot.string())};
  // The hub renamed the old names without an organisation ("bert-base-cased" is now
  // "google-bert/bert-base-cased"); a cache filled under the new name serves the old one.
  if (name_or_path.find('/') == std::string::npos && fs::is_directory(cache_root, error)) {
    std::vector<fs::path> renamed;
    for (const auto& entry : fs::directory_iterator(cache_root, error)) {
      const std::string folder = entry.path().filename().string();
      if (folder.starts_with("models--") && folder.ends_with("--" + name_or_path) &&
          folder != repo_folder_name(name_or_path))
        renamed.push_back(entry.path());
    }
    if (renamed.size() == 1)
      if (const fs::path snapshot = snapshot_of(renamed[0], rev); !snapshot.empty())
        return {snapshot.string(), str(what, " ", name_or_path, ": ", snapshot.string())};
  }
  throw Error(str(what, " ", name_or_path, ": not a folder, and revision '", rev,
                  "' is not in the Hugging Face cache (looked in ", repo.string(),
                  "); on a machine with network run `huggingface-cli download ", name_or_path,
                  "` and copy the cache here (or set HF_HUB_CACHE / --cache_dir), or give the "
                  "model's folder"));
}

}  // namespace cpuft
