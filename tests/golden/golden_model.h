// A golden fixture loaded for a test: its config, a flat weight buffer (with a gradient buffer
// beside it), its batch, and a model of the requested precision sized for that batch.
// GoldenModel holds what every fixture needs; TinyGolden fills the weights from the fixture's
// init.* tensors (tests/golden/minilm_fixture.h fills them from the real MiniLM checkpoint).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "golden/golden_util.h"
#include "io/hf_checkpoint.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "step/train_step.h"

namespace cpuft::golden {

struct GoldenModel {
  // The weights stay zero until the derived fixture loads them and calls refresh_bf16_weights.
  GoldenModel(const std::string& name, int64_t max_seq_len, MatmulPrecision precision)
      : file(SafetensorsFile::open(fixture_path(name))),
        config(parse_model_config(file.metadata().at("config"), file.label())),
        layout(config),
        params(static_cast<size_t>(layout.total_floats())),
        grads(static_cast<size_t>(layout.total_floats())),
        p(bind_params(layout, config, params.data())),
        g(bind_params(layout, config, grads.data())),
        batch(batch_from_fixture(file, config)),
        model(config,
              ModelLimits{batch.num_tokens(), batch.num_sequences(),
                          std::min(max_seq_len, config.max_sequence_length())},
              precision) {}

  struct StepRecord {
    float loss;        // before the step's update
    double grad_norm;  // pre-clip global norm
  };
  // Sees each step's gradients as AdamW receives them (after clipping).
  using GradObserver = std::function<void(int step, const float* grads)>;
  // The fixture's recipe (metadata "hyper", tests/fixtures/README.md): 3 steps of the trainer's
  // TrainStep on its batch (forward, backward, clip, AdamW, bf16 weight refresh, zeroing). The
  // step starts from zero gradients, whatever a gradient check left in `grads` before.
  std::array<StepRecord, 3> train_three_steps(const GradObserver& observe = nullptr) {
    const nlohmann::json hyper = metadata_json(file, "hyper");
    AdamW adamw(layout, AdamWOptions{hyper.at("beta1"), hyper.at("beta2"), hyper.at("eps"),
                                     hyper.at("weight_decay")});
    TrainStep train_step(model, layout, params, grads, adamw, StepOptions{42, 1, max_grad_norm()});
    struct Forward final : StepObserver {
      const GradObserver* observe;
      void on_clipped_gradients(int64_t step, std::span<const float> clipped) override {
        (*observe)(static_cast<int>(step), clipped.data());
      }
    } forward;
    forward.observe = &observe;
    if (observe) train_step.set_observer(&forward);
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
  ModelConfig config;
  ParamLayout layout;
  AlignedBuffer<float> params, grads;
  ModelParams p, g;
  Batch batch;
  SequenceClassifier model;
};

// The parameters whose exact gradient is zero, followed through the 3 steps: the unused embedding
// rows (golden_util.h) and the tensors of zero_true_grad (every attention.self.key.bias). Make it
// before training (it copies the initial weights), pass observer() to train_three_steps, then call
// the checks. docs/ARCHITECTURE.md ("Golden tolerances, argued") states what each one proves.
struct ZeroGradientWatch {
  explicit ZeroGradientWatch(const GoldenModel& t)
      : model(t),
        hyper(metadata_json(t.file, "hyper")),
        unused(unused_embedding_rows(t.layout, t.config, t.batch)),
        init(t.params.data(), t.params.data() + t.layout.total_floats()) {
    for (const std::string& name : zero_true_grad(t.file)) key_bias.push_back(&t.layout.at(name));
    for (int step = 0; step < 3; ++step) lrs[step] = hf_lr(hyper, step);
    key_bias_worst.check = fixture_name(t.file) + ": " + key_bias_worst.check;
  }

  // Checks, at every step, that cpuft's gradient is exactly 0 on the unused rows and within
  // kZeroGradBound of the step's (clipped) global norm on key.bias; keeps the key.bias gradients.
  GoldenModel::GradObserver observer() {
    return [this](int step, const float* grads) {
      int64_t nonzero = 0;
      for (const UnusedRows& u : unused)
        for (int64_t r : u.rows)
          for (int64_t i = 0; i < u.row_size; ++i)
            nonzero += grads[u.spec->offset + r * u.row_size + i] != 0;
      EXPECT_EQ(nonzero, 0) << "step " << step << ": gradient on rows no token looks up";
      const double global = l2(grads, model.layout.total_floats());
      for (const ParamSpec* spec : key_bias) {
        const float* g = grads + spec->offset;
        EXPECT_LE(l2(g, spec->numel), kZeroGradBound * global)
            << "step " << step << ": " << spec->name;
        key_bias_worst.see(l2(g, spec->numel) / global, spec->name);
        key_bias_grads[step].insert(key_bias_grads[step].end(), g, g + spec->numel);
      }
    };
  }

  // The fixture must have unused rows, or the decay-only check proves nothing.
  int64_t unused_row_count() const {
    int64_t n = 0;
    for (const UnusedRows& u : unused) n += static_cast<int64_t>(u.rows.size());
    return n;
  }

