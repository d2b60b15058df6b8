// SentencePiece Unigram tokenizer (XLM-RoBERTa, DeBERTa-v2/v3) that gives the same ids as Hugging
// Face's fast tokenizer, as transformers 5.24 / tokenizers 0.23 build it: XLMRobertaTokenizer from
// sentencepiece.bpe.model or tokenizer.json, DebertaV2Tokenizer from spm.model or tokenizer.json.
//
// Why our own code and not Debian's SentencePiece library (libsentencepiece-dev). Measured on the
// fixture (tests/fixtures/tokenizers/xlmr_unigram: 354 hard-case texts, 121,091 GLUE texts and
// 2,224,128 code-point texts, tools/make_spm_fixture.py), with cpuft's own splitting of the
// special tokens and the fairseq id offset around the library, loading sentencepiece.bpe.model or
// a ModelProto rebuilt from tokenizer.json (the Debian package ships no sentencepiece_model.pb.h,
// so that proto would be serialized by hand; both gave the same counts):
//   Debian 12's library (0.1.97):   352/354 hard, 121,086/121,091 GLUE, 2,222,969/2,224,128 code
//                                   point texts identical to HF;
//   PyPI sentencepiece 0.2.3 (for Debian 13's 0.2.0, which does not run on Debian 12):
//                                   352/354, 121,091/121,091, 2,222,969/2,224,128.
// The differences are HF's, not bugs of either side: HF's Precompiled normalizer looks up each
// grapheme cluster shorter than 6 bytes whole and keeps the *shortest* matching prefix of the
// charsmap (longer clusters character by character), where SentencePiece takes the longest match
// at every byte; HF's WhitespaceSplit splits on Unicode White_Space (U+0085, U+1680 ...), which the
// charsmap leaves alone; and 0.1.97 breaks ties between equal-scoring segmentations differently
// from 0.2.x and HF ("000" -> "0"+"00" vs "00"+"0"), so the two CI systems would not even agree
// with each other. With the normalizer, the splitting and the special tokens ours anyway, the
// library would only run the Viterbi search, a few dozen lines; so the pipeline is implemented
// here from tokenizers' documented behaviour, with no new dependency, and gives 100% on all three
// sets (tests: unigram_tokenizer_test, unigram_glue_test).
//
// Named unigram_tokenizer, not sentencepiece_tokenizer: it is HF's Unigram model and pipeline
// (read from a SentencePiece model or from tokenizer.json), not the SentencePiece library.
//
// Pipeline of tokenize(text), in HF's order:
//   1. added tokens (<s>, </s>, <pad>, <unk>, <mask>, ...) are cut out of the raw text first,
//      leftmost-longest; lstrip/rstrip tokens take the White_Space next to them;
//   2. each piece between them is normalized by the normalizers in their order. XLM-R: the
//      Precompiled charsmap (SentencePiece's nmt_nfkc double-array trie): grapheme clusters under
//      6 bytes whole (the first, i.e. shortest, prefix the trie knows replaces the whole cluster),
//      else character by character; optionally a Replace of runs of 2+ spaces by one (legacy
//      tokenizer.json files). DeBERTa: [Lowercase,] Replace(\s{2,}|[\n\r\t] -> ' '), NFC,
//      Strip(right) (its class never uses the charsmap); older DeBERTa files: Strip, charsmap,
//      Replace(" {2,}");
//   3. pre-tokenized: WhitespaceSplit (White_Space removed) if configured, Punctuation (each
//      punctuation character its own piece; DeBERTa's split_by_punct) if configured, then
//      Metaspace: ' ' becomes U+2581, U+2581 is prepended to each piece (prepend_scheme "always";
//      "first": only to the piece that starts at the text's first byte), and the piece is split
//      before every U+2581;
//   4. each word is segmented by Viterbi over the vocabulary scores (ties keep the earlier
//      segmentation, as tokenizers' encode_optimized); characters no piece covers get <unk>'s
//      score (min score - 10) and consecutive unknowns fuse into one <unk>.
//
// DeBERTa-v2/v3 (DebertaV2Tokenizer, model_type "deberta-v2"): spm.model's pieces keep their ids
// (no offset: [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3 in microsoft/deberta-v3-*); the special tokens that
// are not pieces ([MASK] there) get the next ids in transformers' order (bos, eos, unk, sep, pad,
// cls, mask); the template is [CLS] A [SEP] / [CLS] A [SEP] B [SEP], type id 1 for B and its
// [SEP]. tokenizer_config.json's do_lower_case, split_by_punct and add_prefix_space are followed;
// vocab_type and sp_model_kwargs are read by nothing in transformers 5, so here neither. Note that
// transformers 5's class drops spm.model's nmt_nfkc charsmap (full-width letters, ligatures stay
// as they are, mostly [UNK]) where transformers 4 and SentencePiece applied it: cpuft follows 5.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace cpuft {

