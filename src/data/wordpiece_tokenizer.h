// WordPiece tokenizer that gives the same ids as Hugging Face's fast BERT tokenizer (tokenizers:
// BertNormalizer + BertPreTokenizer + WordPiece + BERT's [CLS]/[SEP] template), and the other
// WordPiece pipelines a tokenizer.json can describe.
//
// Pipeline of tokenize(text), in the tokenizers library's order:
//   1. added tokens with normalized = false (BERT: the special tokens "[CLS]", "[SEP]", ...) are
//      cut out of the raw text first and kept whole: leftmost, longest match, case-sensitive;
//      lstrip/rstrip take the whitespace beside a match with it, single_word requires no word
//      character (regex \w) on either side;
//   2. each remaining piece is normalized: BertNormalizer = clean_text (drop NUL, U+FFFD and
//      control/format chars; whitespace becomes ' '), spaces around CJK ideographs, strip accents
//      (NFD, then drop nonspacing marks), lowercase (full per-character mapping, e.g. U+0130 ->
//      "i̇"); or a Sequence of NFD, Lowercase, StripAccents (drops every combining mark, M*) and
//      BertNormalizers, run in its order;
//   3. added tokens with normalized = true are cut out of the normalized piece (matching their
//      normalized content);
//   4. pre-tokenized: BertPreTokenizer = split on whitespace, every punctuation character its own
//      word; or WhitespaceSplit, Punctuation (any split behaviour), Whitespace (\w+|[^\w\s]+) and
//      Sequences of them;
//   5. each word is split greedily, longest vocabulary match first, continuations prefixed
//      continuing_subword_prefix ("##"); a word with an unmatched rest, or longer than
//      max_input_chars_per_word characters, is one unk_token;
// and encode() puts the ids into the post-processor's template (BERT: [CLS] a [SEP] b [SEP]).
// Character data come from unicode_tables.cc (see tools/make_unicode_tables.py).
//
// Reading a folder (from_folder), as transformers 5.24's AutoTokenizer does; what was checked is
// in tools/make_tokenizer_json_fixture.py and its fixtures:
//   - tokenizer.json, when present, gives the vocabulary even when vocab.txt is there too.
//   - Which pipeline depends on the tokenizer class: tokenizer_config.json's "tokenizer_class",
//     else config.json's, else config.json's "model_type" (bert, distilbert, ... use
//     BertTokenizer).
//     * BertTokenizer (and DistilBertTokenizer, MobileBertTokenizer): transformers takes only the
//       vocabulary and the added tokens from tokenizer.json and builds the rest in code from
//       tokenizer_config.json: BertNormalizer(clean_text true, handle_chinese_chars =
//       tokenize_chinese_chars, strip_accents, lowercase = do_lower_case), BertPreTokenizer,
//       WordPiece(unk_token, "##", 100 characters), template "[CLS] $A [SEP]" / "... $B:1 [SEP]:1"
//       with cls_token and sep_token. So when the two files disagree, tokenizer_config.json wins
//       (do_lower_case false with a lowercasing normalizer: cased), and tokenizer.json's
//       normalizer type, pre-tokenizer, prefix, max_input_chars_per_word and post-processor are
//       ignored. special_tokens_map.json's tokens override tokenizer_config.json's when the latter
//       has no "added_tokens_decoder" (then it is ignored, and so are tokenizer.json's
//       added_tokens).
//       One deliberate difference: a BertTokenizer option that tokenizer_config.json does not set
//       at all (do_lower_case, strip_accents, tokenize_chinese_chars, unk_token) is taken from
//       tokenizer.json's BertNormalizer / model, where transformers uses the constructor default
//       (do_lower_case true). transformers thus lowercases a cased tokenizer.json whose
//       tokenizer_config.json does not say do_lower_case; cpuft keeps it cased, as the tokenizers
//       library and the model's training do, and save() writes the option explicitly so that
//       transformers reloads the saved folder with cpuft's ids.
//     * PreTrainedTokenizerFast, TokenizersBackend, any other class, or no class and no model
//       type: tokenizer.json as the tokenizers library reads it; tokenizer_config.json's
//       do_lower_case and the like are ignored (as transformers does).
//   - token_type_ids: transformers returns them only when "token_type_ids" is in the class's
//     model_input_names (BertTokenizer: yes; DistilBertTokenizer, TokenizersBackend: no) or in
//     tokenizer_config.json's "model_input_names"; otherwise the model sees zeros, and so
//     encode() returns zeros.
//   - tokenizer.json's truncation and padding are not applied (run_glue passes its own).
//   - What cannot be expressed is refused with one line naming the file and the field.
#pragma once

