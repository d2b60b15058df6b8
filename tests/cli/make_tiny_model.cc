// Writes a tiny Hugging Face BERT model folder for the command-line tests:
//   make_tiny_model OUT_DIR [--no-head] [--no-dropout] [--labels K]
// config.json and model.safetensors come from the committed golden fixture (a 2-layer, hidden-32
// BERT with its weights); vocab.txt holds the special tokens and a small English word list, so
// sentences built from those words tokenize to in-vocabulary ids. --no-head leaves out the
// classifier (as a pretrained BertModel checkpoint has none); --labels K writes a K-label
// head.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  try {
    CPUFT_REQUIRE(argc >= 2,
                  "usage: make_tiny_model OUT_DIR [--no-head] [--no-dropout] [--labels K]");
    const fs::path out(argv[1]);
    bool head = true;
    double dropout = 0.1;
    int labels = 3;
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--no-head")
        head = false;
      else if (arg == "--no-dropout")
        dropout = 0.0;
      else if (arg == "--labels" && i + 1 < argc)
        labels = std::stoi(argv[++i]);
      else
        throw cpuft::Error("unknown argument " + arg);
    }
    const cpuft::SafetensorsFile fixture =
        cpuft::SafetensorsFile::open(cpuft::testing::fixture_path("golden_tiny_cls.safetensors"));
    fs::create_directories(out);

    nlohmann::json config = nlohmann::json::parse(fixture.metadata().at("config"));
    config["num_labels"] = labels;
    config.erase("id2label");
    config.erase("label2id");
    config["hidden_dropout_prob"] = dropout;
    config["attention_probs_dropout_prob"] = dropout;
    config["architectures"] = {"BertModel"};
    std::ofstream(out / "config.json") << config.dump(2) << "\n";

    std::vector<std::vector<float>> data;
    std::vector<cpuft::TensorToWrite> tensors;
    for (const cpuft::TensorInfo& t : fixture.tensors()) {
      if (!t.name.starts_with("init.")) continue;
      std::string name = t.name.substr(5);
      if (name.starts_with("classifier.")) {
        if (!head) continue;
        std::vector<int64_t> shape = t.shape;
        shape[0] = labels;
        int64_t numel = 1;
        for (int64_t d : shape) numel *= d;
        data.emplace_back(static_cast<size_t>(numel), 0.01f);
        tensors.push_back({name, shape, nullptr});
        continue;
      }
      data.push_back(fixture.read_f32(t.name));
      tensors.push_back({name, t.shape, nullptr});
    }
    for (size_t i = 0; i < tensors.size(); ++i) tensors[i].data = data[i].data();
    cpuft::write_safetensors((out / "model.safetensors").string(), tensors, {{"format", "pt"}});

    // 99 entries: 5 special tokens, 90 words, 4 word pieces; the config's vocab_size is 99.
    const char* words[] = {
        "the",    "a",      "movie",  "film",   "good",    "bad",     "great",  "awful",  "is",
        "was",    "very",   "not",    "and",    "but",     "it",      "this",   "that",   "of",
        "to",     "in",     "plot",   "acting", "story",   "music",   "fun",    "boring", "long",
        "short",  "funny",  "sad",    "happy",  "dull",    "bright",  "dark",   "cast",   "scene",
        "ending", "start",  "middle", "end",    "i",       "you",     "we",     "they",   "he",
        "she",    "loved",  "hated",  "liked",  "enjoyed", "watched", "saw",    "made",   "said",
        "one",    "two",    "three",  "many",   "few",     "some",    "all",    "no",     "yes",
        "more",   "less",   "best",   "worst",  "better",  "worse",   "nice",   "poor",   "fine",
        "ok",     "so",     "too",    "just",   "really",  "quite",   "rather", "still",  "again",
        "never",  "always", "often",  "seldom", "here",    "there",   "now",    "then",   "today"};
    std::ofstream vocab(out / "vocab.txt");
    for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
      vocab << special << "\n";
    for (const char* w : words) vocab << w << "\n";
    for (const char* piece : {"##s", "##ed", "##ing", "##ly"}) vocab << piece << "\n";
    std::ofstream(out / "tokenizer_config.json")
        << R"({"do_lower_case": true, "tokenizer_class": "BertTokenizer"})"
        << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
