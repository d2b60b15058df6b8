#include "model/deberta.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/buffer.h"
#include "core/check.h"
#include "gemm/matmul_plan.h"
#include "kernels/kernels.h"
#include "model/activation.h"
#include "model/arena_carver.h"
#include "model/bf16_weights.h"
#include "model/disentangled_attention.h"
#include "model/dropout_streams.h"
#include "model/encoder_layer.h"
#include "model/family.h"
#include "model/first_token_head.h"
#include "model/packed_dropout.h"
#include "model/sequence_conv.h"

namespace cpuft {

namespace {

// Dropout site of the relative embeddings (HF's pos_dropout), after the layer's three of
// encoder_layer.h; and of the convolution after layer 0 (ConvLayer's dropout, layer 0's numbers).
constexpr uint32_t kRelativeEmbeddingsSite = 3, kConvSite = 4;

}  // namespace

// The activations and scratch of one forward/backward, carved from one arena sized for the
// model's limits; counting alone (base == nullptr) sizes it: activation_bytes.
struct DebertaBuffers {
  int64_t carve(const ModelConfig& c, const ModelLimits& limits, float* base) {
    const int64_t N = limits.max_tokens, B = limits.max_sequences, T = limits.max_seq_len;
    const int64_t D = c.hidden_size, F = c.intermediate_size, H = c.num_attention_heads;
    const int64_t K = c.num_labels, S2 = 2 * c.relative_span();
    const bool relative = c.relative_attention;
    ArenaCarver<float> a(base);
    const int64_t E = c.embedding_size;
    emb_sum = a.take(N * E);
    if (c.has_embedding_projection()) {
      emb_proj = a.take(N * D);
      d_emb = a.take(N * E);
    }
    emb_mean = a.take(N);
    emb_rstd = a.take(N);
    emb_ln = a.take(N * D);
    h0 = a.take(N * D);
    if (relative) {
      rel = a.take(S2 * D);
      rel_mean = a.take(S2);
      rel_rstd = a.take(S2);
      d_rel = a.take(S2 * D);
      d_rel_tmp = a.take(S2 * D);
      d_pos = a.take(S2 * 2 * D);
      if (c.separate_position_projections()) {
        pos_half = a.take(S2 * D);
        d_rel_other = a.take(S2 * D);
      }
    }
    layers.assign(static_cast<size_t>(c.num_hidden_layers), LayerActivations{});
    rel_in.assign(layers.size(), nullptr);
    pos.assign(layers.size(), nullptr);
    // act is not kept with limits.recompute (rowwise_backward recomputes it in fp32; under bf16
    // it reads act_b either way).
    const bool keep_act = !limits.recompute;
    for (size_t l = 0; l < layers.size(); ++l) {
      LayerActivations& x = layers[l];
      x.qkv = a.take(N * 3 * D);
      x.probs = a.take(H * T * N);  // sum_s T_s^2 <= T N per head
      x.ctx = a.take(N * D);
      x.s1 = a.take(N * D);
      x.ln1_mean = a.take(N);
      x.ln1_rstd = a.take(N);
      x.h1 = a.take(N * D);
      x.ffn_pre = a.take(N * F);
      x.ffn_act = keep_act ? a.take(N * F) : nullptr;
      x.s2 = a.take(N * D);
      x.ln2_mean = a.take(N);
      x.ln2_rstd = a.take(N);
      x.out = a.take(N * D);
      if (relative) {
        rel_in[l] = a.take(S2 * D);  // dropout(rel), this layer's mask
        pos[l] = a.take(S2 * 2 * D);
      }
    }
    if (c.conv_kernel_size > 0) {
      const int64_t k = c.conv_kernel_size;
      conv_cols = a.take(N * D * k);
      conv_z = a.take(N * D);
      conv_act = a.take(N * D);
      conv_sum = a.take(N * D);
      conv_mean = a.take(N);
      conv_rstd = a.take(N);
      conv_out = a.take(N * D);
      conv_d = a.take(N * D);
    }
    head.in = a.take(B * D);
    head.in_drop = a.take(B * D);
    head.pre = a.take(B * D);
    head.act = a.take(B * D);
    head.drop = a.take(B * D);
    head.logits = a.take(B * K);
    head.d_logits = a.take(B * K);
    head.d_head = a.take(B * D);
    head.d_in = a.take(B * D);
    d_hidden[0] = a.take(N * D);
    d_hidden[1] = a.take(N * D);
    for (float*& p : scratch.nd) p = a.take(N * D);
    scratch.nf = a.take(N * F);
    scratch.n3d = a.take(N * 3 * D);
    scratch.attention_per_thread = disentangled_scratch_floats(T);
    scratch.attention = a.take(scratch.attention_per_thread * omp_get_max_threads());
    zero_row = a.take(E);
    junk_row = a.take(E);
    return a.used();
  }

