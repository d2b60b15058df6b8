#include "data/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "core/check.h"
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

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a directory");
  if (UnigramTokenizer::handles_folder(dir))  // SentencePiece Unigram (XLM-R)
    return std::make_unique<UnigramTokenizer>(UnigramTokenizer::from_folder(dir));
  if (fs::exists(root / "vocab.txt") || fs::exists(root / "tokenizer.json"))
    return std::make_unique<WordPieceTokenizer>(WordPieceTokenizer::from_folder(dir));
  throw Error(str(dir, ": no tokenizer found (looked for tokenizer.json and vocab.txt)"));
}

}  // namespace cpuft
