#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
#include "test_paths.h"

namespace cpuft {
namespace {

// clip_grad_norm (the norm torch computes; scaling when above max_norm), with and without
// MostlyZeroRows: the same norm and the same bits; the all-zero rows are left unwritten and the
// others scaled. Without clipping (norm below max_norm) nothing changes.
TEST(ClipGradNorm, MostlyZeroRowsGiveTheSameBits) {
  const int64_t head = 5, rows = 7, width = 6, tail = 3, n = head + rows * width + tail;
  std::vector<float> plain(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    plain[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i % 9) - 1;
  for (int64_t r : {0, 2, 3, 6})  // untouched rows (one of them holding a -0)
    for (int64_t i = 0; i < width; ++i) plain[static_cast<size_t>(head + r * width + i)] = 0.0f;
  plain[static_cast<size_t>(head + 3 * width + 1)] = -0.0f;
  std::vector<float> sparse = plain;
  double sum = 0;
  for (float g : plain) sum += static_cast<double>(g) * g;
  const double norm = clip_grad_norm(plain.data(), n, 1.0);
  EXPECT_NEAR(norm, std::sqrt(sum), 1e-9 * std::sqrt(sum));
  EXPECT_EQ(clip_grad_norm(sparse.data(), n, 1.0, MostlyZeroRows{head, rows, width}), norm);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(std::signbit(sparse[static_cast<size_t>(i)]),
              std::signbit(plain[static_cast<size_t>(i)]))
        << i;
  EXPECT_EQ(sparse, plain);
  EXPECT_LT(std::abs(plain[0] + 1.0f / static_cast<float>(std::sqrt(sum))), 1e-6f) << "scaled";
  std::vector<float> small = {0.1f, 0.0f, 0.2f, 0.0f}, kept = small;
  clip_grad_norm(small.data(), 4, 1.0, MostlyZeroRows{0, 2, 2});
  EXPECT_EQ(small, kept);
}

// Values of transformers.get_scheduler(name, opt, num_warmup_steps=2, num_training_steps=10) for
// base lr 1.0 at optimizer steps 0..10, computed by hand from the published lambdas.
TEST(LrSchedule, LinearWithWarmup) {
  LrSchedule s{ScheduleKind::linear, 1.0, 2, 10};
  EXPECT_DOUBLE_EQ(s.lr(0), 0.0);
  EXPECT_DOUBLE_EQ(s.lr(1), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(2), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(6), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(10), 0.0);
  EXPECT_DOUBLE_EQ(s.lr(12), 0.0);
}

TEST(LrSchedule, CosineWithWarmup) {
  LrSchedule s{ScheduleKind::cosine, 2.0, 2, 10};
  EXPECT_DOUBLE_EQ(s.lr(1), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(2), 2.0);
  EXPECT_NEAR(s.lr(6), 1.0, 1e-12);  // half-way: cos(pi/2) = 0 -> 0.5
  EXPECT_NEAR(s.lr(10), 0.0, 1e-12);
}

TEST(LrSchedule, ConstantKinds) {
  LrSchedule c{ScheduleKind::constant, 3.0, 5, 10};
  EXPECT_DOUBLE_EQ(c.lr(0), 3.0);
  LrSchedule w{ScheduleKind::constant_with_warmup, 3.0, 4, 10};
  EXPECT_DOUBLE_EQ(w.lr(1), 0.75);
  EXPECT_DOUBLE_EQ(w.lr(4), 3.0);
  EXPECT_DOUBLE_EQ(w.lr(9), 3.0);
}

TEST(LrSchedule, ParseNames) {
  EXPECT_EQ(parse_schedule_kind("cosine"), ScheduleKind::cosine);
  EXPECT_EQ(parse_schedule_kind("warmup_stable_decay"), ScheduleKind::warmup_stable_decay);
  EXPECT_THROW(parse_schedule_kind("polynomial-ish"), Error);
}

nlohmann::json read_json(const std::string& name) {
  std::ifstream in(testing::fixture_path(name));
  EXPECT_TRUE(in.good()) << name;
  return nlohmann::json::parse(in);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Every schedule kind against transformers.get_scheduler, step by step as the Trainer steps it
// (tests/fixtures/lr_schedules.json, tools/make_optim_fixtures.py): warmup 0 and > 0, totals the
// cycles do not divide, the kwargs of each kind, and steps past the total.
TEST(LrSchedule, EveryKindMatchesTransformers) {
  const nlohmann::json fixture = read_json("lr_schedules.json");
  std::set<std::string> kinds;
  int compared = 0;
  for (const nlohmann::json& c : fixture.at("cases")) {
    const std::string type = c.at("type");
    kinds.insert(type);
    const LrSchedule s = make_lr_schedule(type, c.at("learning_rate"), c.at("warmup_steps"),
                                          c.at("total_steps"), c.at("kwargs").dump());
    const std::vector<double> lrs = c.at("lrs");
    ASSERT_GT(lrs.size(), static_cast<size_t>(s.total_steps)) << type;
    for (size_t step = 0; step < lrs.size(); ++step) {
      // The same double operations as transformers' lambdas: equal up to libm's last bit.
      EXPECT_NEAR(s.lr(static_cast<int64_t>(step)), lrs[step], 1e-14 * std::abs(lrs[step]))
          << type << " " << c.at("kwargs").dump() << " warmup " << s.warmup_steps << " total "
          << s.total_steps << " step " << step;
      ++compared;
    }
  }
  EXPECT_EQ(kinds.size(), 10u) << "every supported kind is in the fixture";
  EXPECT_GT(compared, 500);
}

TEST(LrSchedule, KwargsAreCheckedInOneLine) {
  auto make = [](const std::string& type, const std::string& kwargs, double lr = 1e-3) {
    return error_of([&] { make_lr_schedule(type, lr, 2, 10, kwargs); });
  };
  EXPECT_EQ(make("linear", ""), "(no error)");
  EXPECT_EQ(make("linear", "{}"), "(no error)");
  EXPECT_NE(make("linear", R"({"num_cycles": 2})").find("linear takes no keyword arguments"),
            std::string::npos);
  EXPECT_NE(make("cosine", R"({"num_cycle": 2})").find("takes num_cycles, not 'num_cycle'"),
            std::string::npos);
  EXPECT_NE(make("cosine", R"({"last_epoch": 3})").find("'last_epoch'"), std::string::npos);
  EXPECT_NE(make("polynomial", R"({"lr_end": 0.01})").find("must be smaller"), std::string::npos);
  EXPECT_NE(make("cosine_with_min_lr", "{}").find("needs min_lr or min_lr_rate"),
            std::string::npos);
  EXPECT_NE(make("cosine_with_min_lr", R"({"min_lr": 1e-5, "min_lr_rate": 0.1})")
                .find("only one of min_lr or min_lr_rate"),
            std::string::npos);
  EXPECT_NE(make("warmup_stable_decay", "{}").find("needs num_decay_steps"), std::string::npos);
  EXPECT_NE(make("warmup_stable_decay", R"({"num_decay_steps": 3, "decay_type": "cubic"})")
                .find("'cubic'"),
            std::string::npos);
  EXPECT_NE(make("cosine", R"({"num_cycles": "two"})").find("must be a number"), std::string::npos);
  EXPECT_NE(make("cosine", "[1]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(make("cosine", "{num_cycles: 1").find("is not JSON"), std::string::npos);
  for (const char* adaptive : {"reduce_lr_on_plateau", "greedy"}) {
    const std::string e = make(adaptive, "");
    EXPECT_NE(e.find("not supported"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

// A small model's layout: its decaying and non-decaying tensors are what SGD's two groups see.
const char* kTinyConfig = R"({
  "vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
  "intermediate_size": 24, "max_position_embeddings": 16, "num_labels": 2
})";

// torch.optim.SGD as HF Trainer builds it, 4 steps (the first with lr 0), with and without
// momentum, dampening, nesterov and weight decay (tests/fixtures/sgd_steps.json: a decaying
// tensor "w" and a non-decaying "b" of 64 elements, from tools/make_optim_fixtures.py). Every
// decaying element of the layout replays w's element i % 64, every other one b's, so each
// element of the model is checked against torch's value.
TEST(Sgd, MatchesTorchThroughHfTrainersGroups) {
  const ModelConfig config = parse_model_config(kTinyConfig, "tiny.json");
  const ParamLayout layout(config);
  const nlohmann::json fixture = read_json("sgd_steps.json");
  int64_t decaying = 0;
  for (const ParamSpec& spec : layout.specs()) decaying += spec.decays ? spec.numel : 0;
  ASSERT_GT(decaying, 0);
  ASSERT_LT(decaying, layout.total_floats());
  auto fill = [&](std::vector<float>& flat, const nlohmann::json& wb) {
    const std::vector<float> w = wb.at("w"), b = wb.at("b");
    for (const ParamSpec& spec : layout.specs())
      for (int64_t i = 0; i < spec.numel; ++i)
        flat[static_cast<size_t>(spec.offset + i)] =
            (spec.decays ? w : b)[static_cast<size_t>(i) % w.size()];
  };
  const size_t n = static_cast<size_t>(layout.total_floats());
  for (const nlohmann::json& c : fixture.at("cases")) {
    const std::string args = c.at("optim_args");
    const std::string what =
        "optim_args '" + args + "' weight_decay " + c.at("weight_decay").dump();
    const auto opt = make_optimizer("sgd", args, layout,
                                    OptimizerOptions{0.9, 0.999, 1e-8, c.at("weight_decay")});
    EXPECT_STREQ(opt->state_kind(), "sgd");
    EXPECT_EQ(opt->state_buffers().size(),
              c.at("torch_kwargs").at("momentum").get<double>() != 0 ? 1u : 0u);
    std::vector<float> params(n), grads(n), want(n);
    fill(params, c.at("init"));
    int step = 0;
    double worst_ulps = 0;
    for (const nlohmann::json& s : c.at("steps")) {
      fill(grads, s.at("grad"));
      opt->step(params.data(), grads.data(), s.at("lr"), {});
      fill(want, s.at("after"));
      ++step;
      for (size_t i = 0; i < n; ++i) {
        const double ulp = std::nextafter(std::abs(want[i]), INFINITY) - std::abs(want[i]);
        const double ulps = std::abs(static_cast<double>(params[i]) - want[i]) / ulp;
        worst_ulps = std::max(worst_ulps, ulps);
        // torch's vectorised add(alpha=) is one fused multiply-add, as ours: a step may differ by
        // an ulp at most where the two libraries round differently.
        ASSERT_LE(ulps, step) << what << " step " << step << " element " << i;
      }
    }
    EXPECT_EQ(opt->steps_taken(), 4);
    std::printf("[sgd] %s: worst %.0f ulp from torch after 4 steps\n", what.c_str(), worst_ulps);
  }
}

TEST(MakeOptimizer, NamesAndOptimArgs) {
  const ModelConfig config = parse_model_config(kTinyConfig, "tiny.json");
  const ParamLayout layout(config);
  const OptimizerOptions options{0.9, 0.999, 1e-8, 0.01};
  for (const char* name : {"adamw_torch", "adamw_torch_fused"}) {
    const auto opt = make_optimizer(name, "", layout, options);
    EXPECT_NE(dynamic_cast<AdamW*>(opt.get()), nullptr) << name;
    EXPECT_STREQ(opt->state_kind(), "adamw");
    ASSERT_EQ(opt->state_buffers().size(), 2u);
    EXPECT_EQ(opt->state_buffers()[0].name, "exp_avg");
    EXPECT_EQ(opt->state_buffers()[1].name, "exp_avg_sq");
  }
  const auto sgd =
      make_optimizer("sgd", " momentum = 0.9 , nesterov=TRUE,dampening=0", layout, options);
  const Sgd* s = dynamic_cast<const Sgd*>(sgd.get());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->options().momentum, 0.9);
  EXPECT_TRUE(s->options().nesterov);
  EXPECT_EQ(s->options().weight_decay, 0.01);  // TrainingArguments.weight_decay, not optim_args
  EXPECT_FALSE(dynamic_cast<const Sgd*>(make_optimizer("sgd",
                                                       "momentum=0.5,nesterov=no,"
                                                       "weight_decay=0.3",
                                                       layout, options)
                                            .get())
                   ->options()
                   .nesterov);

  auto refusal = [&](const std::string& name, const std::string& args) {
    return error_of([&] { make_optimizer(name, args, layout, options); });
  };
  const std::string adafactor = refusal("adafactor", "");
  EXPECT_NE(adafactor.find("'adafactor' is not supported"), std::string::npos) << adafactor;
  EXPECT_NE(adafactor.find("adamw_torch, adamw_torch_fused or sgd"), std::string::npos);
  EXPECT_EQ(adafactor.find('\n'), std::string::npos);
  EXPECT_NE(refusal("adamw_torch", "momentum=0.9").find("takes no optim_args"), std::string::npos);
  EXPECT_NE(refusal("sgd", "momentum=fast").find("is not a number"), std::string::npos);
  EXPECT_NE(refusal("sgd", "momentum").find("is not key=value"), std::string::npos);
  EXPECT_NE(refusal("sgd", "betas=0.9").find("not 'betas'"), std::string::npos);
  EXPECT_NE(refusal("sgd", "nesterov=True").find("nesterov momentum requires"), std::string::npos);
  EXPECT_NE(refusal("sgd", "momentum=-1").find("invalid momentum"), std::string::npos);
}

// The interface TrainStep and the checkpoints use: AdamW is an Optimizer, its steps are counted.
TEST(Optimizer, StepsAreCountedAndRestorable) {
  const ModelConfig config = parse_model_config(kTinyConfig, "tiny.json");
  const ParamLayout layout(config);
  const size_t n = static_cast<size_t>(layout.total_floats());
  std::vector<float> params(n, 1.0f), grads(n, 0.5f);
  for (const char* name : {"adamw_torch", "sgd"}) {
    const auto opt = make_optimizer(name, "", layout, OptimizerOptions{});
    Optimizer& o = *opt;
    o.step(params.data(), grads.data(), 1e-3, {});
    o.step(params.data(), grads.data(), 1e-3, {});
    EXPECT_EQ(o.steps_taken(), 2) << name;
    o.set_steps_taken(7);
    EXPECT_EQ(o.steps_taken(), 7) << name;
  }
}

// Every optimizer's update pass is the separate passes it replaces: the clip's scaling, the
// update, the bf16 rounding of the new values (for the tensors given a copy), the zeroing of the
// gradients (for the tensors so marked). SGD with momentum and AdamW; two steps, so that state
// carries over.
TEST(Optimizer, UpdatePassEqualsTheSeparatePasses) {
  const ModelConfig config = parse_model_config(kTinyConfig, "tiny.json");
  const ParamLayout layout(config);
  const size_t n = static_cast<size_t>(layout.total_floats()), specs = layout.specs().size();
  std::vector<float> params0(n), grads0(n);
  for (size_t i = 0; i < n; ++i) {
    params0[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
    grads0[i] = static_cast<float>(0.01 * std::cos(0.11 * static_cast<double>(i)));
  }
  std::vector<bf16> copies(n);
  std::vector<bf16*> copy_of(specs, nullptr);
  std::vector<uint8_t> zeroes(specs, 0);
  for (size_t s = 0; s < specs; s += 2) copy_of[s] = copies.data() + layout.specs()[s].offset;
  for (size_t s = 1; s < specs; s += 3) zeroes[s] = 1;
  const float coef = 0.37f;
  for (const auto& [name, args] : std::vector<std::pair<std::string, std::string>>{
           {"sgd", "momentum=0.9"}, {"adamw_torch", ""}}) {
    const auto one = make_optimizer(name, args, layout, OptimizerOptions{.weight_decay = 0.01});
    const auto separate =
        make_optimizer(name, args, layout, OptimizerOptions{.weight_decay = 0.01});
    std::vector<float> p1 = params0, p2 = params0;
    for (int step = 0; step < 2; ++step) {
      std::vector<float> g1 = grads0, g2 = grads0;
      one->step(
          p1.data(), g1.data(), 1e-2,
          UpdatePass{
              .grad_scale = coef, .bf16_copy = copy_of, .zero_grad = zeroes, .sparse_rows = {}});
      for (float& g : g2) g *= coef;
      separate->step(p2.data(), g2.data(), 1e-2, {});
      EXPECT_EQ(p1, p2) << name << " step " << step;
      for (size_t s = 0; s < specs; ++s) {
        const ParamSpec& spec = layout.specs()[s];
        for (int64_t i = spec.offset; i < spec.offset + spec.numel; ++i) {
          const auto u = static_cast<size_t>(i);
          const float want_g = zeroes[s] != 0 ? 0.0f : grads0[u];
          ASSERT_EQ(g1[u], want_g) << name << " " << spec.name;
          if (copy_of[s] != nullptr) {
            ASSERT_EQ(copies[u].bits, round_to_bf16(p1[u]).bits) << name << " " << spec.name;
          }
        }
      }
    }
  }
}

// UpdatePass::sparse_rows (the word table): AdamW updates the rows a step touched as the whole
// tensor's update does and only decays the others (gradient +-0, moments +0).
// Over four steps a row touched once must keep being updated (its moments decay), a row first
// touched at step 3 must start then, and never-touched rows must be left out: one of those holds
// a weight of -0, which the whole-tensor kernel turns into +0 (w - 0 * w) and a left-out row keeps
// (as torch's update does). With weight decay the untouched rows are decayed: the same bits.
TEST(AdamW, SparseRowsLeaveOutOnlyRowsTheUpdateWouldNotChange) {
  const ModelConfig config = parse_model_config(kTinyConfig, "tiny.json");
  const ParamLayout layout(config);
  const size_t n = static_cast<size_t>(layout.total_floats());
  const ParamSpec* table = nullptr;
  size_t table_index = 0;
  for (size_t s = 0; s < layout.specs().size(); ++s)
    if (layout.specs()[s].name.find("word_embeddings") != std::string::npos) {
      table = &layout.specs()[s];
      table_index = s;
    }
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->shape.size(), 2u);
  const int64_t rows = table->shape[0], width = table->shape[1];
  ASSERT_GE(rows, 8);
  const MostlyZeroRows sparse{table->offset, rows, width};
  // Row 1: touched at step 0 only; row 4: from step 2 on; rows 2 and 6 at every step; the rest
  // never (row 5 holds the -0 weight and a -0 gradient element).
  auto touched = [](int64_t row, int step) {
    return row == 2 || row == 6 || (row == 1 && step == 0) || (row == 4 && step >= 2);
  };
  std::vector<float> params0(n);
  for (size_t i = 0; i < n; ++i)
    params0[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  const auto at = [&](int64_t row, int64_t col) {
    return static_cast<size_t>(table->offset + row * width + col);
  };
  params0[at(5, 3)] = -0.0f;
  for (const double weight_decay : {0.0, 0.01}) {
    // With weight decay every decaying tensor gets it; the table is what the two passes differ on.
    AdamW whole(layout, AdamWOptions{.weight_decay = weight_decay});
    AdamW by_rows(layout, AdamWOptions{.weight_decay = weight_decay});
    std::vector<float> p1 = params0, p2 = params0;
    // The copies start as the rounding of the weights, as Bf16Weights' do: a left-out row's stays.
    std::vector<bf16> c1(n), c2(n);
    for (size_t i = 0; i < n; ++i) c1[i] = c2[i] = round_to_bf16(params0[i]);
    std::vector<bf16*> copy1(layout.specs().size(), nullptr), copy2 = copy1;
    copy1[table_index] = c1.data() + table->offset;
    copy2[table_index] = c2.data() + table->offset;
    for (int step = 0; step < 4; ++step) {
      std::vector<float> g(n, 0.0f);
      for (size_t i = 0; i < n; ++i) {
        const auto idx = static_cast<int64_t>(i);
        const bool in_table = idx >= table->offset && idx < table->offset + table->numel;
        if (!in_table || touched((idx - table->offset) / width, step))
          g[i] = static_cast<float>(0.01 * std::cos(0.11 * static_cast<double>(i) + step));
      }
      g[at(5, 1)] = -0.0f;
      std::vector<float> g2 = g;
      whole.step(
          p1.data(), g.data(), 1e-2,
          UpdatePass{.grad_scale = 1, .bf16_copy = copy1, .zero_grad = {}, .sparse_rows = {}});
      by_rows.step(
          p2.data(), g2.data(), 1e-2,
          UpdatePass{.grad_scale = 1, .bf16_copy = copy2, .zero_grad = {}, .sparse_rows = sparse});
      for (size_t i = 0; i < n; ++i) {
        if (i == at(5, 3)) continue;
        ASSERT_EQ(p2[i], p1[i]) << "weight decay " << weight_decay << " step " << step << " at "
                                << i;
        ASSERT_EQ(by_rows.exp_avg()[i], whole.exp_avg()[i]) << i;
        ASSERT_EQ(by_rows.exp_avg_sq()[i], whole.exp_avg_sq()[i]) << i;
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < width; ++c) {
          const size_t i = at(r, c);
          if (i == at(5, 3)) continue;
          ASSERT_EQ(c2[i].bits, c1[i].bits) << "row " << r;
        }
      EXPECT_TRUE(std::signbit(p2[at(5, 3)]) == (weight_decay == 0))
          << "a never-touched row is left out only without weight decay";
      EXPECT_FALSE(std::signbit(p1[at(5, 3)])) << "the whole tensor's update returns +0";
    }
  }
}

}  // namespace
}  // namespace cpuft
