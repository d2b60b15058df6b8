#include "model/bf16_weights.h"

#include "kernels/kernels.h"

namespace cpuft {

Bf16Weights::Bf16Weights(const BertConfig& c)
    : D_(c.hidden_size),
      F_(c.intermediate_size),
      storage_(static_cast<size_t>(c.num_hidden_layers * (4 * D_ * D_ + 2 * D_ * F_))) {
  bf16* next = storage_.data();
  auto take = [&next](int64_t n) {
    bf16* p = next;
    next += n;
    return p;
  };
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerBf16Weights w{};
    w.qkv_w = take(3 * D_ * D_);
    w.attn_out_w = take(D_ * D_);
    w.ffn_in_w = take(F_ * D_);
    w.ffn_out_w = take(D_ * F_);
    layers_.push_back(w);
  }
}

void Bf16Weights::refresh(const BertParams& p) {
  const KernelTable& k = kernels();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerParams& f = p.layers[l];
    const LayerBf16Weights& b = layers_[l];
    k.round_to_bf16(b.qkv_w, f.qkv_w, 3 * D_ * D_);
    k.round_to_bf16(b.attn_out_w, f.attn_out_w, D_ * D_);
    k.round_to_bf16(b.ffn_in_w, f.ffn_in_w, F_ * D_);
    k.round_to_bf16(b.ffn_out_w, f.ffn_out_w, D_ * F_);
  }
  source_ = p.word_emb;
}

}  // namespace cpuft
