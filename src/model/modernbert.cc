#include "model/modernbert.h"

#include <omp.h>

#include <algorithm>

#include "core/buffer.h"
#include "core/check.h"
#include "core/profile.h"
#include "gemm/matmul_plan.h"
#include "kernels/kernels.h"
#include "model/arena_carver.h"
#include "model/attention.h"
#include "model/bf16_weights.h"
#include "model/dropout_streams.h"
#include "model/encoder_layer.h"
#include "model/packed_dropout.h"
#include "model/rotary.h"

namespace cpuft {

namespace {

// Dropout streams: model/dropout_streams.h, with encoder_layer.h's layer sites (kFfnOutput is the
// GeGLU output's dropout here).

// What one layer keeps for backward (views into the arena). Layer 0 has no attn_norm: its xn is
// its input, and xn/xn_mean/xn_rstd stay nullptr.
struct ModernLayerActivations {
  float *xn, *xn_mean, *xn_rstd;      // (N, D), (N), (N) attn_norm(x)
  float* qkv;                         // (N, 3D) queries and keys rotated
  float* probs;                       // attention probabilities (attention.h)
  float* ctx;                         // (N, D)
  float* s1;                          // (N, D) x + attention branch
  float *hn, *hn_mean, *hn_rstd;      // (N, D), (N), (N) mlp_norm(s1)
  float* wi;                          // (N, 2F) GeGLU input and gate
  float* act;                         // (N, F) dropout(gelu(input) * gate), the input of Wo2
  float* out;                         // (N, D)
  bf16 *xn_b, *ctx_b, *hn_b, *act_b;  // bf16 product inputs (nullptr in fp32)
};

// y = a + b over n elements.
void add(float* y, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

// act (N, F) = gelu(wi[:, :F]) * wi[:, F:]   (HF's ModernBertMLP: input, gate = Wi(x).chunk(2))
void geglu_forward(const KernelTable& k, float* act, const float* wi, int64_t N, int64_t F) {
  CPUFT_PROFILE("geglu.fwd");
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < N; ++r) {
    const float* input = wi + r * 2 * F;
    const float* gate = input + F;
    float* y = act + r * F;
    k.gelu_forward(y, input, F);
    for (int64_t j = 0; j < F; ++j) y[j] *= gate[j];
  }
}

// d_wi (N, 2F) from d_act (N, F): d_input = d_act * gate * gelu'(input), d_gate = d_act *
// gelu(input) (recomputed).
void geglu_backward(const KernelTable& k, float* d_wi, const float* d_act, const float* wi,
                    int64_t N, int64_t F) {
  CPUFT_PROFILE("geglu.bwd");
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < N; ++r) {
    const float* input = wi + r * 2 * F;
    const float* gate = input + F;
    const float* d_y = d_act + r * F;
    float* d_input = d_wi + r * 2 * F;
    float* d_gate = d_input + F;
    k.gelu_forward(d_gate, input, F);
    for (int64_t j = 0; j < F; ++j) {
      d_gate[j] *= d_y[j];
      d_input[j] = d_y[j] * gate[j];
    }
    k.gelu_backward(d_input, d_input, input, F);
  }
}

}  // namespace

