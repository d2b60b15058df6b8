#include "data/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "core/check.h"
#include "data/byte_level_bpe_tokenizer.h"
#include "data/unigram_tokenizer.h"
#include "data/wordpiece_tokenizer.h"

namespace cpuft {

namespace fs = std::filesystem;

void truncate_longest_first(std::vector<int32_t>& a, std::vector<int32_t>* b, size_t budget) {
  if (b == nullptr) {
    if (a.size() > budget) a.resize(budget);
    return;
  }
  if (a.size() + b->size() <= budget) return;
  const bool a_shorter = a.size() <= b->size();
  size_t n_short = a_shorter ? a.size() : b->size();
  size_t n_long = n_short > budget ? n_short : std::max(n_short, budget - n_short);
  if (n_short + n_long > budget) {
    n_short = budget / 2;
    n_long = n_short + budget % 2;
  }
  a.resize(std::min(a.size(), a_shorter ? n_short : n_long));
  b->resize(std::min(b->size(), a_shorter ? n_long : n_short));
}

namespace {

// Byte-level BPE (RoBERTa): tokenizer.json whose model.type is "BPE", else vocab.json + merges.txt
// without vocab.txt. Any other tokenizer.json model type that no family handles gets one line; a
// tokenizer.json that cannot be read is left to WordPiece when vocab.txt is there (as before).
std::unique_ptr<Tokenizer> load_byte_level_bpe(const fs::path& root) {
  const fs::path tj = root / "tokenizer.json";
  if (fs::exists(tj)) {
    std::string type;
    try {
      type = tokenizer_json_model_type(tj.string());
    } catch (const Error&) {
      if (fs::exists(root / "vocab.txt")) return nullptr;
      throw;
    }
    if (type == "BPE")
      return std::make_unique<ByteLevelBpeTokenizer>(
          ByteLevelBpeTokenizer::from_folder(root.string()));
    CPUFT_REQUIRE(type == "WordPiece", tj.string(), ": 'model.type' \"", type,
                  "\" is not supported (cpuft handles WordPiece and BPE)");
    return nullptr;
  }
  if (fs::exists(root / "vocab.json") && fs::exists(root / "merges.txt") &&
      !fs::exists(root / "vocab.txt"))
    return std::make_unique<ByteLevelBpeTokenizer>(
        ByteLevelBpeTokenizer::from_folder(root.string()));
  return nullptr;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a directory");
  // SentencePiece Unigram: XLM-R (sentencepiece.bpe.model), DeBERTa-v2/v3 (spm.model), or a
  // Unigram tokenizer.json; the tokenizer class in the folder's configs picks the pipeline.
  if (UnigramTokenizer::handles_folder(dir))
    return std::make_unique<UnigramTokenizer>(UnigramTokenizer::from_folder(dir));
  if (auto bpe = load_byte_level_bpe(root)) return bpe;
  if (fs::exists(root / "vocab.txt") || fs::exists(root / "tokenizer.json"))
    return std::make_unique<WordPieceTokenizer>(WordPieceTokenizer::from_folder(dir));
  throw Error(str(dir,
                  ": no tokenizer found (looked for tokenizer.json, vocab.txt, vocab.json + "
                  "merges.txt, sentencepiece.bpe.model, spm.model)"));
}

}  // namespace cpuft
