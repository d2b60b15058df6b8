// Byte-level BPE tokenizer (RoBERTa, GPT-2 style) that gives the same ids as Hugging Face's fast
// tokenizer: transformers' RobertaTokenizer(Fast), i.e. tokenizers' BPE model + ByteLevel
// pre-tokenizer + RobertaProcessing, or a tokenizer.json of that shape used as written.
//
// Pipeline of tokenize(text), in tokenizers' order:
//   1. added tokens (<s>, </s>, <unk>, <pad>, <mask>, ...) are cut out of the raw text: leftmost,
//      longest match, first the tokens marked normalized=false, then, in what is left after the
//      normalizer (NFC where tokenizer.json has one, as GPT-NeoX's and ModernBERT's), those marked
//      normalized=true; lstrip / rstrip make a token take the whitespace beside it (RoBERTa's
//      <mask> is lstrip);
//   2. every other piece gets a leading space if add_prefix_space and it has none, and is split by
//      the GPT-2 pattern  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
//      ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (character classes from byte_level_tables.cc, as tokenizers'
//      regex engine sees them);
//   3. each word's UTF-8 bytes become the symbols of the bytes-to-unicode map, and BPE merges the
//      adjacent pair of lowest rank, leftmost first, until no pair is in merges; a byte whose
//      symbol is not in the vocabulary is dropped (RoBERTa: no unk token) or becomes unk_token.
// encode() adds the post-processor's special tokens: <s> A </s> and <s> A </s></s> B </s>.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/tokenizer.h"

namespace cpuft {

// An entry of tokenizers' added vocabulary (tokenizer.json "added_tokens", tokenizer_config.json
// "added_tokens_decoder").
struct BpeAddedToken {
  std::string content;
  int32_t id = 0;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = true;
};

// One element of a post-processor template: a special token (sequence < 0) or the ids of text A
// (sequence 0) or B (1), each with its token type id.
struct BpeTemplatePiece {
  int sequence = -1;
  std::vector<int32_t> ids;  // special token ids (sequence < 0)
  int32_t type_id = 0;
};

struct BpeOptions {
  bool nfc = false;  // tokenizer.json's normalizer {"type": "NFC"} (GPT-NeoX style, ModernBERT)
  bool add_prefix_space = false;
  bool trim_offsets = true;  // offsets only: carried into the saved files
  bool use_regex = true;     // split with the GPT-2 pattern (else each piece is one word)
  // The BPE model's unknown token: none for RoBERTa (a byte missing from the vocabulary is
  // dropped); fuse_unk merges consecutive unknowns into one.
  std::optional<std::string> model_unk_token;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word found whole in the vocabulary is not merged
  // Named special tokens (tokenizer_config.json / special_tokens_map.json).
  std::string bos_token = "<s>", eos_token = "</s>", unk_token = "<unk>", sep_token = "</s>",
              pad_token = "<pad>", cls_token = "<s>", mask_token = "<mask>";
  // RoBERTa post-processing (<s> A </s></s> B </s>) from cls/sep; otherwise the templates below.
  bool roberta_processing = true;
  std::vector<BpeTemplatePiece> single_template, pair_template;
  int model_max_length = 512;  // only carried into tokenizer_config.json by save()
  // Words (of at most 256 bytes) whose ids are remembered; 0: no cache. Shared by the threads
  // that tokenize with one tokenizer (a reader-writer lock).
  size_t cache_words = 10000;
};

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  using Vocab = std::vector<std::pair<std::string, int32_t>>;
  using Merges = std::vector<std::pair<std::string, std::string>>;

  // vocab: (token, id) with distinct ids; merges in rank order (a later duplicate of a pair
  // replaces the earlier rank, as tokenizers' merge map does). added: the added vocabulary, whose
  // ids may be new or in the vocabulary. Throws Error naming `where` (merges_where for the merges,
  // when not empty) and the field when a merge uses a token not in the vocabulary, an id is out
  // of range or used twice, or a special token has no id.
  ByteLevelBpeTokenizer(Vocab vocab, const Merges& merges, std::vector<BpeAddedToken> added,
                        BpeOptions options, const std::string& where = "tokenizer",
                        const std::string& merges_where = "");

