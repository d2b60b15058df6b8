// The element-wise and row-wise kernels of BERT training, behind one dispatch table.
//
// Conventions (see docs/ARCHITECTURE.md for the shape letters):
//   - raw pointers, outputs first, sizes last; rows are contiguous, row-major;
//   - N = rows (tokens, or sequences for the head), D/C = columns;
//   - activation gradients (d_x) are OVERWRITTEN, parameter gradients (d_gamma, d_w, ...)
//   ACCUMULATE;
//   - element-wise kernels (gelu, tanh, dropout, scale) may run in place: output == input is fine;
//   - every kernel has a scalar twin in reference/ (templated on T, used with double in tests)
//     and, where the CPU has it, an AVX-512 version in avx512/. kernels() picks one table once.
// Set CPUFT_FORCE_ISA=reference to force the scalar table (any other value: error at start-up).
#pragma once

#include <cstdint>

#include "core/bf16.h"
#include "core/rng.h"

namespace cpuft {

// Hyper-parameters of one AdamW update, with the bias corrections hoisted out of the loop.
// Matches torch.optim.AdamW (decoupled decay):
//   w -= lr * weight_decay * w
//   m  = beta1 * m + (1 - beta1) * g
//   v  = beta2 * v + (1 - beta2) * g * g
//   w -= (lr / bias_correction1) * m / (sqrt(v) / sqrt(bias_correction2) + eps)
// where bias_correction{1,2} = 1 - beta{1,2}^step.
struct AdamWStep {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  // 1 - beta computed in double by the caller, then rounded: 1.0f - 0.999f is 1.3e-5 off 0.001f,
  // which torch avoids by forming 1 - beta2 in double.
  float one_minus_beta1 = 0.1f;
  float one_minus_beta2 = 0.001f;
  float eps = 1e-8f;
  float weight_decay = 0;
  float bias_correction1 = 1;  // 1 - beta1^step
  float bias_correction2 = 1;  // 1 - beta2^step
  // What the same pass also does (optim/optimizer.h, UpdatePass): the gradient is read as
  // g * grad_scale (one fp32 product: the bits the clip's scaling would have stored; 1 leaves g as
  // it is), and with zero_grad it is set to +0 once read.
  float grad_scale = 1;
  bool zero_grad = false;
};

struct KernelTable {
  const char* isa;  // "reference" or "avx512"

  // out(N,D) = word[ids] + pos[pos_ids] + type[type_ids]      (ids: int32, (N))
  // type == nullptr (no token types): out = word[ids] + pos[pos_ids]; d_type == nullptr likewise.
  void (*embeddings_forward)(float* out, const float* word, const float* pos, const float* type,
                             const int32_t* ids, const int32_t* pos_ids, const int32_t* type_ids,
                             int64_t N, int64_t D);
  // Scatter-add: d_word[ids[i]] += d_out[i], likewise d_pos, d_type.   (accumulate)
  void (*embeddings_backward)(float* d_word, float* d_pos, float* d_type, const float* d_out,
                              const int32_t* ids, const int32_t* pos_ids, const int32_t* type_ids,
                              int64_t N, int64_t D);

  // y(N,D) = (x - mean) * rstd * gamma + beta per row; writes mean(N), rstd(N).
  void (*layer_norm_forward)(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                             const float* beta, float eps, int64_t N, int64_t D);
  // Fused residual: s = a + b (written, backward needs it), y = LayerNorm(s).
  void (*add_layer_norm_forward)(float* y, float* s, float* mean, float* rstd, const float* a,
                                 const float* b, const float* gamma, const float* beta, float eps,
                                 int64_t N, int64_t D);
  // d_x overwritten; d_gamma, d_beta accumulated. x is the LayerNorm input (s for the fused one).
  void (*layer_norm_backward)(float* d_x, float* d_gamma, float* d_beta, const float* d_y,
                              const float* x, const float* mean, const float* rstd,
                              const float* gamma, int64_t N, int64_t D);

  // Exact GELU: y = x * 0.5 * (1 + erf(x / sqrt(2))).  (n elements)
  void (*gelu_forward)(float* y, const float* x, int64_t n);
  void (*gelu_backward)(float* d_x, const float* d_y, const float* x, int64_t n);
  // The same under --bf16, where the products read only the bf16 rounding, in one pass instead of
  // two or three, with the bits of the unfused kernels run in turn:
  //   y = round_to_bf16(gelu(x));
  //   d_x(N,C) = round_to_bf16(gelu_backward(d_y, x)); d_b(C) += bias_backward of the unrounded
  //   d_x (accumulate). d_x may not alias d_y or x.
  void (*gelu_forward_bf16)(bf16* y, const float* x, int64_t n);
  void (*gelu_backward_bf16)(bf16* d_x, float* d_b, const float* d_y, const float* x, int64_t N,
                             int64_t C);

  // y = tanh(x); backward uses y: d_x = d_y * (1 - y*y).
  void (*tanh_forward)(float* y, const float* x, int64_t n);
  void (*tanh_backward)(float* d_x, const float* d_y, const float* y, int64_t n);

  // Row softmax of (N, C), y may alias x. backward: d_x = y * (d_y - sum_c(d_y * y)); d_x may
  // alias d_y.
  void (*softmax_forward)(float* y, const float* x, int64_t N, int64_t C);
  void (*softmax_backward)(float* d_x, const float* d_y, const float* y, int64_t N, int64_t C);

