// open_weight_files: a real sharded checkpoint written by transformers' save_pretrained
// (tests/fixtures/sharded_tiny, tools/make_sharded_fixture.py), every malformed index, files that
// are not regular, and folders without safetensors.
#include "io/weight_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/check.h"
#include "test_paths.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kIndex = "model.safetensors.index.json";

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no cpuft::Error thrown>";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

fs::path fixture() {
  return cpuft::testing::fixture_path("sharded_tiny");
}

// A copy of the sharded fixture in a fresh temporary folder, removed at scope exit.
struct Copy {
  fs::path dir;
  explicit Copy(bool copy_files = true) {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("cpuft_weights_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir);
    fs::create_directories(dir);
    if (copy_files) {
      for (const auto& e : fs::directory_iterator(fixture())) {
        fs::copy_file(e.path(), dir / e.path().filename());
      }
    }
  }
  ~Copy() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  json index() const { return json::parse(read_text(dir / kIndex)); }
  void set_index(const json& j) const { write_text(dir / kIndex, j.dump()); }
  std::string open_error() const {
    return message_of([&] { open_weight_files(dir.string()); });
  }
  std::string index_path() const { return (dir / kIndex).string(); }
};

constexpr const char* kShard1 = "model-00001-of-00004.safetensors";
constexpr const char* kShard2 = "model-00002-of-00004.safetensors";
constexpr const char* kTensor = "bert.embeddings.LayerNorm.bias";  // in shard 1

TEST(WeightFiles, ShardedCheckpointOfTransformers) {
  const std::vector<SafetensorsFile> files = open_weight_files(fixture().string());
  ASSERT_EQ(files.size(), 4u);
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(fs::path(files[i].label()).filename(),
              "model-0000" + std::to_string(i + 1) + "-of-00004.safetensors");
  }
  // Every tensor of the model, once, with the values save_pretrained wrote.
  const json want = json::parse(read_text(fixture() / "tensors.json"))["tensors"];
  std::set<std::string> seen;
  for (const SafetensorsFile& f : files) {
    for (const TensorInfo& t : f.tensors()) {
      ASSERT_TRUE(seen.insert(t.name).second) << t.name;
      ASSERT_TRUE(want.contains(t.name)) << t.name;
      const json& w = want[t.name];
      EXPECT_EQ(dtype_name(t.dtype), w["dtype"].get<std::string>()) << t.name;
      EXPECT_EQ(t.shape, w["shape"].get<std::vector<int64_t>>()) << t.name;
      const std::vector<float> v = f.read_f32(t.name);
      double sum = 0, sum_sq = 0;
      for (const float x : v) {
        sum += x;
        sum_sq += static_cast<double>(x) * x;
      }
      // Same floats, summed in another order: equal to ~1e-12 of the magnitude.
      const double scale = 1e-12 * (1 + w["sum_sq"].get<double>()) * static_cast<double>(v.size());
      EXPECT_NEAR(sum, w["sum"].get<double>(), scale + 1e-12) << t.name;
      EXPECT_NEAR(sum_sq, w["sum_sq"].get<double>(), scale + 1e-12) << t.name;
    }
  }
  EXPECT_EQ(seen.size(), want.size());
  EXPECT_EQ(seen.size(), 41u);
}

TEST(WeightFiles, SingleFileWinsOverAnIndex) {
  Copy c;
  // A broken index beside model.safetensors is not read (transformers does the same).
  write_text(c.dir / kIndex, "not json");
  fs::copy_file(c.dir / kShard1, c.dir / "model.safetensors");
  const std::vector<SafetensorsFile> files = open_weight_files(c.dir.string());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(fs::path(files[0].label()).filename(), "model.safetensors");
}

TEST(WeightFiles, ShardsTheMapDoesNotNameAreIgnored) {
  Copy c;
  write_text(c.dir / "model-00009-of-00009.safetensors", "garbage");
  EXPECT_EQ(open_weight_files(c.dir.string()).size(), 4u);
}

