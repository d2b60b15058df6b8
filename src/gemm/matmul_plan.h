// MatmulPlan: the only door to oneDNN.
//
// A plan is one matrix product, fixed at construction (shapes, transposes, accumulation, bias),
// whose oneDNN primitive is created once and reused. The token count of a packed batch changes
// every step, so one dimension may vary per call up to its maximum ("rows"); the primitive is
// created for that dimension at run time (see matmul_plan.cc for how and why).
//
//   C(M,N) (+)= op(A)(M,K) * op(B)(K,N) (+ bias(N) broadcast over rows)
//   op(A) = A stored (M,K) row-major, or A stored (K,M) when a_transposed
//   op(B) = B stored (K,N) row-major, or B stored (N,K) when b_transposed
//
// The three products of a linear layer y = x W^T + b with W stored (out, in) as nn.Linear does:
//   forward          y(T,out)   = x(T,in) * W^T            M=T varies, b_transposed, bias
//   backward-data    d_x(T,in)  = d_y(T,out) * W           M=T varies
//   backward-weights d_W(out,in) += d_y^T(out,T) * x(T,in) K=T varies, a_transposed, accumulate
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/bf16.h"

namespace cpuft {

enum class VaryingDim { none, m, k };

// Storage of A and B. C, the bias and the accumulation are fp32 in both: with bf16 inputs every
// product of two bf16 numbers is exact in fp32, so the only rounding beyond fp32's is the caller's
// rounding of the inputs.
enum class MatmulPrecision { f32, bf16 };

struct MatmulDesc {
  int64_t m = 0, n = 0, k = 0;  // for the varying dimension: its maximum
  bool a_transposed = false;
  bool b_transposed = false;
  bool accumulate = false;  // C += product instead of C = product
  bool bias = false;        // adds bias(N) to every row (not with accumulate)
  VaryingDim varying = VaryingDim::none;
  MatmulPrecision precision = MatmulPrecision::f32;
  // bf16 with M varying: each run() first writes B into the blocked layout oneDNN's kernels read
  // and every piece of the product reads that copy, instead of every piece repacking B itself
  // (matmul_plan.cc says where it pays: LinearPlans sets it for backward-data, and for forward
  // on CPUs without AMX or where in_features > out_features).
  bool pack_b = false;
};

class MatmulPlan {
 public:
  explicit MatmulPlan(const MatmulDesc& desc);
  ~MatmulPlan();
  MatmulPlan(MatmulPlan&&) noexcept;
  MatmulPlan& operator=(MatmulPlan&&) noexcept;

  // Runs the product. `varying_size` is the actual size of the varying dimension (ignored when
  // none varies), 0 <= varying_size <= its maximum. bias is nullptr unless desc.bias.
  // Allocates nothing and creates no primitive.
  void run(float* c, const float* a, const float* b, const float* bias,
           int64_t varying_size = 0) const;
  // The same with bf16 A and B, for plans with precision bf16 (the fp32 run() refuses those, and
  // this one refuses fp32 plans).
  void run(float* c, const bf16* a, const bf16* b, const float* bias,
           int64_t varying_size = 0) const;

  const MatmulDesc& desc() const { return desc_; }
  // oneDNN's name of the implementation of the largest piece ("brg:avx512_core_bf16", ...), or
  // "dnnl_sgemm": which ISA oneDNN picked, for tests and `cpuft env`.
  std::string implementation() const;
  // Whether run() packs B: desc.pack_b, oneDNN chose a layout other than B as stored, and every
  // rung takes it with a brgemm kernel (matmul_plan.cc).
  bool packs_b() const;

 private:
  template <typename In>
  void run_typed(float* c, const In* a, const In* b, const float* bias, int64_t varying_size) const;

  MatmulDesc desc_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An input of a linear product as the model holds it: the fp32 values and, where the plans are
// bf16, their bf16 rounding (b16 == nullptr for fp32 plans). The plans read the copy matching
// their precision.
struct Operand {
  const float* f32 = nullptr;
  const bf16* b16 = nullptr;
};

// The three plans of one nn.Linear(in, out) for up to max_rows tokens; bf16 backward-data packs W
// once per run (MatmulDesc::pack_b), and so does bf16 forward on CPUs without AMX, and on AMX where
// in > out (matmul_plan.cc says why). The fp32-pointer overloads need
// fp32 plans; the Operand ones work for both precisions. Under CPUFT_PROFILE=1 each product is a
// region "<name>.fwd", "<name>.bwd_data", "<name>.bwd_weights".
struct LinearPlans {
  // with_bias false: nn.Linear(bias=False); forward then takes b == nullptr.
  LinearPlans(int64_t max_rows, int64_t in_features, int64_t out_features,
              MatmulPrecision precision = MatmulPrecision::f32, const std::string& name = "linear",
              bool with_bias = true);
  // y(T,out) = x(T,in) W^T + b
  void forward(float* y, const float* x, const float* w, const float* b, int64_t rows) const;
  void forward(float* y, Operand x, Operand w, const float* b, int64_t rows) const;
  // d_x(T,in) = d_y(T,out) W   (overwritten)
  void backward_data(float* d_x, const float* d_y, const float* w, int64_t rows) const;
  void backward_data(float* d_x, Operand d_y, Operand w, int64_t rows) const;
  // d_W(out,in) += d_y^T x     (accumulated)
  void backward_weights(float* d_w, const float* d_y, const float* x, int64_t rows) const;
  void backward_weights(float* d_w, Operand d_y, Operand x, int64_t rows) const;
  MatmulPrecision precision() const { return fwd.desc().precision; }

  MatmulPlan fwd, bwd_data, bwd_weights;
  int fwd_slot, bwd_data_slot, bwd_weights_slot;  // profile regions
};

// Row-major strided single-threaded-or-not GEMM for small per-sequence products (attention):
// C(M,N) = alpha * op(A) op(B) + beta * C, with leading dimensions. Wraps oneDNN's dnnl_sgemm,
// which needs no primitive; safe to call from inside an OpenMP parallel region (it then runs on the
// calling thread).
void strided_gemm(bool a_transposed, bool b_transposed, int64_t M, int64_t N, int64_t K,
                  float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                  float* C, int64_t ldc);

// How many oneDNN primitives (matmuls and reorders) MatmulPlans have created in this process so
// far. Only their constructors create any, never run(): the training step's tests check that a
// step creates none.
int64_t onednn_primitives_created();

// True when the CPU has AVX512_BF16 or AMX-BF16, the instructions oneDNN's bf16 matmul needs to
// beat fp32; without them bf16 products are emulated and slower than fp32.
bool cpu_has_bf16_matmul();
// Throws cpuft::Error, one line naming `flag`, unless `available`: the one refusal of bf16 flags on
// CPUs without bf16 instructions (train, predict, benches).
void require_bf16_matmul(const char* flag, bool available = cpu_has_bf16_matmul());

// oneDNN's version as "major.minor.patch (cpu runtime)", for `cpuft env` and bench reports.
const char* onednn_version_string();

}  // namespace cpuft