class UnigramTokenizer final : public Tokenizer {
 public:
  // Reads a HF folder: tokenizer.json (model.type "Unigram") when present, else
  // sentencepiece.bpe.model (XLM-R) or spm.model (DeBERTa), with tokenizer_config.json and
  // special_tokens_map.json. With tokenizer_class XLMRobertaTokenizer(Fast) the pipeline is that
  // class's (transformers 5 rebuilds it whatever tokenizer.json declares: the charsmap,
  // WhitespaceSplit + Metaspace, the <s> A </s></s> B </s> template); with
  // DebertaV2Tokenizer(Fast), or config.json's model_type "deberta-v2", or spm.model alone, it is
  // DeBERTa's (tokenizer.json gives only the pieces and added tokens). Errors name the file and
  // field.
  static UnigramTokenizer from_folder(const std::string& dir);
  // Whether load_tokenizer should pick this family for `dir`: its tokenizer.json's model.type is
  // "Unigram", or it has no tokenizer.json and has sentencepiece.bpe.model or spm.model or names
  // XLMRobertaTokenizer or DebertaV2Tokenizer (tokenizer_config.json, config.json's model_type).
  static bool handles_folder(const std::string& dir);

  // The parsers behind from_folder, on bytes already read; `where` names the source in errors.
  // A SentencePiece ModelProto (Unigram) converted as transformers' XLMRobertaConverter does:
  // <s>=0 <pad>=1 </s>=2 <unk>=3, piece i (i >= 3) -> i + 1, <mask> last.
  static UnigramTokenizer from_sentencepiece_model(std::string model, const std::string& where);
  // A DeBERTa-v2/v3 spm.model as transformers 5's DebertaV2Tokenizer builds it with these options
  // of tokenizer_config.json and its default special tokens ([CLS], [SEP], [UNK], [PAD], [MASK]).
  struct DebertaOptions {
    bool do_lower_case = false;
    bool split_by_punct = false;
    bool add_prefix_space = true;  // false: Metaspace prepend_scheme "first"
  };
  static UnigramTokenizer from_deberta_model(std::string model, const std::string& where,
                                             const DebertaOptions& options);
  // tokenizer.json text (model.type "Unigram").
  static UnigramTokenizer from_tokenizer_json(std::string_view text, const std::string& where);

  std::vector<int32_t> tokenize(std::string_view text) const override;
  std::vector<std::string> tokenize_to_strings(std::string_view text) const;

  // The post-processor's template: <s> a </s> or <s> a </s></s> b </s> (XLM-R, token_type_ids all
  // 0), [CLS] a [SEP] or [CLS] a [SEP] b [SEP] (DeBERTa, b's part type 1). max_length >= 0
  // truncates longest_first after the special tokens (XLM-R: 2 for one text, 4 for a pair);
  // max_length < 0: no truncation.
  Encoding encode(std::string_view a, const std::string_view* b, int max_length) const override;

  int64_t vocab_size() const override { return vocab_size_; }
  const std::string& token(int32_t id) const;
  int32_t unk_id() const { return unk_id_; }

  // Writes tokenizer.json, tokenizer_config.json, special_tokens_map.json (and
  // sentencepiece.bpe.model / spm.model when the tokenizer was read from one) so that
  // transformers' AutoTokenizer gives the same ids. Creates `dir` if needed.
  void save(const std::string& dir) const override;
  std::string summary() const override;

  struct AddedToken {
    std::string content;
    int32_t id = 0;
    bool lstrip = false, rstrip = false, normalized = false, special = true;
  };
  // One item of the post-processor's template: a special token's ids, or sequence A / B.
  struct TemplateItem {
    int sequence = -1;  // 0: A, 1: B, -1: the special token `ids`
    std::vector<int32_t> ids;
    int32_t type_id = 0;
    bool operator==(const TemplateItem&) const = default;
  };
  // The normalizers tokenizers has that these files use, run in the order listed.
  enum class Normalizer : uint8_t {
    kPrecompiled,     // the charsmap
    kCollapseSpaces,  // Replace(Regex(" {2,}"), " ")
    kWhitespaceRuns,  // Replace(Regex("\\s{2,}|[\\n\\r\\t]"), " ") (DeBERTa; \s is White_Space)
    kNfc,             // NFC
    kLowercase,       // Lowercase (Rust's char::to_lowercase)
    kStripLeft,       // Strip(left=true, right=false)
    kStripRight,      // Strip(left=false, right=true)
    kStrip,           // Strip(left=true, right=true)
  };
  enum class Prepend : uint8_t { kAlways, kFirst, kNever };  // Metaspace's prepend_scheme
  struct Pipeline {
    std::string charsmap;  // the Precompiled normalizer's blob
    std::vector<Normalizer> normalizers;
    bool whitespace_split = true;
    bool punctuation = false;  // Punctuation(behavior "Isolated"), after WhitespaceSplit
    bool metaspace = true;
    Prepend prepend = Prepend::kAlways;
    bool metaspace_split = true;
    std::string replacement = "\u2581";
    std::vector<TemplateItem> single, pair;
  };