  // Reads a Hugging Face folder: tokenizer.json whose model.type is "BPE", or vocab.json +
  // merges.txt (+ added_tokens.json), with tokenizer_config.json and special_tokens_map.json
  // when present. As transformers' AutoTokenizer: for tokenizer_class RobertaTokenizer (or no
  // class with config.json model_type "roberta") the RoBERTa pipeline is rebuilt from the
  // vocabulary and merges (add_prefix_space from tokenizer_config.json, default false; no unk in
  // the model; RobertaProcessing); for PreTrainedTokenizerFast / TokenizersBackend (or no class
  // and no config.json) tokenizer.json is used as written. Errors name the file and the field.
  static ByteLevelBpeTokenizer from_folder(const std::string& dir);

  // A tokenizer.json's text used as written (no tokenizer_config.json), as tokenizers'
  // Tokenizer.from_str builds it. `where` names the file in errors.
  static ByteLevelBpeTokenizer from_tokenizer_json(std::string_view text, const std::string& where);

  // Parsers, exposed for the fuzz target and the tests. `where` names the file in errors.
  static Vocab parse_vocab_json(std::string_view text, const std::string& where);
  static Merges parse_merges_txt(std::string_view text, const std::string& where);

  std::vector<int32_t> tokenize(std::string_view text) const override;
  std::vector<std::string> tokenize_to_strings(std::string_view text) const;

  // The post-processor's template around the ids of a (and b); max_length >= 0 truncates the
  // texts as HF's "longest_first" to max_length less the template's special tokens (2 single, 4
  // pair for RoBERTa). Throws Error when max_length cannot hold them.
  Encoding encode(std::string_view a, const std::string_view* b, int max_length) const override;

  // One more than the largest id, added tokens included.
  int64_t vocab_size() const override { return max_id_ + 1; }
  // Number of special tokens encode() adds for one text or a pair.
  size_t num_special_tokens(bool pair) const;
  const BpeOptions& options() const { return options_; }
  int32_t token_id(const std::string& token) const;  // -1 when absent
  const std::string& token(int32_t id) const;        // "" when absent

  // Writes vocab.json, merges.txt, tokenizer.json, tokenizer_config.json (tokenizer_class
  // RobertaTokenizer, add_prefix_space, added_tokens_decoder) and special_tokens_map.json.
  void save(const std::string& dir) const override;
  std::string summary() const override;

  // Resizes the word cache (0: none), emptying it.
  void set_cache_words(size_t n);

  // Sets the line that summary() gives for the files read (from_folder sets it).
  void set_source(std::string source) { source_ = std::move(source); }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using IdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;
  struct MergeValue {
    uint32_t rank;
    int32_t id;
  };

  int32_t special_id(const std::string& token, const char* field, const std::string& where) const;
  // Splits `piece` (bytes [begin, end) of text) on the added tokens of one pass.
  void split_added(std::string_view text, size_t begin, size_t end, bool normalized_pass,
                   std::vector<std::pair<size_t, size_t>>& pieces, std::vector<int32_t>& ids) const;
  void tokenize_piece(std::string_view piece, std::vector<int32_t>& ids) const;
  void bpe_word(std::string_view word, std::vector<int32_t>& ids) const;
  void word_ids(std::string_view word, std::vector<int32_t>& ids) const;  // through the cache

  IdMap vocab_;
  std::vector<std::pair<std::string, std::string>> merges_;  // rank order, for save()
  // (left id << 32 | right id) -> rank and merged id, an open-addressing table.
  static constexpr uint64_t kNoPair = ~uint64_t{0};  // ids are below 2^31: no pair has this key
  size_t merge_slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> merge_shift_);
  }
  std::vector<uint64_t> merge_keys_;
  std::vector<MergeValue> merge_values_;
  int merge_shift_ = 60;
  std::vector<BpeAddedToken> added_;
  struct TrieNode {
    std::vector<std::pair<unsigned char, uint32_t>> next;  // byte -> node
    int32_t token = -1;                                    // index into added_ ending here
  };
  std::vector<TrieNode> trie_[2];  // added tokens with normalized false / true; [0] is the root
  BpeOptions options_;
  int32_t byte_ids_[256];  // id of each byte's symbol, -1 if not in the vocabulary
  int32_t unk_id_ = -1;    // the model's unk (options_.model_unk_token), -1 if none
  int32_t max_id_ = -1;
  std::string source_ = "in memory";
  struct WordCache {
    std::shared_mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
  };
  std::shared_ptr<WordCache> cache_;  // null when options_.cache_words is 0
};

// model.type of a tokenizer.json ("BPE", "WordPiece", "Unigram", ...; "" when the model has no
// type). Throws Error naming the file when it is not JSON or has no 'model' object.
std::string tokenizer_json_model_type(const std::string& path);

}  // namespace cpuft
