// Tokenizer: what every tokenizer family gives the trainer, and the loader that picks the family
// from a Hugging Face folder.
//
// A family (WordPiece, byte-level BPE for RoBERTa; SentencePiece Unigram for XLM-RoBERTa to come)
// implements tokenize/encode with the ids of Hugging Face's fast tokenizer for the same folder,
// and save() writes files from which transformers' AutoTokenizer gives the same ids again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cpuft {

struct Encoding {
  std::vector<int32_t> input_ids, token_type_ids;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Ids of `text` without special tokens. Throws Error("invalid UTF-8 at byte N") (N counted
  // from 0 in `text`); the caller adds file:line.
  virtual std::vector<int32_t> tokenize(std::string_view text) const = 0;

  // The model input for one text or a pair, special tokens included, as the fast tokenizer's
  // post-processor builds it (BERT: [CLS] a [SEP] b [SEP]; RoBERTa: <s> a </s></s> b </s>).
  // max_length >= 0 truncates as HF's "longest_first" (truncate_longest_first); < 0: no
  // truncation. Throws Error when max_length cannot hold the special tokens.
  virtual Encoding encode(std::string_view a, const std::string_view* b, int max_length) const = 0;

  // One more than the largest id the tokenizer can emit (the model's vocab_size must cover it).
  virtual int64_t vocab_size() const = 0;

  // Writes the tokenizer files into `dir` (created if needed) so that transformers' AutoTokenizer
  // loads them and gives the same ids.
  virtual void save(const std::string& dir) const = 0;

  // One line for the run's log: the family, the files read and what matters of the options,
  // e.g. "WordPiece, vocab.txt, 28996 tokens, cased".
  virtual std::string summary() const = 0;
};

// HF tokenizers' "longest_first" truncation of the tokens of a text (b == nullptr) or a pair to
// `budget` tokens in all (max_length less the special tokens): one text is cut at the end; in a
// pair, the shorter side keeps its length if the longer one can take the rest and still be at
// least as long, otherwise both get half, the odd token going to the longer side (to b when they
// are equally long).
void truncate_longest_first(std::vector<int32_t>& a, std::vector<int32_t>* b, size_t budget);

// Reads the tokenizer of a Hugging Face folder, choosing the family from tokenizer.json's model
// section when the folder has one ("WordPiece", "BPE"), else from the files present (vocab.txt:
// WordPiece; vocab.json + merges.txt: byte-level BPE). Errors name the file and field; a folder
// with no tokenizer the loader knows gets one line listing what it looked for.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

}  // namespace cpuft