  // The bf16 product inputs (bf16 models only); with base == nullptr only counts.
  int64_t carve_bf16(const ModelConfig& c, const ModelLimits& limits, bf16* base) {
    const int64_t N = limits.max_tokens, D = c.hidden_size, F = c.intermediate_size;
    ArenaCarver<bf16> a(base);
    for (LayerActivations& x : layers) {
      x.x_b = a.take(N * D);
      x.ctx_b = a.take(N * D);
      x.h1_b = a.take(N * D);
      x.act_b = a.take(N * F);
    }
    scratch.grad_b = a.take(N * std::max(3 * D, F));
    return a.used();
  }

  float *emb_sum, *emb_mean, *emb_rstd, *emb_ln, *h0;  // (N, E), (N), (N), (N, D), (N, D)
  // embedding_size E != D: embed_proj's output (the LayerNorm's input) and d emb_sum.
  float *emb_proj = nullptr, *d_emb = nullptr;  // (N, D), (N, E)
  // Relative embeddings (rows [row_begin, row_begin + rows) of the 2S are used per batch):
  float *rel = nullptr, *rel_mean = nullptr, *rel_rstd = nullptr;  // (2S, D) LayerNorm(rel_emb)
  float *d_rel = nullptr, *d_rel_tmp = nullptr;                    // (2S, D)
  float* d_pos = nullptr;                                          // (2S, 2D)
  // share_att_key false: one projection's output or gradient, (2S, D), and the second
  // projection's share of d_rel.
  float *pos_half = nullptr, *d_rel_other = nullptr;
  // conv_kernel_size k > 0: h = LayerNorm(layer0 + act(z)), z = dropout(cols W^T + b):
  float* conv_cols = nullptr;  // (N, D k) the gathered embeddings; in backward, their gradient
  float *conv_z = nullptr, *conv_act = nullptr, *conv_sum = nullptr;  // (N, D) z, act(z), LN in
  float *conv_mean = nullptr, *conv_rstd = nullptr;                   // (N)
  float *conv_out = nullptr, *conv_d = nullptr;  // (N, D) h (layer 1's input), d of LN's input
  std::vector<LayerActivations> layers;
  std::vector<float*> rel_in, pos;  // per layer: (2S, D) dropout(rel), (2S, 2D) its projection
  FirstTokenHeadBuffers head{};     // ContextPooler and the classifier (model/first_token_head.h)
  float* d_hidden[2];               // 2 x (N, D), ping-pong between layers
  EncoderScratch scratch{};
  float* zero_row;  // (E) the position table of a model without one (ids all 0)
  float* junk_row;  // (E) where its gradient goes

