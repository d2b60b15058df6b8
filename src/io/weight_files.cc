#include "io/weight_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/check.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";
// An index lists names only; hub indexes of the largest models are a few MB.
constexpr uintmax_t kMaxIndexBytes = uintmax_t{64} << 20;

// Text from a file, safe for a one-line message: control characters escaped, long text cut.
std::string shown(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < 120; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > 120) out += "...";
  return out + "'";
}

bool present(const fs::path& p) {  // as a file, a directory, a link (even dangling), ...
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

// Refuses anything but a regular file (after symlinks) before it is opened: opening a FIFO
// blocks, a device never ends, a directory is no file.
void require_regular(const fs::path& p, const std::string& what = "") {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  CPUFT_REQUIRE(fs::exists(st), p.string(), ": ", what, "does not exist",
                fs::is_symlink(fs::symlink_status(p, ec)) ? " (dangling symbolic link)" : "");
  CPUFT_REQUIRE(fs::is_regular_file(st), p.string(), ": ", what, "not a regular file",
                fs::is_directory(st)                                 ? " (a directory)"
                : fs::is_fifo(st)                                    ? " (a FIFO)"
                : fs::is_character_file(st) || fs::is_block_file(st) ? " (a device)"
                                                                     : "");
}

// Single-quoted for a POSIX shell.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Parses the index, refusing duplicate keys (Python's json keeps the last silently; a tensor named
// twice in weight_map is a tensor in two shards).
json parse_index(const std::string& text, const std::string& where) {
  std::vector<std::set<std::string>> open_objects;
  json::parser_callback_t callback = [&](int /*depth*/, json::parse_event_t event,
                                         json& parsed) -> bool {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) {
        throw Error(str(where, ": key ", shown(key), " appears twice in one object"));
      }
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text, callback, /*allow_exceptions=*/true);
  } catch (const json::exception&) {
    throw Error(str(where, ": not valid JSON"));
  }
  return j;
}

