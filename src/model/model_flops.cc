#include "model/model_flops.h"

namespace cpuft {

double training_flops(const ModelConfig& c, const Batch& batch) {
  const double D = static_cast<double>(c.hidden_size), F = static_cast<double>(c.intermediate_size);
  // QKV + out + FFN weights; ModernBERT's GeGLU has a (2F, D) input and a (D, F) output matrix.
  const double ffn = c.family == Family::modernbert ? 3 * D * F : 2 * D * F;
  const double dense_per_token_layer = 4 * D * D + ffn;
  double flops = 0;
  for (int64_t s = 0; s < batch.num_sequences(); ++s) {
    const double T = static_cast<double>(batch.length(s));
    // DeBERTa's c2p and p2c: two (T, 2T - 1) x Dh products per head beside Q K^T, their gathers
    // (the relative embeddings' projection, rows not tokens, is left out).
    const double relative =
        c.family == Family::deberta_v2 && c.relative_attention
            ? ((c.content_to_position ? 1 : 0) + (c.position_to_content ? 1 : 0)) * 2 * T *
                  (2 * T - 1) * D
            : 0;
    flops += static_cast<double>(c.num_hidden_layers) *
             (T * (6 * dense_per_token_layer + 3 * 4 * T * D) + 3 * relative);
    flops += 6 * (D * D + D * static_cast<double>(c.num_labels));  // pooler + classifier
    // DeBERTa's convolution after layer 0: a (D, D k) product per token.
    flops += 6 * T * D * D * static_cast<double>(c.conv_kernel_size);
  }
  return flops;
}

}  // namespace cpuft
