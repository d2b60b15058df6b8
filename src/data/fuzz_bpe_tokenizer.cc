// libFuzzer target for the byte-level BPE tokenizer: its vocab.json, merges.txt and tokenizer.json
// parsers and tokenize()/encode(). Any input must either work or throw cpuft::Error; any other
// exception, crash, hang, leak or sanitizer report is a bug.
//
// The first byte chooses what the rest is:
//   0: vocab.json text (then, when it parses, a tokenizer of it tokenizes a fixed text)
//   1: merges.txt text over a fixed byte-level vocabulary, then a tokenizer of both
//   2: tokenizer.json text (used as written), then tokenize + encode of fixed texts
//   3: vocab.json, NUL, merges.txt, NUL, text: a tokenizer of the two files tokenizes the text
//   4: text for the fixture ModernBERT-style tokenizer (tests/fixtures/tokenizers/nfc_bpe: NFC
//      normalizer, [CLS] A [SEP] B [SEP]), whole and as a pair, truncated to 32
//   other: text for the fixture RoBERTa tokenizer (tests/fixtures/tokenizers/roberta_bpe), as one
//          text and as a pair cut at its middle, truncated to the first byte's value
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "core/check.h"
#include "data/byte_level_bpe_tokenizer.h"

#if !defined(CPUFT_FUZZ_FIXTURE_DIR) || !defined(CPUFT_FUZZ_NFC_FIXTURE_DIR)
#error \
    "CPUFT_FUZZ_FIXTURE_DIR and CPUFT_FUZZ_NFC_FIXTURE_DIR must name the roberta_bpe and nfc_bpe fixtures"
#endif

namespace {

using cpuft::ByteLevelBpeTokenizer;

const ByteLevelBpeTokenizer& fixture() {
  static const ByteLevelBpeTokenizer tok =
      ByteLevelBpeTokenizer::from_folder(CPUFT_FUZZ_FIXTURE_DIR);
  return tok;
}

const ByteLevelBpeTokenizer& nfc_fixture() {
  static const ByteLevelBpeTokenizer tok =
      ByteLevelBpeTokenizer::from_folder(CPUFT_FUZZ_NFC_FIXTURE_DIR);
  return tok;
}

// The 256 byte symbols and RoBERTa's special tokens, as vocab.json pairs.
ByteLevelBpeTokenizer::Vocab byte_vocab() {
  ByteLevelBpeTokenizer::Vocab v = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  const ByteLevelBpeTokenizer& f = fixture();
  for (int32_t id = 4; id < 260; ++id) v.emplace_back(f.token(id), id);  // the byte alphabet
  v.emplace_back("<mask>", 260);
  return v;
}

void exercise(const ByteLevelBpeTokenizer& tok, std::string_view text) {
  const std::vector<int32_t> ids = tok.tokenize(text);
  for (const int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) std::abort();
  }
  const std::string_view b = text.substr(text.size() / 2);
  const cpuft::Encoding e = tok.encode(text.substr(0, text.size() / 2), &b, 64);
  if (e.input_ids.size() > 64 || e.input_ids.size() != e.token_type_ids.size()) std::abort();
}

void run(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string_view sample = "Hello <mask> world, it's 3.14 \xF0\x9F\x98\x80 caf\xC3\xA9!";
  switch (data[0]) {
    case 0: {
      ByteLevelBpeTokenizer::Vocab v = ByteLevelBpeTokenizer::parse_vocab_json(in, "vocab.json");
      cpuft::BpeOptions opt;
      opt.roberta_processing = false;  // the vocabulary may lack <s> and </s>
      exercise(ByteLevelBpeTokenizer(std::move(v), {}, {}, opt, "vocab.json"), sample);
      break;
    }
    case 1: {
      const auto merges = ByteLevelBpeTokenizer::parse_merges_txt(in, "merges.txt");
      exercise(ByteLevelBpeTokenizer(byte_vocab(), merges, {}, {}, "vocab.json", "merges.txt"),
               sample);
      break;
    }
    case 2:
      exercise(ByteLevelBpeTokenizer::from_tokenizer_json(in, "tokenizer.json"), sample);
      break;
    case 3: {
      const size_t a = in.find('\0');
      if (a == std::string_view::npos) return;
      const size_t b = in.find('\0', a + 1);
      if (b == std::string_view::npos) return;
      auto v = ByteLevelBpeTokenizer::parse_vocab_json(in.substr(0, a), "vocab.json");
      const auto m =
          ByteLevelBpeTokenizer::parse_merges_txt(in.substr(a + 1, b - a - 1), "merges.txt");
      cpuft::BpeOptions opt;
      opt.roberta_processing = false;
      exercise(ByteLevelBpeTokenizer(std::move(v), m, {}, opt, "vocab.json", "merges.txt"),
               in.substr(b + 1));
      break;
    }
    case 4: {
      const ByteLevelBpeTokenizer& tok = nfc_fixture();
      (void)tok.tokenize(in);
      const std::string_view b = in.substr(in.size() / 2);
      const cpuft::Encoding e = tok.encode(in.substr(0, in.size() / 2), &b, 32);
      if (e.input_ids.size() > 32) std::abort();
      break;
    }
    default: {
      const ByteLevelBpeTokenizer& tok = fixture();
      (void)tok.tokenize(in);
      const std::string_view b = in.substr(in.size() / 2);
      const cpuft::Encoding e = tok.encode(in.substr(0, in.size() / 2), &b, data[0]);
      if (e.input_ids.size() > data[0]) std::abort();
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(data, size);
  } catch (const cpuft::Error&) {
    // Rejected input: expected.
  }
  return 0;
}