TEST(WeightFiles, MalformedIndexGivesOneLine) {
  struct Case {
    const char* what;
    std::function<void(const Copy&)> edit;
    std::function<std::string(const Copy&)> message;
  };
  auto index_says = [](std::string text) {
    return [text](const Copy& c) { return c.index_path() + ": " + text; };
  };
  auto edit_index = [](std::function<void(json&)> f) {
    return [f](const Copy& c) {
      json j = c.index();
      f(j);
      c.set_index(j);
    };
  };
  const std::vector<Case> cases = {
      {"not JSON", [](const Copy& c) { write_text(c.dir / kIndex, "{\"weight_map\": {"); },
       index_says("not valid JSON")},
      {"an array", edit_index([](json& j) { j = json::array(); }),
       index_says("expected a JSON object")},
      {"no weight_map", edit_index([](json& j) { j.erase("weight_map"); }),
       index_says("'weight_map' is missing")},
      {"weight_map a list", edit_index([](json& j) { j["weight_map"] = json::array({"a"}); }),
       index_says("'weight_map' must be an object mapping tensor names to shard file names")},
      {"weight_map empty", edit_index([](json& j) { j["weight_map"] = json::object(); }),
       index_says("'weight_map' is empty")},
      {"metadata a string", edit_index([](json& j) { j["metadata"] = "x"; }),
       index_says("'metadata' must be an object")},
      {"a shard name not a string", edit_index([](json& j) { j["weight_map"][kTensor] = 1; }),
       index_says("'weight_map' entry of tensor 'bert.embeddings.LayerNorm.bias' must be a shard "
                  "file name, not a JSON number")},
      {"a tensor named twice",
       [](const Copy& c) {
         std::string text = read_text(c.dir / kIndex);
         const std::string entry = "\"bert.embeddings.LayerNorm.bias\": ";
         text.insert(text.find(entry), entry + "\"" + kShard2 + "\",\n    ");
         write_text(c.dir / kIndex, text);
       },
       index_says("key 'bert.embeddings.LayerNorm.bias' appears twice in one object")},
      {"an absolute shard path",
       edit_index([](json& j) { j["weight_map"][kTensor] = "/etc/passwd"; }),
       [](const Copy& c) {
         return c.index_path() +
                ": 'weight_map' shard name '/etc/passwd' is an absolute path; "
                "shards must be inside " +
                c.dir.string();
       }},
      {"a shard path leaving the folder",
       edit_index([](json& j) { j["weight_map"][kTensor] = "sub/../../x.safetensors"; }),
       [](const Copy& c) {
         return c.index_path() +
                ": 'weight_map' shard name 'sub/../../x.safetensors' leaves the folder (\"..\"); "
                "shards must be inside " +
                c.dir.string();
       }},
      {"an empty shard name", edit_index([](json& j) { j["weight_map"][kTensor] = ""; }),
       index_says("'weight_map' puts tensor 'bert.embeddings.LayerNorm.bias' in a shard with an "
                  "empty name")},
      {"a missing shard", [](const Copy& c) { fs::remove(c.dir / kShard2); },
       [](const Copy& c) {
         return (c.dir / kShard2).string() +
                ": shard named in model.safetensors.index.json, does not exist";
       }},
      {"a shard that is a directory",
       [](const Copy& c) {
         fs::remove(c.dir / kShard2);
         fs::create_directory(c.dir / kShard2);
       },
       [](const Copy& c) {
         return (c.dir / kShard2).string() +
                ": shard named in model.safetensors.index.json, not a regular file (a "
                "directory)";
       }},
      {"a shard that is a FIFO",
       [](const Copy& c) {
         fs::remove(c.dir / kShard2);
         ASSERT_EQ(::mkfifo((c.dir / kShard2).c_str(), 0600), 0);
       },
       [](const Copy& c) {
         return (c.dir / kShard2).string() +
                ": shard named in model.safetensors.index.json, not a regular file (a FIFO)";
       }},
      {"a tensor in the wrong shard",
       edit_index([](json& j) { j["weight_map"][kTensor] = kShard2; }),
       index_says("'weight_map' puts tensor 'bert.embeddings.LayerNorm.bias' in "
                  "'model-00002-of-00004.safetensors', but it is in "
                  "'model-00001-of-00004.safetensors'")},
      {"a tensor no shard holds",
       edit_index([](json& j) { j["weight_map"]["bert.pooler.extra"] = kShard1; }),
       index_says("'weight_map' puts tensor 'bert.pooler.extra' in "
                  "'model-00001-of-00004.safetensors', but no shard holds it")},
      {"a tensor the map does not list",
       edit_index([](json& j) { j["weight_map"].erase(kTensor); }),
       index_says("shard 'model-00001-of-00004.safetensors' holds tensor "
                  "'bert.embeddings.LayerNorm.bias', which 'weight_map' does not list")},
      {"a tensor in two shards",
       [](const Copy& c) {
         // A second shard with the same tensors as shard 1; the map sends one tensor there.
         fs::copy_file(c.dir / kShard1, c.dir / "model-extra.safetensors");
         json j = c.index();
         j["weight_map"][kTensor] = "model-extra.safetensors";
         c.set_index(j);
       },
       index_says("tensor 'bert.embeddings.LayerNorm.bias' is in two shards, "
                  "'model-00001-of-00004.safetensors' and 'model-extra.safetensors'")},
      {"a shard that is not safetensors",
       [](const Copy& c) { write_text(c.dir / kShard2, "tiny"); },
       [](const Copy& c) {
         return (c.dir / kShard2).string() +
                ": file is 4 bytes, shorter than the 8-byte header length (not a safetensors "
                "file)";
       }},
      {"an index that is a FIFO",
       [](const Copy& c) {
         fs::remove(c.dir / kIndex);
         ASSERT_EQ(::mkfifo((c.dir / kIndex).c_str(), 0600), 0);
       },
       index_says("not a regular file (a FIFO)")},
  };
  for (const Case& k : cases) {
    Copy c;
    k.edit(c);
    EXPECT_EQ(c.open_error(), k.message(c)) << k.what;
  }
}