#include <array>
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

// One normalization pass (step 2 above).
enum class NormalizeStep : uint8_t {
  kCleanText,        // BertNormalizer clean_text
  kChineseChars,     // BertNormalizer handle_chinese_chars
  kNfd,              // canonical decomposition (NFD normalizer; first half of BERT's strip_accents)
  kStripNonspacing,  // drop Mn (second half of BERT's strip_accents)
  kStripCombining,   // drop M* (StripAccents normalizer)
  kLowercase,
};

// tokenizers' SplitDelimiterBehavior.
enum class SplitBehavior : uint8_t {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous,
};

// One pre-tokenizer (step 4 above).
struct PreTokenizeStep {
  enum Kind : uint8_t { kWhitespaceSplit, kPunctuation, kWhitespace } kind = kWhitespaceSplit;
  SplitBehavior behavior = SplitBehavior::kIsolated;  // kPunctuation only
  bool operator==(const PreTokenizeStep&) const = default;
};

// An entry of tokenizer.json's "added_tokens" (tokenizers' AddedToken).
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = true, single_word = false, lstrip = false, rstrip = false, normalized = false;
  bool operator==(const AddedToken&) const = default;
};

// One piece of a post-processor template.
struct TemplatePiece {
  int sequence = -1;                // 0: text a, 1: text b, -1: the special tokens `ids`
  std::vector<int32_t> ids;         // sequence == -1
  std::vector<std::string> tokens;  // their text (for save)
  int32_t type_id = 0;
  bool operator==(const TemplatePiece&) const = default;
};

// Everything of the pipeline that TokenizerOptions do not hold. WordPieceTokenizer(vocab, options)
// builds BertTokenizer's pipeline from the options; tokenizer.json may describe others.
struct WordPiecePipeline {
  std::vector<NormalizeStep> normalizer;
  std::vector<PreTokenizeStep> pre_tokenizer;
  std::string continuing_subword_prefix = "##";
  std::vector<AddedToken> added_tokens;  // ids checked by the constructor
  std::vector<TemplatePiece> single, pair;
  bool type_ids = true;  // false: encode() returns zeros (see the header comment)
  bool operator==(const WordPiecePipeline&) const = default;
};

// The files of a tokenizer folder, read into memory (std::nullopt: the file is absent). `dir`
// names them in errors. from_folder reads them; the fuzzer builds them from bytes.
struct TokenizerFolderFiles {
  std::string dir;
  std::optional<std::string> tokenizer_json, tokenizer_config_json, special_tokens_map_json,
      config_json, vocab_txt;
};

