// libFuzzer target for the Unigram (XLM-R, DeBERTa) tokenizer. The first byte picks what the rest
// is (byte % 4):
//   0: a SentencePiece model file (sentencepiece.bpe.model),
//   1: a tokenizer.json,
//   2: text, tokenized by the repository's fixture tokenizers (tests/fixtures/tokenizers/
//      xlmr_unigram, the same tokenizer.json in transformers 4.x's form, deberta_v3_unigram with
//      its hub options and with all three options on),
//   3: a DeBERTa spm.model; bits 2-4 of the first byte turn on do_lower_case, split_by_punct and
//      add_prefix_space false.
// A model or tokenizer.json must load or throw cpuft::Error; one that loads must tokenize a few
// texts into ids below vocab_size() (or throw Error: a hostile charsmap can point outside its
// strings). Valid UTF-8 text must tokenize without any Error, invalid UTF-8 must throw one, and
// encode() must respect max_length. Any other exception, crash, leak or sanitizer report is a bug.
// Seeds: tests/fixtures/fuzz_unigram_corpus (tools/make_spm_fixture.py).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "data/unigram_tokenizer.h"
#include "data/utf8.h"

#ifndef CPUFT_FUZZ_FIXTURE_DIR
#error "CPUFT_FUZZ_FIXTURE_DIR must name tests/fixtures/tokenizers/xlmr_unigram"
#endif
#ifndef CPUFT_FUZZ_DEBERTA_FIXTURE_DIR
#error "CPUFT_FUZZ_DEBERTA_FIXTURE_DIR must name tests/fixtures/tokenizers/deberta_v3_unigram"
#endif

namespace {

using cpuft::Encoding;
using cpuft::Error;
using cpuft::UnigramTokenizer;

void check_ids(const UnigramTokenizer& t, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (id < 0 || id >= t.vocab_size()) std::abort();
}

// Tokenizes and encodes `text` (split in two for a pair); `must_succeed`: valid UTF-8 through a
// tokenizer known to be sound, so no Error is allowed.
void exercise(const UnigramTokenizer& t, std::string_view text, int max_length, bool must_succeed) {
  const bool valid = cpuft::find_invalid_utf8(text) == std::string_view::npos;
  try {
    check_ids(t, t.tokenize(text));
    if (!valid) std::abort();  // invalid UTF-8 must be refused
    size_t half = text.size() / 2;
    while (half > 0 && (static_cast<unsigned char>(text[half]) & 0xC0) == 0x80) --half;
    const std::string_view a = text.substr(0, half), b = text.substr(half);
    const Encoding e = t.encode(a, &b, max_length);
    check_ids(t, e.input_ids);
    if (e.input_ids.size() != e.token_type_ids.size()) std::abort();
    if (max_length >= 0 && e.input_ids.size() > static_cast<size_t>(max_length)) std::abort();
    check_ids(t, t.encode(text, nullptr, -1).input_ids);
  } catch (const Error&) {
    // Allowed: hostile tokenizers, invalid UTF-8, max_length below the pair's 4 special tokens.
    if (must_succeed && valid && (max_length < 0 || max_length >= 4)) std::abort();
  }
}

// Bits 2-4 of the mode byte.
UnigramTokenizer::DebertaOptions deberta_options(uint8_t byte) {
  UnigramTokenizer::DebertaOptions o;
  o.do_lower_case = (byte & 0x04) != 0;
  o.split_by_punct = (byte & 0x08) != 0;
  o.add_prefix_space = (byte & 0x10) == 0;
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<UnigramTokenizer>& fixture_tokenizers() {
  static const std::vector<UnigramTokenizer> toks = [] {
    std::vector<UnigramTokenizer> v;
    v.push_back(UnigramTokenizer::from_folder(CPUFT_FUZZ_FIXTURE_DIR));
    // The same file in transformers 4.x's form: charsmap + Replace, Metaspace alone.
    using json = nlohmann::json;
    json j = json::parse(read_file(std::string(CPUFT_FUZZ_FIXTURE_DIR) + "/tokenizer.json"));
    j["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers",
         {j["normalizer"],
          {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
    j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][1];
    v.push_back(UnigramTokenizer::from_tokenizer_json(j.dump(), "fixture, 4.x form"));
    v.push_back(UnigramTokenizer::from_folder(CPUFT_FUZZ_DEBERTA_FIXTURE_DIR));
    v.push_back(UnigramTokenizer::from_deberta_model(
        read_file(std::string(CPUFT_FUZZ_DEBERTA_FIXTURE_DIR) + "/spm.model"), "DeBERTa fixture",
        deberta_options(0x1C)));
    return v;
  }();
  return toks;
}

const char* const kTexts[] = {"Hello world",
                              "  A \uFB01 e\u0301 \u3000x  ",
                              "a <mask> b</s>",
                              "[CLS] a,\t\tB [MASK]\n",
                              "\u0130 \u00c5\u0301 \u2581x",
                              "\u4e2d\u6587 \U0001F468\u200D\U0001F469 \u0915\u094D\u0937",
                              ""};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int mode = data[0] % 4;
  if (mode == 2) {
    const int max_length = size > 1 ? data[1] % 40 - 1 : -1;
    for (const UnigramTokenizer& t : fixture_tokenizers())
      exercise(t, rest, max_length, /*must_succeed=*/true);
    return 0;
  }
  try {
    const UnigramTokenizer t =
        mode == 0   ? UnigramTokenizer::from_sentencepiece_model(rest, "fuzz")
        : mode == 1 ? UnigramTokenizer::from_tokenizer_json(rest, "fuzz")
                    : UnigramTokenizer::from_deberta_model(rest, "fuzz", deberta_options(data[0]));
    if (t.vocab_size() <= 0) std::abort();
    for (const char* text : kTexts) exercise(t, text, 8, /*must_succeed=*/false);
  } catch (const Error&) {
    // Rejected input: expected.
  }
  return 0;
}
