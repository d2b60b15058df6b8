// Writes a tiny Hugging Face model folder for the command-line tests:
//   make_tiny_model OUT_DIR [--family F] [--no-head] [--no-dropout] [--labels K] [--vocab_size V]
// config.json and model.safetensors come from the committed golden fixture (a 2-layer, hidden-32
// BERT with its weights); vocab.txt holds the special tokens and a small English word list, so
// sentences built from those words tokenize to in-vocabulary ids. --no-head leaves out the
// classifier (as a pretrained BertModel checkpoint has none); --labels K writes a K-label
// head. --family distilbert|roberta|xlm_roberta|electra|modernbert|deberta takes that family's
// golden fixture instead (golden_tiny_<F>_cls; --fixture FILE names another of that family's,
// e.g. golden_tiny_deberta_separate.safetensors); --vocab_size V grows the word table to V rows
// (small random rows), for a tokenizer with more tokens than the fixture's 99; --tokenizer DIR
// copies DIR's files instead of writing the WordPiece vocab.txt.
#include <cmath>
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
                  "usage: make_tiny_model OUT_DIR [--family F] [--no-head] [--no-dropout] "
                  "[--labels K] [--vocab_size V] [--tokenizer DIR] [--fixture FILE]");
    const fs::path out(argv[1]);
    bool head = true;
    double dropout = 0.1;
    int labels = 3;
    std::string family, tokenizer_dir, fixture_name;
    int64_t vocab_size = 0;
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--no-head")
        head = false;
      else if (arg == "--no-dropout")
        dropout = 0.0;
      else if (arg == "--labels" && i + 1 < argc)
        labels = std::stoi(argv[++i]);
      else if (arg == "--family" && i + 1 < argc)
        family = argv[++i];
      else if (arg == "--tokenizer" && i + 1 < argc)
        tokenizer_dir = argv[++i];
      else if (arg == "--fixture" && i + 1 < argc)
        fixture_name = argv[++i];
      else if (arg == "--vocab_size" && i + 1 < argc)
        vocab_size = std::stoll(argv[++i]);
      else
        throw cpuft::Error("unknown argument " + arg);
    }
    if (fixture_name.empty())
      fixture_name = family.empty() ? "golden_tiny_cls.safetensors"
                                    : "golden_tiny_" + family + "_cls.safetensors";
    const cpuft::SafetensorsFile fixture =
        cpuft::SafetensorsFile::open(cpuft::testing::fixture_path(fixture_name));
    fs::create_directories(out);

    nlohmann::json config = nlohmann::json::parse(fixture.metadata().at("config"));
    config["num_labels"] = labels;
    config.erase("id2label");
    config.erase("label2id");
    config.erase("problem_type");  // a regression fixture's, which a K-label head would contradict
    const bool distilbert = family == "distilbert";
    if (family == "modernbert") {
      for (const char* field :
           {"embedding_dropout", "attention_dropout", "mlp_dropout", "classifier_dropout"})
        config[field] = dropout;
    } else {
      config[distilbert ? "dropout" : "hidden_dropout_prob"] = dropout;
      config[distilbert ? "attention_dropout" : "attention_probs_dropout_prob"] = dropout;
      if (distilbert) config["seq_classif_dropout"] = dropout;
      if (family == "deberta") config["cls_dropout"] = dropout;
    }
    const int64_t fixture_vocab = config["vocab_size"];
    if (vocab_size > fixture_vocab) config["vocab_size"] = vocab_size;
    config["architectures"] = {"BertModel"};
    std::ofstream(out / "config.json") << config.dump(2) << "\n";

    std::vector<std::vector<float>> data;
    std::vector<cpuft::TensorToWrite> tensors;
    for (const cpuft::TensorInfo& t : fixture.tensors()) {
      if (!t.name.starts_with("init.")) continue;
      std::string name = t.name.substr(5);
      // DeBERTa's ContextPooler ("pooler.dense") is part of its head, as pre-trained DeBERTa
      // checkpoints (masked-LM) lack it.
      const bool head_tensor = name.starts_with("classifier.") ||
                               name.starts_with("pre_classifier.") || name.starts_with("pooler.");
      if (head_tensor && !head) continue;
      // The output layer has one row per label: "classifier.{weight,bias}" (BERT, DistilBERT) or
      // "classifier.out_proj.{weight,bias}" (RoBERTa, ELECTRA).
      if (name == "classifier.weight" || name == "classifier.bias" ||
          name.starts_with("classifier.out_proj.")) {
        std::vector<int64_t> shape = t.shape;
        shape[0] = labels;
        int64_t numel = 1;
        for (int64_t d : shape) numel *= d;
        data.emplace_back(static_cast<size_t>(numel), 0.01f);
        tensors.push_back({name, shape, nullptr});
        continue;
      }
      data.push_back(fixture.read_f32(t.name));
      std::vector<int64_t> shape = t.shape;
      if ((name.ends_with("embeddings.word_embeddings.weight") ||
           name.ends_with("embeddings.tok_embeddings.weight")) &&
          vocab_size > shape[0]) {
        // New rows: deterministic values of the config's initializer_range scale (uniform with
        // that standard deviation), like the fixture's own rows.
        const float scale = std::sqrt(3.0f) * config.value("initializer_range", 0.02f);
        const size_t old_size = data.back().size();
        data.back().resize(static_cast<size_t>(vocab_size * shape[1]));
        for (size_t i = old_size; i < data.back().size(); ++i)
          data.back()[i] = scale *
                           static_cast<float>(static_cast<int64_t>(i * 2654435761u % 2001) - 1000) /
                           1000.0f;
        shape[0] = vocab_size;
      }
      tensors.push_back({name, shape, nullptr});
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
    if (!tokenizer_dir.empty()) {
      for (const auto& entry : fs::directory_iterator(tokenizer_dir))
        fs::copy_file(entry.path(), out / entry.path().filename(),
                      fs::copy_options::overwrite_existing);
      return 0;
    }
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