// The activations and scratch of one forward/backward, carved from one arena sized for the
// model's limits; counting alone (base == nullptr) sizes it: activation_bytes.
struct ModernBuffers {
  // Carves every buffer from the arena; with base == nullptr only counts floats. Under bf16 the
  // fp32 xn, ctx, hn and act of a layer are read only by its own forward (backward reads their
  // bf16 roundings), so all layers share one set, as in SequenceClassifier.
  int64_t carve(const ModelConfig& c, const ModelLimits& limits, MatmulPrecision precision,
                float* base) {
    const int64_t N = limits.max_tokens, B = limits.max_sequences, T = limits.max_seq_len;
    const int64_t D = c.hidden_size, F = c.intermediate_size, H = c.num_attention_heads;
    const int64_t K = c.num_labels;
    ArenaCarver<float> a(base);
    emb = a.take(N * D);
    emb_mean = a.take(N);
    emb_rstd = a.take(N);
    emb_ln = a.take(N * D);
    h0 = a.take(N * D);
    layers.assign(static_cast<size_t>(c.num_hidden_layers), ModernLayerActivations{});
    const bool shared = precision == MatmulPrecision::bf16;
    float* shared_xn = shared ? a.take(N * D) : nullptr;
    float* shared_ctx = shared ? a.take(N * D) : nullptr;
    float* shared_hn = shared ? a.take(N * D) : nullptr;
    float* shared_act = shared ? a.take(N * F) : nullptr;
    for (size_t l = 0; l < layers.size(); ++l) {
      ModernLayerActivations& x = layers[l];
      if (l > 0) {
        x.xn = shared ? shared_xn : a.take(N * D);
        x.xn_mean = a.take(N);
        x.xn_rstd = a.take(N);
      }
      x.qkv = a.take(N * 3 * D);
      x.probs = a.take(H * T * N);  // sum_s T_s^2 <= T N per head
      x.ctx = shared ? shared_ctx : a.take(N * D);
      x.s1 = a.take(N * D);
      x.hn = shared ? shared_hn : a.take(N * D);
      x.hn_mean = a.take(N);
      x.hn_rstd = a.take(N);
      x.wi = a.take(N * 2 * F);
      x.act = shared ? shared_act : a.take(N * F);
      x.out = a.take(N * D);
    }
    fin = a.take(N * D);
    fin_mean = a.take(N);
    fin_rstd = a.take(N);
    pooled = a.take(B * D);
    head_pre = a.take(B * D);
    head_act = a.take(B * D);
    head_ln = a.take(B * D);
    head_mean = a.take(B);
    head_rstd = a.take(B);
    head_drop = a.take(B * D);
    logits = a.take(B * K);
    d_logits = a.take(B * K);
    d_head = a.take(B * D);
    d_head_pre = a.take(B * D);
    d_pooled = a.take(B * D);
    d_hidden[0] = a.take(N * D);
    d_hidden[1] = a.take(N * D);
    for (float*& p : nd) p = a.take(N * D);
    nf = a.take(N * F);
    n2f = a.take(N * 2 * F);
    n3d = a.take(N * 3 * D);
    attention_per_thread = attention_scratch_floats(T);
    attention = a.take(attention_per_thread * omp_get_max_threads());
    zeros = a.take(D);
    junk = a.take(D);
    return a.used();
  }

  // The bf16 product inputs (bf16 models only); with base == nullptr only counts.
  int64_t carve_bf16(const ModelConfig& c, const ModelLimits& limits, bf16* base) {
    const int64_t N = limits.max_tokens, D = c.hidden_size, F = c.intermediate_size;
    ArenaCarver<bf16> a(base);
    for (ModernLayerActivations& x : layers) {
      x.xn_b = a.take(N * D);
      x.ctx_b = a.take(N * D);
      x.hn_b = a.take(N * D);
      x.act_b = a.take(N * F);
    }
    grad_b = a.take(N * std::max(3 * D, 2 * F));
    return a.used();
  }

  float *emb, *emb_mean, *emb_rstd, *emb_ln, *h0;
  std::vector<ModernLayerActivations> layers;
  float *fin, *fin_mean, *fin_rstd;  // final_norm of the last layer's output
  float *pooled, *head_pre, *head_act, *head_ln, *head_mean, *head_rstd, *head_drop;  // (B, D)
  float *logits, *d_logits;                                                           // (B, K)
  float *d_head, *d_head_pre, *d_pooled;                                              // (B, D)
  float* d_hidden[2];  // 2 x (N, D), ping-pong between layers
  float* nd[3];        // 3 x (N, D) scratch
  float *nf, *n2f, *n3d;
  float* attention;
  int64_t attention_per_thread = 0;
  bf16* grad_b = nullptr;
  float* zeros;  // (D) beta of the bias-free LayerNorms
  float* junk;   // (D) where their beta gradients go

