// libFuzzer target for config.json: any text must either give a ModelConfig or throw
// cpuft::Error; a config it gives must hold what the rest of cpuft relies on (positive sizes,
// heads dividing the width, one id2label entry per label, a position left after the padding row).
// Any other exception, crash, leak, sanitizer report or allocation the input's numbers drive is a
// bug.
//
// Input: config.json's text, as written (every family: model_type chooses it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "model/model_config.h"
#include "model/param_layout.h"

namespace {

void check(const cpuft::ModelConfig& c) {
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.num_hidden_layers <= 0 ||
      c.num_attention_heads <= 0 || c.intermediate_size <= 0 || c.embedding_size <= 0 ||
      c.max_position_embeddings <= 0 || c.num_labels < 1)
    std::abort();
  if (c.hidden_size % c.num_attention_heads != 0 || c.head_dim() <= 0) std::abort();
  if (c.id2label.size() != static_cast<size_t>(c.num_labels)) std::abort();
  if (c.pad_token_id >= c.vocab_size || c.max_sequence_length() <= 0) std::abort();
  if (c.is_regression() != (c.num_labels == 1)) std::abort();
  const float p = c.effective_classifier_dropout();
  if (!(p >= 0 && p < 1)) std::abort();
  const cpuft::ParamLayout layout(c);
  int64_t end = 0;
  for (const cpuft::ParamSpec& spec : layout.specs()) {
    if (spec.numel <= 0 || spec.offset < end) std::abort();
    end = spec.offset + spec.numel;
  }
  if (layout.total_floats() < end) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    check(cpuft::parse_model_config(text, "config.json"));
  } catch (const cpuft::Error&) {
    // Rejected input: expected.
  }
  return 0;
}
