#include "model/bert_params.h"

#include <algorithm>

#include "core/check.h"
#include "core/rng.h"

namespace cpuft {

BertParams bind_params(const ParamLayout& layout, const BertConfig& config, float* base) {
  auto at = [&](const std::string& name) { return base + layout.at(name).offset; };
  BertParams p{};
  p.word_emb = at("bert.embeddings.word_embeddings.weight");
  p.pos_emb = at("bert.embeddings.position_embeddings.weight");
  p.type_emb = at("bert.embeddings.token_type_embeddings.weight");
  p.emb_ln_w = at("bert.embeddings.LayerNorm.weight");
  p.emb_ln_b = at("bert.embeddings.LayerNorm.bias");
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const std::string prefix = str("bert.encoder.layer.", l, ".");
    LayerParams lp{};
    lp.qkv_w = at(prefix + "attention.self.query.weight");
    lp.qkv_b = at(prefix + "attention.self.query.bias");
    // The packed QKV product relies on key/value following query without a gap.
    const int64_t D = config.hidden_size;
    CPUFT_CHECK(at(prefix + "attention.self.value.weight") == lp.qkv_w + 2 * D * D);
    CPUFT_CHECK(at(prefix + "attention.self.value.bias") == lp.qkv_b + 2 * D);
    lp.attn_out_w = at(prefix + "attention.output.dense.weight");
    lp.attn_out_b = at(prefix + "attention.output.dense.bias");
    lp.attn_ln_w = at(prefix + "attention.output.LayerNorm.weight");
    lp.attn_ln_b = at(prefix + "attention.output.LayerNorm.bias");
    lp.ffn_in_w = at(prefix + "intermediate.dense.weight");
    lp.ffn_in_b = at(prefix + "intermediate.dense.bias");
    lp.ffn_out_w = at(prefix + "output.dense.weight");
    lp.ffn_out_b = at(prefix + "output.dense.bias");
    lp.ffn_ln_w = at(prefix + "output.LayerNorm.weight");
    lp.ffn_ln_b = at(prefix + "output.LayerNorm.bias");
    p.layers.push_back(lp);
  }
  p.pooler_w = at("bert.pooler.dense.weight");
  p.pooler_b = at("bert.pooler.dense.bias");
  p.cls_w = at("classifier.weight");
  p.cls_b = at("classifier.bias");
  return p;
}

void init_random_weights(const ParamLayout& layout, float* params, float stddev, uint64_t seed) {
  for (const ParamSpec& spec : layout.specs()) {
    float* p = params + spec.offset;
    if (spec.name.find("LayerNorm.weight") != std::string::npos) {
      std::fill_n(p, spec.numel, 1.0f);
    } else if (spec.name.ends_with(".bias")) {
      std::fill_n(p, spec.numel, 0.0f);
    } else {
      const RngKey key{seed, static_cast<uint64_t>(spec.offset)};
      for (int64_t i = 0; i < spec.numel; ++i)
        p[i] = stddev * normal_at(key, static_cast<uint64_t>(i));
    }
  }
}

}  // namespace cpuft
