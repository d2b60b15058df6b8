#include "model/bf16_weights.h"

#include "kernels/kernels.h"
#include "model/param_table.h"

namespace cpuft {

namespace {

// The copies of one layer, read off layer 0 of the layout: each matrix with a bf16 view, together
// with the tensors packed after it.
template <typename Copy>
std::vector<Copy> layer_copies(const ParamLayout& layout) {
  const std::string prefix = layer_prefix(layout.tables(), 0);
  std::vector<Copy> copies;
  bool in_copy = false;  // the previous entry belongs to the last copy
  for (const auto& e : layout.tables().layer) {
    // Absent here: ModernBERT's attn_norm (never a matrix), DeBERTa's own position projections
    // without share_att_key false (fp32 products, no copy either way).
    const ParamSpec* spec = layout.find(prefix + e.name);
    if (e.not_in_first_layer || spec == nullptr) {
      in_copy = false;
      continue;
    }
    const int64_t numel = spec->numel;
    if (e.bf16_view != nullptr) {
      copies.push_back(Copy{e.view, e.bf16_view, numel});
      in_copy = true;
    } else if (e.packed_with_previous && in_copy) {
      copies.back().numel += numel;
    } else {
      in_copy = false;
    }
  }
  return copies;
}

int64_t floats_per_layer(const auto& copies) {
  int64_t n = 0;
  for (const auto& c : copies) n += c.numel;
  return n;
}

}  // namespace

Bf16Weights::Bf16Weights(const ParamLayout& layout)
    : copies_(layer_copies<Copy>(layout)),
      storage_(static_cast<size_t>(floats_per_layer(copies_) * layout.layer_count())) {
  bf16* next = storage_.data();
  for (int64_t l = 0; l < layout.layer_count(); ++l) {
    LayerBf16Weights w{};
    for (const Copy& c : copies_) {
      w.*c.to = next;
      next += c.numel;
    }
    layers_.push_back(w);
  }
}

void Bf16Weights::refresh(const ModelParams& p) {
  const KernelTable& k = kernels();
  for (size_t l = 0; l < layers_.size(); ++l) {
    for (const Copy& c : copies_) k.round_to_bf16(layers_[l].*c.to, p.layers[l].*c.from, c.numel);
  }
  source_ = p.word_emb;
}

std::vector<Bf16Weights::Target> Bf16Weights::targets(const ModelParams& p) const {
  std::vector<Target> out;
  for (size_t l = 0; l < layers_.size(); ++l) {
    for (const Copy& c : copies_)
      out.push_back(Target{p.layers[l].*c.from, layers_[l].*c.to, c.numel});
  }
  return out;
}

}  // namespace cpuft
