#include "model/model_params.h"

#include <algorithm>

#include "core/check.h"
#include "core/rng.h"

namespace cpuft {

ModelParams bind_params(const ParamLayout& layout, const ModelConfig& config, float* base) {
  const FamilyParamTables& tables = layout.tables();
  const std::vector<ParamSpec>& specs = layout.specs();
  size_t next = 0;  // the layout lists the tables' entries in table order
  // Points each entry's view at its tensor; a packed entry must follow the previous one directly.
  auto bind = [&](auto& views, const auto& entries, int64_t layer) {
    const float* end_of_previous = nullptr;
    for (const auto& e : entries) {
      if (!present(e, config, layer)) continue;
      CPUFT_CHECK(next < specs.size() && specs[next].name.ends_with(e.name), "layout and tables ",
                  "disagree at ", e.name);
      float* at = base + specs[next++].offset;
      CPUFT_CHECK(!e.packed_with_previous || at == end_of_previous, e.name, " is not packed");
      if (e.view != nullptr) views.*e.view = at;
      end_of_previous = at + specs[next - 1].numel;
    }
  };
  ModelParams p{};
  bind(p, tables.embeddings, -1);
  p.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  for (size_t l = 0; l < p.layers.size(); ++l)
    bind(p.layers[l], tables.layer, static_cast<int64_t>(l));
  bind(p, tables.head, -1);
  CPUFT_CHECK(next == specs.size(), "layout has ", specs.size(), " tensors, tables ", next);
  return p;
}

void init_random_weights(const ParamLayout& layout, float* params, float stddev, uint64_t seed) {
  for (const ParamSpec& spec : layout.specs()) {
    float* p = params + spec.offset;
    if (spec.kind == ParamKind::norm_weight) {
      std::fill_n(p, spec.numel, 1.0f);
    } else if (spec.kind == ParamKind::bias || spec.kind == ParamKind::norm_bias) {
      std::fill_n(p, spec.numel, 0.0f);
    } else {
      const RngKey key{seed, static_cast<uint64_t>(spec.offset)};
      for (int64_t i = 0; i < spec.numel; ++i)
        p[i] = stddev * normal_at(key, static_cast<uint64_t>(i));
    }
  }
}

}  // namespace cpuft