 private:
  // What transformers' XLMRobertaTokenizer class takes from tokenizer_config.json and
  // special_tokens_map.json.
  struct XlmrConfig {
    std::string bos = "<s>", eos = "</s>", unk = "<unk>", pad = "<pad>", mask = "<mask>";
    bool mask_lstrip = false, mask_rstrip = false, add_prefix_space = true;
  };

  // What transformers' DebertaV2Tokenizer class takes from tokenizer_config.json and
  // special_tokens_map.json; `listed`: the added tokens it is given first (added_tokens_decoder,
  // else tokenizer.json's), `extra`: extra_special_tokens (then spm.model's control and
  // user-defined pieces).
  struct DebertaConfig {
    // bos, eos, unk, sep, pad, cls, mask: transformers' order of adding the missing ones.
    AddedToken bos{"[CLS]"}, eos{"[SEP]"}, unk{"[UNK]"}, sep{"[SEP]"}, pad{"[PAD]"}, cls{"[CLS]"},
        mask{"[MASK]"};
    DebertaOptions options;
    int64_t unk_id = 1;  // the class's default, when the unknown token is no piece scored 0
    bool has_listed = false;
    std::vector<AddedToken> listed, extra;
  };

  UnigramTokenizer() = default;
  static UnigramTokenizer from_spm(std::string model, const std::string& where,
                                   const XlmrConfig& config);
  static UnigramTokenizer from_deberta_spm(std::string model, const std::string& where,
                                           DebertaConfig config);
  static UnigramTokenizer from_deberta_folder(const std::string& dir);
  // The class's pipeline (whatever tokenizer.json declares): the charsmap, WhitespaceSplit +
  // Metaspace, <s> A </s></s> B </s>, the special tokens as non-normalized added tokens.
  void apply_xlmr_class(const XlmrConfig& config, bool keep_json_strip, const std::string& where);
  // DebertaV2Tokenizer's: the added tokens renumbered as transformers adds them, its normalizers
  // and pre-tokenizers, [CLS] A [SEP] (B [SEP]), unk_id.
  void apply_deberta_class(const DebertaConfig& config, const std::string& where);
  int32_t added_id(const std::string& content) const;
  bool is_xlmr_class_pipeline() const;
  void build(const std::string& where);
  std::string_view charsmap_text() const {
    return std::string_view(pipeline_.charsmap).substr(charsmap_text_begin_);
  }
  // The tokenizer.json parts every class keeps (vocabulary, unk_id, added tokens); the pipeline
  // (normalizer, pre-tokenizer, post-processor) too with `with_pipeline`.
  static UnigramTokenizer from_tokenizer_json(std::string_view text, const std::string& where,
                                              bool with_pipeline);
  void split_added(std::string_view text, bool normalized_pass,
                   const std::function<void(std::string_view)>& on_text,
                   std::vector<int32_t>& ids) const;
  // Returns false when a leading Strip removed characters: the text no longer starts at the
  // original's first byte (Metaspace "first" looks at that).
  bool normalize(std::string_view piece, std::string& out) const;
  void apply_charsmap(std::string_view piece, std::string& out) const;
  // `at_origin`: `part` starts at the text's first byte; `scratch`: a buffer for Metaspace.
  void pre_tokenize(std::string_view part, bool at_origin, std::string& scratch,
                    std::vector<int32_t>& ids) const;
  void metaspace(std::string_view word, bool at_origin, std::string& scratch,
                 std::vector<int32_t>& ids) const;
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;
  const char* charsmap_lookup(const unsigned char* key, size_t n) const;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Byte trie over the vocabulary: children of a node are the sorted edges
  // [first_edge, first_edge + n_edges); `id` is the piece ending there (-1: none).
  struct TrieNode {
    uint32_t first_edge = 0;
    uint32_t n_edges = 0;
    int32_t id = -1;
  };
  struct TrieEdge {
    unsigned char byte;
    uint32_t node;
  };

  std::vector<std::pair<std::string, double>> vocab_;  // id -> (piece, score)
  int32_t unk_id_ = 0;
  std::vector<AddedToken> added_;
  Pipeline pipeline_;
  std::string source_;          // "sentencepiece.bpe.model", "spm.model" or "tokenizer.json"
  std::string spm_model_;       // the model's bytes when read from one (save writes it back)
  std::string spm_file_;        // ... under this name
  bool deberta_class_ = false;  // built as DebertaV2Tokenizer (save names that class)
  DebertaOptions deberta_;
  std::string where_;  // file name for errors found while tokenizing (bad charsmap entries)
  int model_max_length_ = 512;
  int64_t vocab_size_ = 0;
  // Special token strings for the config files.
  std::string bos_, eos_, unk_, pad_, mask_, cls_, sep_;

  // Derived by build().
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
  std::vector<TrieNode> trie_;
  std::vector<TrieEdge> edges_;
  double unk_score_ = 0;
  std::vector<uint32_t> charsmap_units_;  // the double-array trie
  size_t charsmap_text_begin_ = 0;        // where the NUL-separated replacements start
  std::vector<std::string> added_match_;  // per added token: the text matched (normalized ones
                                          // are matched by their normalized form)
  int n_special_single_ = 0, n_special_pair_ = 0;
};

}  // namespace cpuft
