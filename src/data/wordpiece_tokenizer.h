// WordPiece tokenizer that gives the same ids as Hugging Face's BertTokenizerFast
// (tokenizers: BertNormalizer + BertPreTokenizer + WordPiece + BERT's [CLS]/[SEP] template).
//
// Pipeline of tokenize(text), in HF's order:
//   1. special tokens written literally in the text ("[MASK]", "[SEP]", ...) are cut out first and
//      kept whole, as HF's added-token matching does (leftmost, longest match, case-sensitive);
//   2. each remaining piece is normalized: clean_text (drop NUL, U+FFFD and control/format chars;
//      whitespace becomes ' '), spaces around CJK ideographs, strip accents (NFD, then drop
//      nonspacing marks), lowercase (full per-character mapping, e.g. U+0130 -> "i̇");
//   3. pre-tokenized: split on whitespace, every punctuation character its own word;
//   4. each word is split greedily, longest vocabulary match first, continuations prefixed "##";
//      a word with an unmatched rest, or longer than max_input_chars_per_word characters, is
//      one [UNK].
// Character data come from unicode_tables.cc (see tools/make_unicode_tables.py).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/tokenizer.h"

namespace cpuft {

struct TokenizerOptions {
  bool do_lower_case = true;
  std::optional<bool> strip_accents;  // unset: follows do_lower_case (HF semantics)
  bool tokenize_chinese_chars = true;
  int max_input_chars_per_word = 100;
  int model_max_length = 512;  // only carried into tokenizer_config.json by save()
  std::string unk_token = "[UNK]", cls_token = "[CLS]", sep_token = "[SEP]", pad_token = "[PAD]",
              mask_token = "[MASK]";
};

class WordPieceTokenizer final : public Tokenizer {
 public:
  // vocab[i] is the token of id i. If a token appears twice its last id wins (as HF's vocab.txt
  // loader). Throws Error if a special token is not in the vocabulary.
  WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options);

  // Reads a HF model/tokenizer folder: vocab.txt (or, if absent, the WordPiece vocabulary of
  // tokenizer.json) and tokenizer_config.json (do_lower_case, strip_accents,
  // tokenize_chinese_chars, special tokens; a missing file means defaults). Errors name the file.
  static WordPieceTokenizer from_folder(const std::string& dir);

  // Ids of `text` without special tokens. Throws Error("invalid UTF-8 at byte N") (N counted
  // from 0 in `text`); the caller adds file:line.
  std::vector<int32_t> tokenize(std::string_view text) const override;
  std::vector<std::string> tokenize_to_strings(std::string_view text) const;

  // [CLS] a [SEP] (b [SEP]), token_type_ids 0 up to and including the first [SEP], 1 after.
  // max_length >= 0 truncates as HF's "longest_first": the budget left after the special tokens is
  // kept whole by the shorter side when it fits in half, else split in halves with the odd token
  // going to the longer side (to b on a tie). max_length < 0: no truncation. Throws Error when
  // max_length cannot hold the special tokens.
  Encoding encode(std::string_view a, const std::string_view* b, int max_length) const override;

  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t mask_id() const { return mask_id_; }
  // Number of vocabulary entries (lines of vocab.txt).
  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.size()); }
  const std::string& token(int32_t id) const { return vocab_.at(static_cast<size_t>(id)); }
  const TokenizerOptions& options() const { return options_; }

  // Writes vocab.txt, tokenizer_config.json and special_tokens_map.json so that transformers'
  // AutoTokenizer loads `dir` and gives the same ids. Creates `dir` if needed.
  void save(const std::string& dir) const override;
  std::string summary() const override;

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using IdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  int32_t require_id(const std::string& token, const char* what) const;
  // Normalizes code points [begin, end) (one piece between special tokens) into `out`.
  void normalize(const char32_t* begin, const char32_t* end, std::u32string& out) const;
  // Pre-tokenizes normalized text and appends the WordPiece ids of every word.
  void split_words(const std::u32string& text, std::vector<int32_t>& ids) const;
  void word_piece(std::string_view word, size_t n_chars, std::vector<int32_t>& ids) const;

  std::vector<std::string> vocab_;
  TokenizerOptions options_;
  IdMap ids_;
  bool strip_accents_ = true;
  size_t max_token_bytes_ = 0;  // longest vocabulary entry, bounds the WordPiece search
  int32_t cls_id_ = 0, sep_id_ = 0, pad_id_ = 0, unk_id_ = 0, mask_id_ = 0;
  // Special tokens as code points, matched in the raw text; ids in the same order.
  std::vector<std::u32string> special_text_;
  std::vector<int32_t> special_ids_;
};

}  // namespace cpuft