  // Unused rows after the 3 steps. There AdamW's moments stay 0, so HF (torch's fused AdamW) leaves
  // only the decoupled decay, w <- w * float32(1 - lr wd) per step; `want(spec, i)` is HF's value
  // of element i. cpuft writes the decay as w - float32(lr wd) w. Each is within 1 ulp of the exact
  // w (1 - lr wd) per step (torch: the factor's rounding, 2^-25 relative, then the product's;
  // cpuft: one rounding), and the map is a contraction, so over the S steps with lr wd > 0 the two
  // differ by less than 2S ulp of the initial value, and are equal when S = 0. Dropping the decay
  // moves an element by >= 1.5e-6 of itself (MiniLM; tiny 1.5e-5 and 1.2e-4), i.e. >= 12 ulp; an
  // Adam update of any size moves it by far more.
  template <typename Want>
  void check_decay_only(const Want& want) const {
    Worst worst{fixture_name(model.file) + ": unused rows after 3 steps, |ours - HF| in ulp bounds",
                1.0};
    int64_t elements = 0;
    for (const UnusedRows& u : unused) {
      const double wd = hf_weight_decay(model.file, u.spec->name);
      int decaying_steps = 0;
      for (double lr : lrs) decaying_steps += lr * wd > 0;
      const float* ours = model.params.data() + u.spec->offset;
      const float* w0 = init.data() + u.spec->offset;
      int64_t failures = 0;
      for (int64_t r : u.rows)
        for (int64_t i = r * u.row_size; i < (r + 1) * u.row_size; ++i) {
          const double diff = std::abs(static_cast<double>(ours[i]) - want(*u.spec, i));
          const double bound = 2 * decaying_steps * ulp(w0[i]);
          failures += !(diff <= bound);
          worst.see(diff == 0 ? 0 : diff / (bound > 0 ? bound : ulp(w0[i])), u.spec->name);
          ++elements;
        }
      EXPECT_EQ(failures, 0) << u.spec->name << ": unused rows are not the decay-only values";
    }
    EXPECT_GT(elements, 0) << "no unused rows: the check is empty";
    worst.print();
  }

  // key.bias after the 3 steps. Its gradient is rounding noise whose signs differ between
  // implementations, and AdamW divides it by its own RMS, so its values cannot be compared with
  // HF's. What is checked: cpuft's values equal AdamW (torch's formulas, in double, with HF's lr,
  // betas, eps and decay rule) applied to the gradients cpuft itself handed its optimizer, within
  // the rounding of its fp32 arithmetic (1 ulp of the value per step plus 1e-5 of each update, ~15x
  // the ~10 roundings an update sees). So the optimizer really ran on these tensors, with the right
  // hyper-parameters; together with the observer's bound on the gradients themselves, this is all
  // that is implementation-independent about them (their exact gradient is zero: they do not change
  // the loss).
  void check_key_bias_updates() const {
    const double b1 = hyper.at("beta1"), b2 = hyper.at("beta2"), eps = hyper.at("eps");
    Worst worst{fixture_name(model.file) +
                    ": key.bias after 3 steps vs AdamW on cpuft's gradients, in bounds",
                1.0};
    double largest_update = 0;
    size_t at = 0;
    for (const ParamSpec* spec : key_bias) {
      const double wd = hf_weight_decay(model.file, spec->name);
      int64_t failures = 0;
      for (int64_t i = 0; i < spec->numel; ++i, ++at) {
        double w = init[spec->offset + i], m = 0, v = 0, bound = 0;
        for (int step = 0; step < 3; ++step) {
          const double g = key_bias_grads[step].at(at), lr = lrs[step];
          m = b1 * m + (1 - b1) * g;
          v = b2 * v + (1 - b2) * g * g;
          const double bc1 = 1 - std::pow(b1, step + 1), bc2 = 1 - std::pow(b2, step + 1);
          const double update = lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + eps);
          w = w * (1 - lr * wd) - update;
          if (lr > 0) bound += ulp(static_cast<float>(w)) + 1e-5 * std::abs(update);
          largest_update = std::max(largest_update, std::abs(update));
        }
        const double diff = std::abs(model.params[spec->offset + i] - w);
        failures += !(diff <= bound);
        worst.see(diff == 0 ? 0 : bound > 0 ? diff / bound : INFINITY, spec->name);
      }
      EXPECT_EQ(failures, 0) << spec->name << ": not AdamW's update of cpuft's gradients";
    }
    EXPECT_EQ(at, key_bias_grads[2].size());
    worst.print();
    std::printf("[golden] key.bias: largest single AdamW update %.3g\n", largest_update);
  }

  void print_gradient_bound() const { key_bias_worst.print(); }

  const GoldenModel& model;
  nlohmann::json hyper;
  std::vector<UnusedRows> unused;
  std::vector<float> init;  // every parameter before the steps
  std::vector<const ParamSpec*> key_bias;
  std::array<double, 3> lrs{};
  std::array<std::vector<float>, 3> key_bias_grads;  // per step, key.bias tensors in layout order
  Worst key_bias_worst{"key.bias gradient / global gradient norm, all 3 steps", kZeroGradBound};
};

// A tiny-BERT fixture (golden_tiny_*.safetensors): every weight from its init.* tensors.
struct TinyGolden : GoldenModel {
  explicit TinyGolden(const std::string& name, MatmulPrecision precision = MatmulPrecision::f32)
      : GoldenModel(name, 64, precision) {
    const LoadReport report =
        load_hf_weights(file, layout, config, params.data(), LoadOptions{"init.", 0});
    EXPECT_TRUE(report.initialised.empty()) << "fixture lacks " << report.initialised.front();
    model.refresh_bf16_weights(p);  // a no-op for fp32
  }
};

}  // namespace cpuft::golden