  std::vector<int64_t> prob_offsets, local_sample_ids;
  const int64_t* sample_ids = nullptr;
  const Batch* batch = nullptr;
  StepContext context;
};

struct ModernBertClassifier::State : ModernBuffers {
  State(const ModelConfig& c, const ModelLimits& limits, MatmulPrecision precision)
      : qkv(limits.max_tokens, c.hidden_size, 3 * c.hidden_size, precision, "qkv", false),
        attn_out(limits.max_tokens, c.hidden_size, c.hidden_size, precision, "attn_out", false),
        ffn_in(limits.max_tokens, c.hidden_size, 2 * c.intermediate_size, precision, "ffn_in",
               false),
        ffn_out(limits.max_tokens, c.intermediate_size, c.hidden_size, precision, "ffn_out", false),
        head_dense(limits.max_sequences, c.hidden_size, c.hidden_size, MatmulPrecision::f32,
                   "head_dense", false),
        head_out(limits.max_sequences, c.hidden_size, c.num_labels, MatmulPrecision::f32,
                 "head_out"),
        global_rope(c.global_rope_theta, c.head_dim(), limits.max_seq_len),
        local_rope(c.local_rope_theta, c.head_dim(), limits.max_seq_len) {
    if (precision == MatmulPrecision::bf16)
      bf16_weights = std::make_unique<Bf16Weights>(ParamLayout(c));
  }

  const LayerBf16Weights* bf16_layer(size_t l) const {
    return bf16_weights ? &bf16_weights->layer(l) : nullptr;
  }

  LinearPlans qkv, attn_out, ffn_in, ffn_out, head_dense, head_out;
  RotaryTable global_rope, local_rope;
  std::unique_ptr<Bf16Weights> bf16_weights;
  AlignedBuffer<float> arena;
  AlignedBuffer<bf16> bf16_arena;
};

ModernBertClassifier::ModernBertClassifier(const ModelConfig& config, const ModelLimits& limits,
                                           MatmulPrecision precision)
    : config_(config), state_(std::make_unique<State>(config, limits, precision)) {
  CPUFT_CHECK(config.family == Family::modernbert,
              "ModernBertClassifier needs a modernbert config");
  State& s = *state_;
  s.arena = AlignedBuffer<float>(static_cast<size_t>(s.carve(config, limits, precision, nullptr)),
                                 FirstTouch::on_use);
  s.carve(config, limits, precision, s.arena.data());
  std::fill_n(s.zeros, config.hidden_size, 0.0f);
  if (precision == MatmulPrecision::bf16) {
    s.bf16_arena = AlignedBuffer<bf16>(static_cast<size_t>(s.carve_bf16(config, limits, nullptr)),
                                       FirstTouch::on_use);
    s.carve_bf16(config, limits, s.bf16_arena.data());
  }
  s.prob_offsets.resize(static_cast<size_t>(limits.max_sequences + 1));
  s.local_sample_ids.resize(static_cast<size_t>(limits.max_sequences));
  for (size_t i = 0; i < s.local_sample_ids.size(); ++i)
    s.local_sample_ids[i] = static_cast<int64_t>(i);
}

ModernBertClassifier::~ModernBertClassifier() = default;

int64_t ModernBertClassifier::activation_bytes(const ModelConfig& config, const ModelLimits& limits,
                                               MatmulPrecision precision) {
  ModernBuffers counter;
  int64_t bytes =
      counter.carve(config, limits, precision, nullptr) * static_cast<int64_t>(sizeof(float));
  if (precision == MatmulPrecision::bf16)
    bytes += counter.carve_bf16(config, limits, nullptr) * static_cast<int64_t>(sizeof(bf16));
  return bytes;
}

void ModernBertClassifier::refresh_bf16_weights(const ModelParams& params) {
  if (state_->bf16_weights) state_->bf16_weights->refresh(params);
}

std::vector<Bf16Weights::Target> ModernBertClassifier::bf16_targets(const ModelParams& params) {
  if (!state_->bf16_weights) return {};
  return state_->bf16_weights->targets(params);
}

const float* ModernBertClassifier::logits() const {
  return state_->logits;
}