  std::vector<int32_t> positions;         // (N) position ids, all 0 without a table
  std::vector<int64_t> prob_offsets;      // (B + 1)
  std::vector<int64_t> local_sample_ids;  // 0..max_sequences-1, for batches without sample_ids
  std::vector<int64_t> row_ids;           // 0..2S-1: each relative row's dropout stream
  const int64_t* sample_ids = nullptr;
  const Batch* batch = nullptr;
  StepContext context;
  int64_t row_begin = 0, rows = 0;  // the relative rows of the last forward
};

struct DebertaClassifier::State : DebertaBuffers {
  State(const ModelConfig& c, const ModelLimits& limits, MatmulPrecision precision)
      : plans{LinearPlans(limits.max_tokens, c.hidden_size, 3 * c.hidden_size, precision, "qkv"),
              LinearPlans(limits.max_tokens, c.hidden_size, c.hidden_size, precision, "attn_out"),
              LinearPlans(limits.max_tokens, c.hidden_size, c.intermediate_size, precision,
                          "ffn_in"),
              LinearPlans(limits.max_tokens, c.intermediate_size, c.hidden_size, precision,
                          "ffn_out")},
        rel_pos(2 * c.relative_span(), c.hidden_size, 2 * c.hidden_size, MatmulPrecision::f32,
                "rel_pos"),
        head_plans(c, limits.max_sequences),
        positions_table(c, limits.max_seq_len) {
    if (c.separate_position_projections()) {
      const int64_t span_rows = 2 * c.relative_span(), D = c.hidden_size;
      if (c.position_to_content)
        pos_query =
            std::make_unique<LinearPlans>(span_rows, D, D, MatmulPrecision::f32, "pos_query");
      if (c.content_to_position)
        pos_key = std::make_unique<LinearPlans>(span_rows, D, D, MatmulPrecision::f32, "pos_key");
    }
    if (c.has_embedding_projection())
      embed_proj = std::make_unique<LinearPlans>(limits.max_tokens, c.embedding_size, c.hidden_size,
                                                 MatmulPrecision::f32, "embed_proj", false);
    if (c.conv_kernel_size > 0)
      conv = std::make_unique<LinearPlans>(limits.max_tokens, c.hidden_size * c.conv_kernel_size,
                                           c.hidden_size, MatmulPrecision::f32, "conv");
    if (precision == MatmulPrecision::bf16)
      bf16_weights = std::make_unique<Bf16Weights>(ParamLayout(c));
  }

  const LayerBf16Weights* bf16_layer(size_t l) const {
    return bf16_weights ? &bf16_weights->layer(l) : nullptr;
  }

