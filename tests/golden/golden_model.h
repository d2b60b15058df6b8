// A golden fixture loaded for a test: its config, a flat weight buffer (with a gradient buffer
// beside it), its batch, and a model of the requested precision sized for that batch.
// GoldenModel holds what every fixture needs; TinyGolden fills the weights from the fixture's
// init.* tensors (tests/golden/minilm_fixture.h fills them from the real MiniLM checkpoint).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "core/buffer.h"
#include "golden/golden_util.h"
#include "io/bert_checkpoint.h"
#include "model/bert_model.h"
#include "model/param_layout.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "step/train_step.h"

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

  struct StepRecord {
    float loss;        // before the step's update
    double grad_norm;  // pre-clip global norm
  };
  // The fixture's recipe (metadata "hyper", tests/fixtures/README.md): 3 steps of the trainer's
  // TrainStep on its batch (forward, backward, clip, AdamW, bf16 weight refresh, zeroing). The
  // step starts from zero gradients, whatever a gradient check left in `grads` before.
  std::array<StepRecord, 3> train_three_steps() {
    const nlohmann::json hyper = metadata_json(file, "hyper");
    AdamW adamw(layout, AdamWOptions{hyper.at("beta1"), hyper.at("beta2"), hyper.at("eps"),
                                     hyper.at("weight_decay")});
    TrainStep train_step(model, layout, params, grads, adamw,
                         StepOptions{42, 0, 1, max_grad_norm()});
    const LrSchedule schedule = lr_schedule();
    std::array<StepRecord, 3> records{};
    for (int step = 0; step < 3; ++step) {
      const StepResult r = train_step.run(step, {&batch, 1}, schedule.lr(step));
      records[step] = {static_cast<float>(r.loss), r.grad_norm};  // one micro-batch: its loss
    }
    return records;
  }
  LrSchedule lr_schedule() const {
    const nlohmann::json hyper = metadata_json(file, "hyper");
    return LrSchedule{ScheduleKind::linear, hyper.at("lr"), hyper.at("warmup_steps"),
                      hyper.at("total_steps")};
  }
  double max_grad_norm() const { return metadata_json(file, "hyper").at("max_grad_norm"); }

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