  // Inverted dropout: y[i] = keep(i) ? x[i] / (1 - p) : 0 with keep(i) = uniform_at(key, i) >= p.
  // backward regenerates the same mask from the key. p == 0 is a copy. y may alias x.
  void (*dropout_forward)(float* y, const float* x, float p, RngKey key, int64_t n);
  void (*dropout_backward)(float* d_x, const float* d_y, float p, RngKey key, int64_t n);
  // dropout_backward without drawing the mask again: d_x[i] = kept[i] != 0 ? d_y[i] / (1 - p) : 0,
  // `kept` being the forward's output. The same as dropout_backward wherever the forward's input
  // was nonzero; attention uses it where a zero input (a probability of 0) multiplies its
  // gradient by 0 anyway. For p > 0 it runs on the calling thread only (attention calls it inside
  // its parallel loop); d_x may alias d_y.
  void (*dropout_backward_kept)(float* d_x, const float* d_y, const float* kept, float p,
                                int64_t n);
  // Attention keeps its probabilities P (>= 0) for backward, which needs both P and the dropped
  // P_used = dropout(P). dropout_forward_marking writes y = dropout_forward(x) and records the mask
  // in x's sign bits: x[i] = kept ? |x[i]| : -|x[i]| (y may not alias x; p == 0 copies, marks
  // nothing). dropout_unmark gives both back without drawing the mask again: x_abs = |marked|,
  // y = 0 where marked's sign bit is set, else |marked| / (1 - p); for x >= 0 the bits of x and of
  // the forward's y. It runs on the calling thread only; none of its pointers may alias.
  void (*dropout_forward_marking)(float* y, float* x, float p, RngKey key, int64_t n);
  void (*dropout_unmark)(float* y, float* x_abs, const float* marked, float p, int64_t n);

  // d_b(C) += sum over rows of d_y(N, C).   (accumulate)
  void (*bias_backward)(float* d_b, const float* d_y, int64_t N, int64_t C);
  // Under --bf16 a linear's output gradient d_y goes to its bias gradient and, rounded, to its two
  // backward products: bias_backward and round_to_bf16 of the same d_y in one pass, with the bits
  // of the two kernels run in turn. d_y_b (N * C) may not alias d_y.
  void (*bias_backward_bf16)(bf16* d_y_b, float* d_b, const float* d_y, int64_t N, int64_t C);

  // Mean cross-entropy over N rows of logits(N,K) with integer labels (N) and label smoothing
  // eps in [0, 1] (torch's CrossEntropyLoss(label_smoothing=eps); 0: plain); returns the mean loss
  // (1 - eps) nll + eps mean_k(-log_softmax_k). Writes
  // d_logits(N,K) = (softmax(logits) - ((1 - eps) onehot(label) + eps / K)) * loss_scale / N.
  float (*cross_entropy_forward_backward)(float* d_logits, const float* logits,
                                          const int32_t* labels, float loss_scale, int64_t N,
                                          int64_t K, float label_smoothing);
  // Mean squared error over N predictions (N) and targets (N); returns the mean loss.
  // Writes d_pred = 2 * (pred - target) * loss_scale / N.
  float (*mse_forward_backward)(float* d_pred, const float* pred, const float* target,
                                float loss_scale, int64_t N);

  // One AdamW update of n parameters (w, m, v updated in place) from g * step.grad_scale; then
  // g = +0 if step.zero_grad, and w_b = round_to_bf16(w) unless w_b is nullptr.
  void (*adamw_update)(float* w, float* m, float* v, float* g, bf16* w_b, const AdamWStep& step,
                       int64_t n);
  // The same update of a tensor most of whose elements no step has touched (the word table): an
  // element whose g is +-0 and whose m and v are all-zero bits would come out of the update with
  // m = v = +0 and w only decayed, so only that is done: w = w - (lr * wd) * w and its bf16 copy,
  // nothing at all without weight decay (its g, m and v are not written; mostly not even w). The
  // other elements get adamw_update's arithmetic (and with step.zero_grad their g is set to +0;
  // an untouched g is +-0 already and stays as it is). The same values as adamw_update for finite
  // weights, a finite grad_scale and eps > 0 (a training step's case); without weight decay an
  // untouched weight keeps its bits where adamw_update's w - 0 * w changes them: -0 stays -0 (as
  // torch's update keeps it; adamw_update returns +0), and an infinity, a signalling NaN or, with
  // denormals treated as zero, a denormal stay as they are.
  void (*adamw_update_sparse)(float* w, float* m, float* v, float* g, bf16* w_b,
                              const AdamWStep& step, int64_t n);
  // sum(x^2) in double accumulation (gradient clipping's norm).
  double (*sum_squares)(const float* x, int64_t n);
  // x *= s.
  void (*scale)(float* x, float s, int64_t n);

  // y = x rounded to bf16 (nearest, ties to even, as torch rounds; core/bf16.h): the inputs of the
  // matrix products under --bf16.
  void (*round_to_bf16)(bf16* y, const float* x, int64_t n);
};

// The table chosen at start-up: AVX-512 when the CPU has AVX-512F/BW/DQ/VL and CPUFT_FORCE_ISA is
// unset, else the reference table.
const KernelTable& kernels();
// Always available.
const KernelTable& reference_kernels();
// nullptr when the CPU lacks AVX-512.
const KernelTable* avx512_kernels();

}  // namespace cpuft