  EncoderPlans plans;
  // pos (rows, 2D) = rel (rows, D) Wqk^T + bqk: the first 2D rows of the layer's Wqkv and bqkv.
  LinearPlans rel_pos;
  // share_att_key false: pq (rows, D) = rel Wpq^T + bpq (p2c), pk = rel Wpk^T + bpk (c2p), each
  // written into its half of pos; nullptr where absent.
  std::unique_ptr<LinearPlans> pos_query, pos_key;
  // conv_kernel_size > 0: out (N, D) = cols (N, D k) W^T + b, fp32 (one product per step).
  std::unique_ptr<LinearPlans> conv;
  // embedding_size E != D: (N, D) = emb_sum (N, E) W^T, no bias, fp32.
  std::unique_ptr<LinearPlans> embed_proj;
  FirstTokenHead head_plans;  // fp32, as SequenceClassifier's
  RelativePositions positions_table;
  std::unique_ptr<Bf16Weights> bf16_weights;
  AlignedBuffer<float> arena;
  AlignedBuffer<bf16> bf16_arena;
};

DebertaClassifier::DebertaClassifier(const ModelConfig& config, const ModelLimits& limits,
                                     MatmulPrecision precision)
    : config_(config), state_(std::make_unique<State>(config, limits, precision)) {
  CPUFT_CHECK(config.family == Family::deberta_v2, "DebertaClassifier needs a deberta-v2 config");
  State& s = *state_;
  s.arena = AlignedBuffer<float>(static_cast<size_t>(s.carve(config, limits, nullptr)),
                                 FirstTouch::on_use);
  s.carve(config, limits, s.arena.data());
  std::fill_n(s.zero_row, config.embedding_size, 0.0f);
  if (precision == MatmulPrecision::bf16) {
    s.bf16_arena = AlignedBuffer<bf16>(static_cast<size_t>(s.carve_bf16(config, limits, nullptr)),
                                       FirstTouch::on_use);
    s.carve_bf16(config, limits, s.bf16_arena.data());
  }
  s.positions.assign(static_cast<size_t>(limits.max_tokens), 0);
  s.prob_offsets.resize(static_cast<size_t>(limits.max_sequences + 1));
  s.local_sample_ids.resize(static_cast<size_t>(limits.max_sequences));
  for (size_t i = 0; i < s.local_sample_ids.size(); ++i)
    s.local_sample_ids[i] = static_cast<int64_t>(i);
  s.row_ids.resize(static_cast<size_t>(2 * config.relative_span()));
  for (size_t i = 0; i < s.row_ids.size(); ++i) s.row_ids[i] = static_cast<int64_t>(i);
}

DebertaClassifier::~DebertaClassifier() = default;

int64_t DebertaClassifier::activation_bytes(const ModelConfig& config, const ModelLimits& limits,
                                            MatmulPrecision precision) {
  DebertaBuffers counter;
  int64_t bytes = counter.carve(config, limits, nullptr) * static_cast<int64_t>(sizeof(float));
  if (precision == MatmulPrecision::bf16)
    bytes += counter.carve_bf16(config, limits, nullptr) * static_cast<int64_t>(sizeof(bf16));
  return bytes;
}

void DebertaClassifier::refresh_bf16_weights(const ModelParams& params) {
  if (state_->bf16_weights) state_->bf16_weights->refresh(params);
}

std::vector<Bf16Weights::Target> DebertaClassifier::bf16_targets(const ModelParams& params) {
  if (!state_->bf16_weights) return {};
  return state_->bf16_weights->targets(params);
}

const float* DebertaClassifier::logits() const {
  return state_->head.logits;
}

float* DebertaClassifier::d_logits() {
  return state_->head.d_logits;
}

namespace {

// What forward and backward share: the layer geometry, the rates (0 outside training) and the
// streams.
struct DebertaStep {
  EncoderDims dims;
  DisentangledDims attention;
  PackedBatch packed;
  PackedRows relative_rows;  // the relative rows in use, one dropout stream each
  HeadRates head;            // pooler_dropout before the dense layer, cls_dropout after
};

DebertaStep deberta_step(const ModelConfig& c, const DebertaBuffers& s,
                         const RelativePositions& positions, const Batch& batch, bool training) {
  const float hidden = training ? static_cast<float>(c.hidden_dropout_prob) : 0.0f;
  const AttentionDims attention{c.hidden_size, c.num_attention_heads, c.head_dim()};
  const bool c2p = c.relative_attention && c.content_to_position;
  const bool p2c = c.relative_attention && c.position_to_content;
  // HF's scale counts pos_att_type even without relative attention.
  const int factor = 1 + (c.content_to_position ? 1 : 0) + (c.position_to_content ? 1 : 0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim() * factor));
  return DebertaStep{
      EncoderDims{attention, c.intermediate_size, static_cast<float>(c.layer_norm_eps), hidden,
                  training ? static_cast<float>(c.attention_probs_dropout_prob) : 0.0f, hidden},
      DisentangledDims{attention, c2p, p2c, scale, &positions},
      PackedBatch{batch.num_tokens(), batch.num_sequences(), batch.seq_offsets.data(),
                  s.prob_offsets.data(), s.sample_ids},
      PackedRows{s.rows, nullptr, s.row_ids.data() + s.row_begin, c.hidden_size},
      HeadRates{training ? static_cast<float>(c.pooler_dropout) : 0.0f,
                training ? c.effective_classifier_dropout() : 0.0f}};
}

RngKey conv_key(const StepContext& context) {
  return dropout_key(context, 0, kConvSite);
}

RngKey relative_key(const StepContext& context, size_t layer) {
  return dropout_key(context, static_cast<uint32_t>(layer), kRelativeEmbeddingsSite);
}

// Half `half` (columns [half D, (half + 1) D)) of the (R, 2D) rows of pos, to or from (R, D).
void write_half(float* pos, const float* part, int64_t R, int64_t D, int half) {
  for (int64_t r = 0; r < R; ++r) std::copy_n(part + r * D, D, pos + r * 2 * D + half * D);
}
void read_half(float* part, const float* pos, int64_t R, int64_t D, int half) {
  for (int64_t r = 0; r < R; ++r) std::copy_n(pos + r * 2 * D + half * D, D, part + r * D);
}

// One of the relative embeddings' own projections (share_att_key false) and the half of pos it
// fills: pos_query_proj's pq (p2c) the first, pos_key_proj's pk (c2p) the second.
struct PositionProjection {
  const LinearPlans* plan;  // nullptr: absent
  const float* w;           // (D, D)
  float* d_w;
  float* d_b;
  int half;
};

}  // namespace