std::vector<SafetensorsFile> open_shards(const fs::path& root) {
  const fs::path index_path = root / kIndex;
  const std::string where = index_path.string();
  require_regular(index_path);
  std::error_code ec;
  const uintmax_t size = fs::file_size(index_path, ec);
  CPUFT_REQUIRE(!ec, where, ": cannot read its size: ", ec.message());
  CPUFT_REQUIRE(size <= kMaxIndexBytes, where, ": ", size, " bytes, more than an index can be (",
                kMaxIndexBytes, ")");
  std::ifstream in(index_path, std::ios::binary);
  CPUFT_REQUIRE(in, where, ": cannot open");
  std::ostringstream buf;
  buf << in.rdbuf();
  CPUFT_REQUIRE(!in.bad(), where, ": read error");
  const json index = parse_index(buf.str(), where);
  CPUFT_REQUIRE(index.is_object(), where, ": expected a JSON object");
  const auto wm = index.find("weight_map");
  CPUFT_REQUIRE(wm != index.end(), where, ": 'weight_map' is missing");
  CPUFT_REQUIRE(wm->is_object(), where,
                ": 'weight_map' must be an object mapping tensor names to shard file names");
  CPUFT_REQUIRE(!wm->empty(), where, ": 'weight_map' is empty");
  if (const auto md = index.find("metadata"); md != index.end()) {
    CPUFT_REQUIRE(md->is_object() || md->is_null(), where, ": 'metadata' must be an object");
  }

  // Shard names: relative paths that stay inside the folder.
  std::map<std::string, std::vector<std::string>>
      tensors_of;  // shard -> tensors the map puts there
  for (const auto& [tensor, shard] : wm->items()) {
    CPUFT_REQUIRE(shard.is_string(), where, ": 'weight_map' entry of tensor ", shown(tensor),
                  " must be a shard file name, not a JSON ", shard.type_name());
    const std::string name = shard.get<std::string>();
    if (tensors_of.contains(name)) {
      tensors_of[name].push_back(tensor);
      continue;
    }
    const fs::path rel(name);
    CPUFT_REQUIRE(!name.empty(), where, ": 'weight_map' puts tensor ", shown(tensor),
                  " in a shard with an empty name");
    CPUFT_REQUIRE(std::none_of(name.begin(), name.end(),
                               [](char c) { return static_cast<unsigned char>(c) < 0x20; }),
                  where, ": 'weight_map' shard name ", shown(name), " holds control characters");
    CPUFT_REQUIRE(!rel.is_absolute(), where, ": 'weight_map' shard name ", shown(name),
                  " is an absolute path; shards must be inside ", root.string());
    for (const fs::path& part : rel) {
      CPUFT_REQUIRE(part != "..", where, ": 'weight_map' shard name ", shown(name),
                    " leaves the folder (\"..\"); shards must be inside ", root.string());
    }
    tensors_of[name].push_back(tensor);
  }
  // Every shard a regular file; read them (sorted by name, as transformers does).
  std::vector<SafetensorsFile> files;
  std::map<std::string, std::string> shard_of;  // tensor -> the shard that holds it
  for (const auto& [name, listed] : tensors_of) {
    const fs::path path = root / name;
    require_regular(path, str("shard named in ", kIndex, ", "));
    files.push_back(SafetensorsFile::open(path.string()));
    for (const TensorInfo& t : files.back().tensors()) {
      const auto [it, inserted] = shard_of.emplace(t.name, name);
      CPUFT_REQUIRE(inserted, where, ": tensor ", shown(t.name), " is in two shards, ",
                    shown(it->second), " and ", shown(name));
    }
  }
  // The map and the shards agree, both ways.
  for (const auto& [name, listed] : tensors_of) {
    for (const std::string& tensor : listed) {
      const auto it = shard_of.find(tensor);
      CPUFT_REQUIRE(it != shard_of.end(), where, ": 'weight_map' puts tensor ", shown(tensor),
                    " in ", shown(name), ", but no shard holds it");
      CPUFT_REQUIRE(it->second == name, where, ": 'weight_map' puts tensor ", shown(tensor), " in ",
                    shown(name), ", but it is in ", shown(it->second));
    }
  }
  for (const auto& [tensor, shard] : shard_of) {
    CPUFT_REQUIRE(wm->contains(tensor), where, ": shard ", shown(shard), " holds tensor ",
                  shown(tensor), ", which 'weight_map' does not list");
  }
  return files;
}

}  // namespace

std::string pickle_conversion_command(const std::string& model_dir) {
  return "python -c \"import sys, transformers as t; d = sys.argv[1]; getattr(t, "
         "(t.AutoConfig.from_pretrained(d).architectures or ['AutoModel'])[0])"
         ".from_pretrained(d).save_pretrained(d)\" " +
         shell_quote(model_dir);
}

std::vector<SafetensorsFile> open_weight_files(const std::string& model_dir) {
  const fs::path root(model_dir);
  std::error_code ec;
  CPUFT_REQUIRE(fs::is_directory(root, ec), model_dir, ": not a directory");
  if (present(root / kSingle)) {
    require_regular(root / kSingle);
    std::vector<SafetensorsFile> files;
    files.push_back(SafetensorsFile::open((root / kSingle).string()));
    return files;
  }
  if (present(root / kIndex)) return open_shards(root);
  for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
    if (!present(root / pickle)) continue;
    throw Error(str(model_dir, ": the weights are ", pickle,
                    " (a PyTorch pickle) and cpuft never loads pickles; convert them to "
                    "model.safetensors once with transformers: ",
                    pickle_conversion_command(model_dir)));
  }
  for (const char* other : {"tf_model.h5", "flax_model.msgpack"}) {
    if (!present(root / other)) continue;
    throw Error(str(model_dir, ": the weights are ", other,
                    ", which cpuft does not read and transformers 5 no longer converts; with "
                    "transformers 4.x, from_pretrained(dir, from_",
                    other[0] == 't' ? "tf" : "flax",
                    "=True).save_pretrained(dir) writes model.safetensors"));
  }
  throw Error(str(model_dir, ": no weights found (looked for ", kSingle, ", ", kIndex,
                  ", pytorch_model.bin, pytorch_model.bin.index.json, tf_model.h5, "
                  "flax_model.msgpack)"));
}

}  // namespace cpuft