TEST(WeightFiles, RefusesWeightsThatAreNotRegularFiles) {
  Copy c(false);
  const fs::path w = c.dir / "model.safetensors";
  ASSERT_EQ(::mkfifo(w.c_str(), 0600), 0);  // opening it for reading would block
  EXPECT_EQ(c.open_error(), w.string() + ": not a regular file (a FIFO)");
  EXPECT_EQ(message_of([&] { SafetensorsFile::open(w.string()); }),
            w.string() + ": not a regular file (a FIFO)");
  fs::remove(w);
  fs::create_symlink("/dev/zero", w);  // never ends
  EXPECT_EQ(c.open_error(), w.string() + ": not a regular file (a device)");
  EXPECT_EQ(message_of([&] { SafetensorsFile::open(w.string()); }),
            w.string() + ": not a regular file (a device)");
  fs::remove(w);
  fs::create_directory(w);
  EXPECT_EQ(c.open_error(), w.string() + ": not a regular file (a directory)");
  EXPECT_EQ(message_of([&] { SafetensorsFile::open(w.string()); }),
            w.string() + ": not a regular file (a directory)");
  fs::remove(w);
  fs::create_symlink(c.dir / "nowhere", w);
  EXPECT_EQ(c.open_error(), w.string() + ": does not exist (dangling symbolic link)");
}

TEST(WeightFiles, NoSafetensorsSaysWhatToDo) {
  Copy c(false);
  EXPECT_EQ(
      c.open_error(),
      c.dir.string() +
          ": no weights found (looked for model.safetensors, model.safetensors.index.json, "
          "pytorch_model.bin, pytorch_model.bin.index.json, tf_model.h5, flax_model.msgpack)");
  write_text(c.dir / "tf_model.h5", "x");
  EXPECT_EQ(c.open_error(),
            c.dir.string() +
                ": the weights are tf_model.h5, which cpuft does not read and transformers 5 no "
                "longer converts; with transformers 4.x, from_pretrained(dir, from_tf=True)"
                ".save_pretrained(dir) writes model.safetensors");
  write_text(c.dir / "pytorch_model.bin", "x");
  const std::string bin = c.open_error();
  EXPECT_EQ(bin, c.dir.string() +
                     ": the weights are pytorch_model.bin (a PyTorch pickle) and cpuft never loads "
                     "pickles; convert them to model.safetensors once with transformers: python -c "
                     "\"import sys, transformers as t; d = sys.argv[1]; getattr(t, "
                     "(t.AutoConfig.from_pretrained(d).architectures or ['AutoModel'])[0])"
                     ".from_pretrained(d).save_pretrained(d)\" '" +
                     c.dir.string() + "'");
  EXPECT_EQ(bin.find('\n'), std::string::npos);
  EXPECT_EQ(pickle_conversion_command("/a b/it's"),
            "python -c \"import sys, transformers as t; d = sys.argv[1]; getattr(t, "
            "(t.AutoConfig.from_pretrained(d).architectures or ['AutoModel'])[0])"
            ".from_pretrained(d).save_pretrained(d)\" '/a b/it'\\''s'");
  EXPECT_EQ(message_of([] { open_weight_files("/nonexistent/cpuft"); }),
            "/nonexistent/cpuft: not a directory");
}

}  // namespace
}  // namespace cpuft
