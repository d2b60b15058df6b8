// Model names as transformers resolves them offline (HF_HUB_OFFLINE=1): a folder is used as it
// is; any other name ("bert-base-cased", "google-bert/bert-base-cased") is looked up in the
// Hugging Face hub cache that huggingface_hub fills:
//   <cache>/models--<org>--<name>/refs/<revision>   -> a commit hash
//   <cache>/models--<org>--<name>/snapshots/<commit>/config.json, model.safetensors, ...
// with <cache> = --cache_dir, else $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; <revision> a branch or tag
// (refs/<revision>) or a commit hash (snapshots/<commit>).
#pragma once

#include <string>
#include <vector>

namespace cpuft {

struct ResolvedModel {
  std::string folder;  // the folder to read
  std::string note;    // one line when a hub name was resolved (where it was found), else ""
};

// Resolves `name_or_path`; `what` names the flag in messages ("--model_name_or_path"). Not found:
// an Error in one line naming the places looked in and how to put the model there.
ResolvedModel resolve_model_folder(const std::string& name_or_path, const std::string& revision,
                                   const std::string& cache_dir, const std::string& what);

// The hub cache roots in the order searched (one unless --cache_dir is given: then only it).
std::vector<std::string> hub_cache_roots(const std::string& cache_dir);

}  // namespace cpuft