class WordPieceTokenizer final : public Tokenizer {
 public:
  // vocab[i] is the token of id i. If a token appears twice its last id wins (as HF's vocab.txt
  // loader). Throws Error if a special token is not in the vocabulary.
  WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options);
  // A pipeline read from tokenizer.json. The named special tokens of `options` other than
  // unk_token may be absent (their ids are then -1). Throws Error naming the inconsistency.
  WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options,
                     WordPiecePipeline pipeline, std::string source);

  // Reads a HF model/tokenizer folder (see the header comment for which file wins). Errors name
  // the file and the field.
  static WordPieceTokenizer from_folder(const std::string& dir);
  static WordPieceTokenizer from_files(const TokenizerFolderFiles& files);

  // Ids of `text` without special tokens. Throws Error("invalid UTF-8 at byte N") (N counted
  // from 0 in `text`); the caller adds file:line.
  std::vector<int32_t> tokenize(std::string_view text) const override;
  std::vector<std::string> tokenize_to_strings(std::string_view text) const;

  // The post-processor's template around the ids of a (and b); BERT: [CLS] a [SEP] (b [SEP]),
  // token_type_ids 0 up to and including the first [SEP], 1 after. max_length >= 0 truncates as
  // HF's "longest_first": the budget left after the special tokens is kept whole by the shorter
  // side when it fits in half, else split in halves with the odd token going to the longer side
  // (to b on a tie). max_length < 0: no truncation. Throws Error when max_length cannot hold the
  // special tokens.
  Encoding encode(std::string_view a, const std::string_view* b, int max_length) const override;

  // Ids of the named special tokens; -1 when a tokenizer.json pipeline lacks one.
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t mask_id() const { return mask_id_; }
  // One more than the largest id: the WordPiece vocabulary plus added tokens beyond it.
  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_token_.size()); }
  const std::string& token(int32_t id) const { return id_to_token_.at(static_cast<size_t>(id)); }
  const TokenizerOptions& options() const { return options_; }
  const WordPiecePipeline& pipeline() const { return pipeline_; }
  // True when the pipeline is the one BertTokenizer builds from options() (save() then writes
  // vocab.txt and a BertTokenizer tokenizer_config.json).
  bool is_bert_pipeline() const;

  // Writes the tokenizer so that transformers' AutoTokenizer loads `dir` and gives the same ids:
  // vocab.txt, tokenizer_config.json (BertTokenizer) and special_tokens_map.json for BERT's
  // pipeline; otherwise tokenizer.json and tokenizer_config.json (TokenizersBackend, with
  // model_input_names). Creates `dir` if needed.
  void save(const std::string& dir) const override;
  std::string summary() const override;

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using IdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;
  struct Matcher {  // added tokens of one kind (normalized or not), by first code point
    std::vector<std::u32string> text;
    std::vector<int32_t> index;                                    // into pipeline_.added_tokens
    std::unordered_map<char32_t, std::vector<uint32_t>> by_first;  // longest first
    std::array<bool, 128> ascii_first{};  // some token starts with this ASCII character
    bool non_ascii_first = false;         // some token starts with a non-ASCII character
    bool empty() const { return text.empty(); }
  };

  void init();
  int32_t find_id(const std::string& token) const;  // added tokens, then vocabulary; -1
  int32_t require_id(const std::string& token, const char* what) const;
  void build_matcher(Matcher& m, bool normalized);
  // Appends to `pieces` the (begin, end, added-token index or -1) pieces of [begin, end).
  void split_added(const Matcher& m, const char32_t* text, size_t begin, size_t end,
                   std::vector<std::pair<std::pair<size_t, size_t>, int32_t>>& pieces) const;
  // Normalizes code points [begin, end) into `out`.
  void normalize(const char32_t* begin, const char32_t* end, std::u32string& out) const;
  void normalize_fused(const char32_t* begin, const char32_t* end, std::u32string& out) const;
  // Normalized piece -> ids (normalized added tokens, pre-tokenizer, WordPiece).
  void tokenize_normalized(const std::u32string& text, std::vector<int32_t>& ids) const;
  // BertPreTokenizer's words of normalized text, WordPiece ids appended.
  void split_words(const char32_t* begin, const char32_t* end, std::vector<int32_t>& ids) const;
  void split_words_generic(const char32_t* begin, const char32_t* end,
                           std::vector<int32_t>& ids) const;
  void word_piece(std::string_view word, size_t n_chars, std::vector<int32_t>& ids) const;
  void apply_template(const std::vector<TemplatePiece>& t, const std::vector<int32_t>& a,
                      const std::vector<int32_t>* b, Encoding& e) const;

  std::vector<std::string> vocab_;        // the WordPiece model's vocabulary
  std::vector<std::string> id_to_token_;  // vocab_ plus added tokens beyond it
  TokenizerOptions options_;
  WordPiecePipeline pipeline_;
  std::string source_ = "vocab";  // for summary(): the file read
  IdMap ids_;
  // The normalizer as the one fused pass of BertNormalizer (when it is one): its four switches.
  bool fused_ = true, clean_ = true, cjk_ = true, strip_ = true, lower_ = true;
  bool bert_split_ = true;      // the pre-tokenizer is BertPreTokenizer's
  size_t max_token_bytes_ = 0;  // longest vocabulary entry, bounds the WordPiece search
  int32_t cls_id_ = -1, sep_id_ = -1, pad_id_ = -1, unk_id_ = -1, mask_id_ = -1;
  Matcher raw_added_, normalized_added_;
  size_t n_special_single_ = 0, n_special_pair_ = 0;
};

}  // namespace cpuft
