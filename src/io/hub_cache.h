// Model names as transformers resolves them offline (HF_HUB_OFFLINE=1): a folder is used as it
// is; any other name ("bert-base-cased", "google-bert/bert-base-cased") is looked up in the
// Hugging Face hub cache that huggingface_hub fills:
//   <cache>/models--<org>--<name>/refs/<revision>   -> a commit hash
//   <cache>/models--<org>--<name>/snapshots/<commit>/config.json, model.safetensors, ...
// <cache> is given by the caller (--cache_dir, else data/glue_source.h's hf_hub_cache_dir(): the
// one place that reads HF_HUB_CACHE, HF_HOME, ...); <revision> a branch or tag
// (refs/<revision>) or a commit hash (snapshots/<commit>).
#pragma once

#include <string>

namespace cpuft {

struct ResolvedModel {
  std::string folder;  // the folder to read
  std::string note;    // one line when a hub name was resolved (where it was found), else ""
};

// Resolves `name_or_path`; `what` names the flag in messages ("--model_name_or_path"). Not found:
// an Error in one line naming the places looked in and how to put the model there.
ResolvedModel resolve_model_folder(const std::string& name_or_path, const std::string& revision,
                                   const std::string& cache_root, const std::string& what);

}  // namespace cpuft