void DebertaClassifier::forward(const ModelParams& p, const Batch& batch,
                                const StepContext& context) {
  State& s = *state_;
  const KernelTable& k = kernels();
  const ModelConfig& c = config_;
  const int64_t N = batch.num_tokens(), B = batch.num_sequences(), D = c.hidden_size;
  CPUFT_CHECK(!s.bf16_weights || s.bf16_weights->source() == p.word_emb,
              "bf16 model: refresh_bf16_weights() was not called for these weights");
  s.sample_ids = batch.sample_ids.empty() ? s.local_sample_ids.data() : batch.sample_ids.data();
  s.batch = &batch;
  s.context = context;
  attention_prob_offsets(s.prob_offsets.data(), batch.seq_offsets.data(), B, c.num_attention_heads);
  int64_t longest = 1;
  for (int64_t b = 0; b < B; ++b) longest = std::max(longest, batch.length(b));
  s.row_begin = s.positions_table.first_row(longest);
  s.rows = s.positions_table.last_row(longest) - s.row_begin + 1;
  const DebertaStep step = deberta_step(c, s, s.positions_table, batch, context.training);
  const float eps = step.dims.layer_norm_eps;

  // Embeddings: h0 = dropout(LayerNorm(embed_proj?(word (+ position) (+ type)))); without a
  // position table the ids stay 0 and point at a zero row (word + 0 is word, exactly).
  const int64_t E = c.embedding_size;
  if (c.absolute_positions)
    fill_position_ids(s.positions.data(), batch.input_ids.data(), batch.seq_offsets.data(), B,
                      PositionRule::from_zero, static_cast<int32_t>(c.pad_token_id));
  k.embeddings_forward(s.emb_sum, p.word_emb, p.pos_emb ? p.pos_emb : s.zero_row, p.type_emb,
                       batch.input_ids.data(), s.positions.data(), batch.token_type_ids.data(), N,
                       E);
  const float* ln_in = s.emb_sum;
  if (s.embed_proj) {
    s.embed_proj->forward(s.emb_proj, s.emb_sum, p.emb_proj_w, nullptr, N);
    ln_in = s.emb_proj;
  }
  k.layer_norm_forward(s.emb_ln, s.emb_mean, s.emb_rstd, ln_in, p.emb_ln_w, p.emb_ln_b, eps, N, D);
  packed_dropout_forward(k, s.h0, s.emb_ln, step.dims.hidden_dropout,
                         dropout_key(context, kEmbeddingsDropoutLayer, 0),
                         step.packed.token_rows(D));

  // rel = LayerNorm?(rel_embeddings), the rows in use
  const int64_t r0 = s.row_begin, R = s.rows;
  if (c.relative_attention) {
    const float* source = p.rel_emb + r0 * D;
    if (c.relative_norm) {
      k.layer_norm_forward(s.rel + r0 * D, s.rel_mean + r0, s.rel_rstd + r0, source, p.rel_ln_w,
                           p.rel_ln_b, eps, R, D);
    } else {
      std::copy_n(source, R * D, s.rel + r0 * D);
    }
  }

  const float* x = s.h0;
  for (size_t l = 0; l < s.layers.size(); ++l) {
    LayerActivations& a = s.layers[l];
    const LayerParams& lp = p.layers[l];
    const LayerWeights w = layer_weights(lp, s.bf16_layer(l));
    const uint32_t layer = static_cast<uint32_t>(l);
    const RngKey keys[3] = {dropout_key(context, layer, kAttentionProbs),
                            dropout_key(context, layer, kAttentionOutput),
                            dropout_key(context, layer, kFfnOutput)};
    // qkv = x Wqkv^T + bqkv; pos = dropout(rel) Wqk^T + bqk
    s.plans.qkv.forward(a.qkv, as_input(x, a.x_b, N * D), w.qkv, lp.qkv_b, N);
    if (c.relative_attention) {
      float* rel_in = s.rel_in[l] + r0 * D;
      packed_dropout_forward(k, rel_in, s.rel + r0 * D, step.dims.hidden_dropout,
                             relative_key(context, l), step.relative_rows);
      float* pos = s.pos[l] + r0 * 2 * D;
      if (c.share_att_key) {
        s.rel_pos.forward(pos, rel_in, lp.qkv_w, lp.qkv_b, R);
      } else {
        if (s.pos_query) {
          s.pos_query->forward(s.pos_half, rel_in, lp.pos_q_w, lp.pos_q_b, R);
          write_half(pos, s.pos_half, R, D, 0);
        }
        if (s.pos_key) {
          s.pos_key->forward(s.pos_half, rel_in, lp.pos_k_w, lp.pos_k_b, R);
          write_half(pos, s.pos_half, R, D, 1);
        }
      }
    }
    disentangled_attention_forward(a.ctx, a.probs, a.qkv, s.pos[l], batch.seq_offsets.data(),
                                   s.prob_offsets.data(), s.sample_ids, B, step.attention,
                                   step.dims.attention_dropout, keys[kAttentionProbs],
                                   s.scratch.attention, s.scratch.attention_per_thread);
    rowwise_forward(rowwise_view(a), x, lp, w, s.plans, step.packed.token_rows(D), N, step.dims,
                    keys, s.scratch);
    x = a.out;
    if (l == 0 && c.conv_kernel_size > 0) {
      // h = LayerNorm(layer0 + act(dropout(conv(h0) + b))): the convolution reads the embeddings
      const int64_t taps = c.conv_kernel_size;
      sequence_conv_gather(s.conv_cols, s.h0, batch.seq_offsets.data(), B, D, taps);
      s.conv->forward(s.conv_z, s.conv_cols, p.conv_w, p.conv_b, N);
      packed_dropout_forward(k, s.conv_z, s.conv_z, step.dims.hidden_dropout, conv_key(context),
                             step.packed.token_rows(D));
      activation_forward(k, activation_named(c.conv_act), s.conv_act, s.conv_z, N * D);
      for (int64_t i = 0; i < N * D; ++i) s.conv_sum[i] = a.out[i] + s.conv_act[i];
      k.layer_norm_forward(s.conv_out, s.conv_mean, s.conv_rstd, s.conv_sum, p.conv_ln_w,
                           p.conv_ln_b, eps, N, D);
      x = s.conv_out;
    }
  }

  // Head: logits = classifier(dropout(gelu(dense(dropout(first token)))))
  for (int64_t b = 0; b < B; ++b) std::copy_n(x + batch.seq_offsets[b] * D, D, s.head.in + b * D);
  first_token_head_forward(s.head_plans, s.head, p, step.head, context, s.sample_ids, B, D);
}

