// The AVX-512 kernels (F, BW, DQ, VL), one function per KernelTable entry; kernels.cc builds the
// table. Only declarations here: this header is included by code compiled without AVX-512 flags.
#pragma once

#include <cstdint>

#include "core/bf16.h"
#include "kernels/kernels.h"

namespace cpuft::avx512 {

void embeddings_forward(float* out, const float* word, const float* pos, const float* type,
                        const int32_t* ids, const int32_t* pos_ids, const int32_t* type_ids,
                        int64_t N, int64_t D);
void embeddings_backward(float* d_word, float* d_pos, float* d_type, const float* d_out,
                         const int32_t* ids, const int32_t* pos_ids, const int32_t* type_ids,
                         int64_t N, int64_t D);
void layer_norm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                        const float* beta, float eps, int64_t N, int64_t D);
void add_layer_norm_forward(float* y, float* s, float* mean, float* rstd, const float* a,
                            const float* b, const float* gamma, const float* beta, float eps,
                            int64_t N, int64_t D);
void layer_norm_backward(float* d_x, float* d_gamma, float* d_beta, const float* d_y,
                         const float* x, const float* mean, const float* rstd, const float* gamma,
                         int64_t N, int64_t D);
void gelu_forward(float* y, const float* x, int64_t n);
void gelu_backward(float* d_x, const float* d_y, const float* x, int64_t n);
void gelu_forward_bf16(bf16* y, const float* x, int64_t n);
void gelu_backward_bf16(bf16* d_x, float* d_b, const float* d_y, const float* x, int64_t N,
                        int64_t C);
void tanh_forward(float* y, const float* x, int64_t n);
void tanh_backward(float* d_x, const float* d_y, const float* y, int64_t n);
void softmax_forward(float* y, const float* x, int64_t N, int64_t C);
void softmax_backward(float* d_x, const float* d_y, const float* y, int64_t N, int64_t C);
void dropout_forward(float* y, const float* x, float p, RngKey key, int64_t n);
void dropout_backward(float* d_x, const float* d_y, float p, RngKey key, int64_t n);
void dropout_backward_kept(float* d_x, const float* d_y, const float* kept, float p, int64_t n);
void dropout_forward_marking(float* y, float* x, float p, RngKey key, int64_t n);
void dropout_unmark(float* y, float* x_abs, const float* marked, float p, int64_t n);
void bias_backward(float* d_b, const float* d_y, int64_t N, int64_t C);
void bias_backward_bf16(bf16* d_y_b, float* d_b, const float* d_y, int64_t N, int64_t C);
float cross_entropy_forward_backward(float* d_logits, const float* logits, const int32_t* labels,
                                     float loss_scale, int64_t N, int64_t K, float label_smoothing);
float mse_forward_backward(float* d_pred, const float* pred, const float* target, float loss_scale,
                           int64_t N);
void adamw_update(float* w, float* m, float* v, float* g, bf16* w_b, const AdamWStep& step,
                  int64_t n);
void adamw_update_sparse(float* w, float* m, float* v, float* g, bf16* w_b, const AdamWStep& step,
                         int64_t n);
double sum_squares(const float* x, int64_t n);
void scale(float* x, float s, int64_t n);
void round_to_bf16(bf16* y, const float* x, int64_t n);

// Defined in kernels.cc (compiled without AVX-512 flags). The AVX-512 files use only intrinsics,
// compiler builtins, C/OpenMP functions and internal-linkage helpers, never inline or template
// code of the project or of the standard library: were such code emitted there with AVX-512
// instructions, the linker could pick that copy for generic callers too (one-definition rule),
// which would break builds without -march=native on CPUs lacking AVX-512.
[[noreturn]] void throw_label_out_of_range(int64_t row, int32_t label, int64_t K);

// The peak probe's instruction chains (kernels/peak_probe.h); each returns a value of its
// accumulators so that the loop is kept. bf16_dot needs AVX512_BF16, amx the AMX tiles granted.
double fma_peak_loop(int64_t iterations);
double bf16_dot_peak_loop(int64_t iterations);
double amx_peak_loop(int64_t iterations);

}  // namespace cpuft::avx512
