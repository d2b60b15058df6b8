// A golden fixture loaded for a test: its config, a flat weight buffer (with a gradient buffer
// beside it), its batch, and a model of the requested precision sized for that batch.
// GoldenModel holds what every fixture needs; TinyGolden fills the weights from the fixture's
// init.* tensors (tests/golden/minilm_fixture.h fills them from the real MiniLM checkpoint).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/buffer.h"
#include "golden/golden_util.h"
#include "io/bert_checkpoint.h"
#include "model/bert_model.h"
#include "model/param_layout.h"

namespace cpuft::golden {

struct GoldenModel {
  // The weights stay zero until the derived fixture loads them and calls refresh_bf16_weights.
  GoldenModel(const std::string& name, int64_t max_seq_len, MatmulPrecision precision)
      : file(SafetensorsFile::open(fixture_path(name))),
        config(parse_bert_config(file.metadata().at("config"), file.label())),
        layout(config),
        params(static_cast<size_t>(layout.total_floats())),
        grads(static_cast<size_t>(layout.total_floats())),
        p(bind_params(layout, config, params.data())),
        g(bind_params(layout, config, grads.data())),
        batch(batch_from_fixture(file, config)),
        model(config, ModelLimits{batch.num_tokens(), batch.num_sequences(), max_seq_len},
              precision) {}

  SafetensorsFile file;
  BertConfig config;
  ParamLayout layout;
  AlignedBuffer<float> params, grads;
  BertParams p, g;
  Batch batch;
  BertModel model;
};

// A tiny-BERT fixture (golden_tiny_*.safetensors): every weight from its init.* tensors.
struct TinyGolden : GoldenModel {
  explicit TinyGolden(const std::string& name, MatmulPrecision precision = MatmulPrecision::f32)
      : GoldenModel(name, 64, precision) {
    const LoadReport report =
        load_bert_weights(file, layout, config, params.data(), LoadOptions{"init.", 0});
    EXPECT_TRUE(report.initialised.empty()) << "fixture lacks " << report.initialised.front();
    model.refresh_bf16_weights(p);  // a no-op for fp32
  }
};

}  // namespace cpuft::golden