float* ModernBertClassifier::d_logits() {
  return state_->d_logits;
}

namespace {

struct LayerContext {
  const KernelTable& k;
  const ModelConfig& c;
  int64_t N, B;
  const int64_t* seq_offsets;
  const int64_t* prob_offsets;
  const int64_t* sample_ids;
  float mlp_dropout, attention_dropout;

  AttentionDims attention(size_t l) const {
    return AttentionDims{c.hidden_size, c.num_attention_heads, c.head_dim(),
                         c.sliding_layers[l] ? c.sliding_half_window() : -1};
  }
  PackedRows rows(int64_t width) const { return PackedRows{B, seq_offsets, sample_ids, width}; }
};

// The batch's geometry and the layers' dropout rates (0 outside training), for forward and
// backward alike.
LayerContext layer_context(const KernelTable& k, const ModelConfig& c, const Batch& batch,
                           const int64_t* prob_offsets, const int64_t* sample_ids, bool training) {
  return LayerContext{k,
                      c,
                      batch.num_tokens(),
                      batch.num_sequences(),
                      batch.seq_offsets.data(),
                      prob_offsets,
                      sample_ids,
                      training ? static_cast<float>(c.hidden_dropout_prob) : 0.0f,
                      training ? static_cast<float>(c.attention_probs_dropout_prob) : 0.0f};
}

}  // namespace