void DebertaClassifier::backward(const ModelParams& p, const ModelParams& g,
                                 GradListener* listener) {
  State& s = *state_;
  CPUFT_CHECK(s.batch != nullptr, "backward needs a forward first");
  const KernelTable& k = kernels();
  const ModelConfig& c = config_;
  const Batch& batch = *s.batch;
  const StepContext& context = s.context;
  const int64_t N = batch.num_tokens(), B = batch.num_sequences(), D = c.hidden_size;
  const DebertaStep step = deberta_step(c, s, s.positions_table, batch, context.training);
  const int64_t r0 = s.row_begin, R = s.rows;
  auto ready = [&](int layer) {
    if (listener != nullptr) listener->on_layer_grads_ready(layer);
  };

  // undo: the head; then each sequence's first row gets its gradient
  first_token_head_backward(s.head_plans, s.head, p, g, step.head, context, s.sample_ids, B, c,
                            listener);
  float* d_out = s.d_hidden[0];
  std::fill_n(d_out, N * D, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    std::copy_n(s.head.d_in + b * D, D, d_out + batch.seq_offsets[b] * D);

  if (c.relative_attention) std::fill_n(s.d_rel + r0 * D, R * D, 0.0f);
  bf16* grad_b = s.bf16_weights ? s.scratch.grad_b : nullptr;
  for (int l = static_cast<int>(s.layers.size()) - 1; l >= 0; --l) {
    const size_t ul = static_cast<size_t>(l);
    const LayerActivations& a = s.layers[ul];
    const LayerParams& lp = p.layers[ul];
    const LayerParams& lg = g.layers[ul];
    const LayerWeights w = layer_weights(lp, s.bf16_layer(ul));
    const uint32_t layer = static_cast<uint32_t>(l);
    const RngKey keys[3] = {dropout_key(context, layer, kAttentionProbs),
                            dropout_key(context, layer, kAttentionOutput),
                            dropout_key(context, layer, kFfnOutput)};
    const bool conv_after = c.conv_kernel_size > 0 && l == 0;  // the convolution follows
    const float* x = l == 0                             ? s.h0
                     : l == 1 && c.conv_kernel_size > 0 ? s.conv_out
                                                        : s.layers[ul - 1].out;
    float* d_x = s.d_hidden[(s.layers.size() - ul) % 2];
    if (conv_after) {
      // undo: h = LayerNorm(layer0 + act(z)): layer 0's output gets d_sum (conv_d) and so does
      // act(z); z = dropout(cols W^T + b). d_out is free after the LayerNorm: it holds d_z.
      k.layer_norm_backward(s.conv_d, g.conv_ln_w, g.conv_ln_b, d_out, s.conv_sum, s.conv_mean,
                            s.conv_rstd, p.conv_ln_w, N, D);
      float* d_z = d_out;
      activation_backward(k, activation_named(c.conv_act), d_z, s.conv_d, s.conv_z, s.conv_act,
                          N * D);
      packed_dropout_backward(k, d_z, d_z, step.dims.hidden_dropout, conv_key(context),
                              step.packed.token_rows(D));
      s.conv->backward_weights(g.conv_w, d_z, s.conv_cols, N);
      k.bias_backward(g.conv_b, d_z, N, D);
      s.conv->backward_data(s.conv_cols, d_z, p.conv_w, N);  // d_cols, until d_x exists
      d_out = s.conv_d;
    }
    float* d_s1 = s.scratch.nd[0];
    float* d_ctx = s.scratch.nd[2];
    float* d_qkv = s.scratch.n3d;

    // undo: everything after attention, row by row
    rowwise_backward(d_ctx, d_s1, d_out, rowwise_view(a), lp, lg, w, grad_b, s.plans,
                     step.packed.token_rows(D), N, step.dims, keys, s.scratch, listener, l);
    // undo: ctx = disentangled_attention(qkv, pos)
    if (c.relative_attention) std::fill_n(s.d_pos + r0 * 2 * D, R * 2 * D, 0.0f);
    disentangled_attention_backward(d_qkv, s.d_pos, d_ctx, a.qkv, s.pos[ul], a.probs,
                                    batch.seq_offsets.data(), s.prob_offsets.data(), B,
                                    step.attention, step.dims.attention_dropout,
                                    s.scratch.attention, s.scratch.attention_per_thread);
    progress_point(listener);
    // undo: qkv = x Wqkv^T + bqkv
    {
      const Operand d_y = output_gradient(lg.qkv_b, d_qkv, grad_b, N, 3 * D);
      s.plans.qkv.backward_weights(lg.qkv_w, d_y, Operand{x, a.x_b}, N);
      progress_point(listener);
      s.plans.qkv.backward_data(d_x, d_y, w.qkv, N);
    }
    // undo: pos = dropout(rel) Wqk^T + bqk; d_rel gathers every layer's share
    if (c.relative_attention) {
      const float* d_pos = s.d_pos + r0 * 2 * D;
      const float* rel_in = s.rel_in[ul] + r0 * D;
      if (c.share_att_key) {
        s.rel_pos.backward_weights(lg.qkv_w, d_pos, rel_in, R);
        k.bias_backward(lg.qkv_b, d_pos, R, 2 * D);
        s.rel_pos.backward_data(s.d_rel_tmp, d_pos, lp.qkv_w, R);
      } else {
        const PositionProjection projections[2] = {
            {s.pos_query.get(), lp.pos_q_w, lg.pos_q_w, lg.pos_q_b, 0},
            {s.pos_key.get(), lp.pos_k_w, lg.pos_k_w, lg.pos_k_b, 1}};
        bool first = true;  // the first writes d_rel_tmp, the second adds its share
        for (const PositionProjection& pp : projections) {
          if (pp.plan == nullptr) continue;
          read_half(s.pos_half, d_pos, R, D, pp.half);
          pp.plan->backward_weights(pp.d_w, s.pos_half, rel_in, R);
          k.bias_backward(pp.d_b, s.pos_half, R, D);
          pp.plan->backward_data(first ? s.d_rel_tmp : s.d_rel_other, s.pos_half, pp.w, R);
          if (!first) add_into(s.d_rel_tmp, s.d_rel_other, R * D);
          first = false;
        }
        if (first) std::fill_n(s.d_rel_tmp, R * D, 0.0f);  // no c2p, no p2c: pos unused
      }
      packed_dropout_backward(k, s.d_rel_tmp, s.d_rel_tmp, step.dims.hidden_dropout,
                              relative_key(context, ul), step.relative_rows);
      add_into(s.d_rel + r0 * D, s.d_rel_tmp, R * D);
    }
    add_into(d_x, d_s1, N * D);  // the residual branch of s1
    if (conv_after)              // the convolution's share of d_h0
      sequence_conv_scatter(d_x, s.conv_cols, batch.seq_offsets.data(), B, D, c.conv_kernel_size);
    ready(l);
    d_out = d_x;
  }

  // undo: rel = LayerNorm?(rel_embeddings)
  if (c.relative_attention) {
    float* d_table = g.rel_emb + r0 * D;
    if (c.relative_norm) {
      k.layer_norm_backward(s.d_rel_tmp, g.rel_ln_w, g.rel_ln_b, s.d_rel + r0 * D,
                            p.rel_emb + r0 * D, s.rel_mean + r0, s.rel_rstd + r0, p.rel_ln_w, R, D);
      add_into(d_table, s.d_rel_tmp, R * D);
    } else {
      add_into(d_table, s.d_rel + r0 * D, R * D);
    }
  }
  // undo: h0 = dropout(LayerNorm(embed_proj?(emb_sum))); emb_sum = word (+ position) (+ type)
  const int64_t E = c.embedding_size;
  float* d_ln_in = s.scratch.nd[0];
  packed_dropout_backward(k, d_out, d_out, step.dims.hidden_dropout,
                          dropout_key(context, kEmbeddingsDropoutLayer, 0),
                          step.packed.token_rows(D));
  k.layer_norm_backward(d_ln_in, g.emb_ln_w, g.emb_ln_b, d_out,
                        s.embed_proj ? s.emb_proj : s.emb_sum, s.emb_mean, s.emb_rstd, p.emb_ln_w,
                        N, D);
  const float* d_emb_sum = d_ln_in;
  if (s.embed_proj) {
    s.embed_proj->backward_weights(g.emb_proj_w, d_ln_in, s.emb_sum, N);
    s.embed_proj->backward_data(s.d_emb, d_ln_in, p.emb_proj_w, N);
    d_emb_sum = s.d_emb;
  }
  std::fill_n(s.junk_row, E, 0.0f);
  k.embeddings_backward(g.word_emb, g.pos_emb ? g.pos_emb : s.junk_row, g.type_emb, d_emb_sum,
                        batch.input_ids.data(), s.positions.data(), batch.token_type_ids.data(), N,
                        E);
  // word_embeddings is nn.Embedding(padding_idx = pad_token_id): that row never gets a gradient.
  if (c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size)
    std::fill_n(g.word_emb + c.pad_token_id * E, E, 0.0f);
  ready(kEmbeddingsLayer);
}

}  // namespace cpuft