void ModernBertClassifier::forward(const ModelParams& p, const Batch& batch,
                                   const StepContext& context) {
  State& s = *state_;
  const KernelTable& k = kernels();
  const ModelConfig& c = config_;
  const int64_t N = batch.num_tokens(), B = batch.num_sequences();
  const int64_t D = c.hidden_size, F = c.intermediate_size;
  const float eps = static_cast<float>(c.layer_norm_eps);
  CPUFT_CHECK(!s.bf16_weights || s.bf16_weights->source() == p.word_emb,
              "bf16 model: refresh_bf16_weights() was not called for these weights");
  s.sample_ids = batch.sample_ids.empty() ? s.local_sample_ids.data() : batch.sample_ids.data();
  s.batch = &batch;
  s.context = context;
  attention_prob_offsets(s.prob_offsets.data(), batch.seq_offsets.data(), B, c.num_attention_heads);
  const bool training = context.training;
  const LayerContext lc = layer_context(k, c, batch, s.prob_offsets.data(), s.sample_ids, training);

  // Embeddings: h0 = dropout(LayerNorm(tok[ids]))
  {
    const int32_t* ids = batch.input_ids.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < N; ++i) std::copy_n(p.word_emb + ids[i] * D, D, s.emb + i * D);
    k.layer_norm_forward(s.emb_ln, s.emb_mean, s.emb_rstd, s.emb, p.emb_ln_w, s.zeros, eps, N, D);
    packed_dropout_forward(k, s.h0, s.emb_ln,
                           training ? static_cast<float>(c.embedding_dropout) : 0.0f,
                           dropout_key(context, kEmbeddingsDropoutLayer, 0), lc.rows(D));
  }

  const float* x = s.h0;
  for (size_t l = 0; l < s.layers.size(); ++l) {
    ModernLayerActivations& a = s.layers[l];
    const LayerParams& lp = p.layers[l];
    const LayerWeights w = layer_weights(lp, s.bf16_layer(l));
    const uint32_t layer = static_cast<uint32_t>(l);
    const AttentionDims dims = lc.attention(l);
    float* tmp = s.nd[0];
    // xn = attn_norm(x) (identity in layer 0); qkv = rotary(xn Wqkv^T); ctx = attention(qkv)
    const float* xn = x;
    if (l > 0) {
      k.layer_norm_forward(a.xn, a.xn_mean, a.xn_rstd, x, lp.attn_ln_w, s.zeros, eps, N, D);
      xn = a.xn;
    }
    s.qkv.forward(a.qkv, as_input(xn, a.xn_b, N * D), w.qkv, nullptr, N);
    rotary_forward(a.qkv, lc.seq_offsets, B, dims,
                   c.sliding_layers[l] ? s.local_rope : s.global_rope);
    attention_forward(a.ctx, a.probs, a.qkv, lc.seq_offsets, lc.prob_offsets, s.sample_ids, B, dims,
                      lc.attention_dropout, dropout_key(context, layer, kAttentionProbs),
                      s.attention, s.attention_per_thread);
    // s1 = x + dropout(ctx Wo^T)
    s.attn_out.forward(tmp, as_input(a.ctx, a.ctx_b, N * D), w.attn_out, nullptr, N);
    packed_dropout_forward(k, tmp, tmp, lc.attention_dropout,
                           dropout_key(context, layer, kAttentionOutput), lc.rows(D));
    add(a.s1, x, tmp, N * D);
    // out = s1 + dropout(gelu(a) * g) Wo2^T, [a | g] = mlp_norm(s1) Wi^T
    k.layer_norm_forward(a.hn, a.hn_mean, a.hn_rstd, a.s1, lp.ffn_ln_w, s.zeros, eps, N, D);
    s.ffn_in.forward(a.wi, as_input(a.hn, a.hn_b, N * D), w.ffn_in, nullptr, N);
    geglu_forward(k, a.act, a.wi, N, F);
    packed_dropout_forward(k, a.act, a.act, lc.mlp_dropout, dropout_key(context, layer, kFfnOutput),
                           lc.rows(F));
    s.ffn_out.forward(tmp, as_input(a.act, a.act_b, N * F), w.ffn_out, nullptr, N);
    add(a.out, a.s1, tmp, N * D);
    x = a.out;
  }

  // fin = final_norm(x); pooled = the first token or the mean of each sequence's rows
  k.layer_norm_forward(s.fin, s.fin_mean, s.fin_rstd, x, p.final_ln_w, s.zeros, eps, N, D);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = lc.seq_offsets[b], T = lc.seq_offsets[b + 1] - start;
    float* pooled = s.pooled + b * D;
    if (!c.mean_pooling) {
      std::copy_n(s.fin + start * D, D, pooled);
      continue;
    }
    // HF: (hidden * mask).sum(dim=1) / mask.sum(dim=1), in the tokens' order.
    std::fill_n(pooled, D, 0.0f);
    for (int64_t i = start; i < start + T; ++i)
      for (int64_t j = 0; j < D; ++j) pooled[j] += s.fin[i * D + j];
    for (int64_t j = 0; j < D; ++j) pooled[j] /= static_cast<float>(T);
  }

  // Head: logits = classifier(dropout(head.norm(gelu(pooled Wd^T))))
  const PackedRows head_rows{B, nullptr, s.sample_ids, D};
  s.head_dense.forward(s.head_pre, s.pooled, p.head_dense_w, nullptr, B);
  k.gelu_forward(s.head_act, s.head_pre, B * D);
  k.layer_norm_forward(s.head_ln, s.head_mean, s.head_rstd, s.head_act, p.head_ln_w, s.zeros, eps,
                       B, D);
  packed_dropout_forward(k, s.head_drop, s.head_ln,
                         training ? c.effective_classifier_dropout() : 0.0f,
                         dropout_key(context, kClassifierDropoutLayer, 0), head_rows);
  s.head_out.forward(s.logits, s.head_drop, p.head_out_w, p.head_out_b, B);
}

void ModernBertClassifier::backward(const ModelParams& p, const ModelParams& g,
                                    GradListener* listener) {
  State& s = *state_;
  CPUFT_CHECK(s.batch != nullptr, "backward needs a forward first");
  const KernelTable& k = kernels();
  const ModelConfig& c = config_;
  const Batch& batch = *s.batch;
  const StepContext& context = s.context;
  const int64_t N = batch.num_tokens(), B = batch.num_sequences();
  const int64_t D = c.hidden_size, F = c.intermediate_size, K = c.num_labels;
  const bool training = context.training;
  const LayerContext lc = layer_context(k, c, batch, s.prob_offsets.data(), s.sample_ids, training);
  auto ready = [&](int layer) {
    if (listener != nullptr) listener->on_layer_grads_ready(layer);
  };
  std::fill_n(s.junk, D, 0.0f);

  // undo: logits = head_drop Wc^T + bc    (d_logits came from the loss)
  s.head_out.backward_weights(g.head_out_w, s.d_logits, s.head_drop, B);
  k.bias_backward(g.head_out_b, s.d_logits, B, K);
  s.head_out.backward_data(s.d_head, s.d_logits, p.head_out_w, B);
  ready(classifier_layer(c));
  // undo: head_drop = dropout(head.norm(gelu(head_pre))); head_pre = pooled Wd^T
  packed_dropout_backward(k, s.d_head, s.d_head, training ? c.effective_classifier_dropout() : 0.0f,
                          dropout_key(context, kClassifierDropoutLayer, 0),
                          PackedRows{B, nullptr, s.sample_ids, D});
  k.layer_norm_backward(s.d_head_pre, g.head_ln_w, s.junk, s.d_head, s.head_act, s.head_mean,
                        s.head_rstd, p.head_ln_w, B, D);
  k.gelu_backward(s.d_head_pre, s.d_head_pre, s.head_pre, B * D);
  s.head_dense.backward_weights(g.head_dense_w, s.d_head_pre, s.pooled, B);
  s.head_dense.backward_data(s.d_pooled, s.d_head_pre, p.head_dense_w, B);
  // undo: pooled = pool(fin); fin = final_norm(x_last)
  float* d_fin = s.nd[0];
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = lc.seq_offsets[b], T = lc.seq_offsets[b + 1] - start;
    const float* d_pooled = s.d_pooled + b * D;
    if (!c.mean_pooling) {
      std::copy_n(d_pooled, D, d_fin + start * D);
      std::fill_n(d_fin + (start + 1) * D, (T - 1) * D, 0.0f);
      continue;
    }
    for (int64_t i = start; i < start + T; ++i)
      for (int64_t j = 0; j < D; ++j) d_fin[i * D + j] = d_pooled[j] / static_cast<float>(T);
  }
  const float* x_last = s.layers.back().out;
  float* d_out = s.d_hidden[0];
  k.layer_norm_backward(d_out, g.final_ln_w, s.junk, d_fin, x_last, s.fin_mean, s.fin_rstd,
                        p.final_ln_w, N, D);
  ready(pooler_layer(c));

  for (int l = static_cast<int>(s.layers.size()) - 1; l >= 0; --l) {
    const size_t ul = static_cast<size_t>(l);
    const ModernLayerActivations& a = s.layers[ul];
    const LayerParams& lp = p.layers[ul];
    const LayerParams& lg = g.layers[ul];
    const LayerBf16Weights* w_b = s.bf16_layer(ul);
    const LayerWeights w = layer_weights(lp, w_b);
    bf16* grad_b = w_b == nullptr ? nullptr : s.grad_b;
    const uint32_t layer = static_cast<uint32_t>(l);
    const AttentionDims dims = lc.attention(ul);
    const float* x = l == 0 ? s.h0 : s.layers[ul - 1].out;
    const float* xn = l == 0 ? x : a.xn;
    float* d_x = s.d_hidden[(s.layers.size() - ul) % 2];
    float* d_s1 = s.nd[0];
    float* d_tmp = s.nd[1];
    float* d_ctx = s.nd[2];
    float* d_act = s.nf;
    float* d_wi = s.n2f;
    float* d_qkv = s.n3d;

    // undo: out = s1 + act Wo2^T
    {
      const Operand d_y = as_input(d_out, grad_b, N * D);
      s.ffn_out.backward_weights(lg.ffn_out_w, d_y, Operand{a.act, a.act_b}, N);
      progress_point(listener);
      s.ffn_out.backward_data(d_act, d_y, w.ffn_out, N);
      progress_point(listener);
    }
    // undo: act = dropout(gelu(input) * gate); [input | gate] = hn Wi^T
    packed_dropout_backward(k, d_act, d_act, lc.mlp_dropout,
                            dropout_key(context, layer, kFfnOutput), lc.rows(F));
    geglu_backward(k, d_wi, d_act, a.wi, N, F);
    {
      const Operand d_y = as_input(d_wi, grad_b, N * 2 * F);
      s.ffn_in.backward_weights(lg.ffn_in_w, d_y, Operand{a.hn, a.hn_b}, N);
      progress_point(listener);
      s.ffn_in.backward_data(d_tmp, d_y, w.ffn_in, N);  // d_hn
      progress_point(listener);
    }
    // undo: hn = mlp_norm(s1); d_s1 also gets the residual d_out
    k.layer_norm_backward(d_s1, lg.ffn_ln_w, s.junk, d_tmp, a.s1, a.hn_mean, a.hn_rstd, lp.ffn_ln_w,
                          N, D);
    ffn_grads_ready(listener, l);  // mlp_norm, Wi and Wo are final
    add_into(d_s1, d_out, N * D);
    // undo: s1 = x + dropout(ctx Wo^T)
    packed_dropout_backward(k, d_tmp, d_s1, lc.attention_dropout,
                            dropout_key(context, layer, kAttentionOutput), lc.rows(D));
    {
      const Operand d_y = as_input(d_tmp, grad_b, N * D);
      s.attn_out.backward_weights(lg.attn_out_w, d_y, Operand{a.ctx, a.ctx_b}, N);
      progress_point(listener);
      s.attn_out.backward_data(d_ctx, d_y, w.attn_out, N);
      progress_point(listener);
    }
    // undo: ctx = attention(qkv); qkv = rotary(xn Wqkv^T)
    attention_backward(d_qkv, d_ctx, a.qkv, a.probs, lc.seq_offsets, lc.prob_offsets, s.sample_ids,
                       B, dims, lc.attention_dropout, dropout_key(context, layer, kAttentionProbs),
                       s.attention, s.attention_per_thread);
    progress_point(listener);
    rotary_backward(d_qkv, lc.seq_offsets, B, dims,
                    c.sliding_layers[ul] ? s.local_rope : s.global_rope);
    {
      const Operand d_y = as_input(d_qkv, grad_b, N * 3 * D);
      s.qkv.backward_weights(lg.qkv_w, d_y, Operand{xn, a.xn_b}, N);
      progress_point(listener);
      if (l == 0) {
        s.qkv.backward_data(d_x, d_y, w.qkv, N);
      } else {  // undo: xn = attn_norm(x)
        s.qkv.backward_data(d_tmp, d_y, w.qkv, N);
        k.layer_norm_backward(d_x, lg.attn_ln_w, s.junk, d_tmp, x, a.xn_mean, a.xn_rstd,
                              lp.attn_ln_w, N, D);
      }
    }
    add_into(d_x, d_s1, N * D);  // the residual branch of s1
    ready(l);
    d_out = d_x;
  }

  // undo: h0 = dropout(emb_ln); emb_ln = LayerNorm(tok[ids])
  float* d_emb = s.nd[0];
  packed_dropout_backward(k, d_out, d_out,
                          training ? static_cast<float>(c.embedding_dropout) : 0.0f,
                          dropout_key(context, kEmbeddingsDropoutLayer, 0), lc.rows(D));
  k.layer_norm_backward(d_emb, g.emb_ln_w, s.junk, d_out, s.emb, s.emb_mean, s.emb_rstd, p.emb_ln_w,
                        N, D);
  const int32_t* ids = batch.input_ids.data();
  for (int64_t i = 0; i < N; ++i) {  // in token order: rows repeat
    float* row = g.word_emb + ids[i] * D;
    const float* d = d_emb + i * D;
    for (int64_t j = 0; j < D; ++j) row[j] += d[j];
  }
  // tok_embeddings is nn.Embedding(padding_idx = pad_token_id): that row never gets a gradient.
  if (c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size)
    std::fill_n(g.word_emb + c.pad_token_id * D, D, 0.0f);
  ready(kEmbeddingsLayer);
}

}  // namespace cpuft
