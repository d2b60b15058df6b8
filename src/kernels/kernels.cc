// The kernel tables and the start-up choice between them.
#include "kernels/kernels.h"

#include <cstdlib>
#include <string_view>

#include "core/check.h"
#include "core/profile.h"
#include "kernels/avx512/avx512.h"
#include "kernels/dispatch.h"
#include "kernels/reference/activations.h"
#include "kernels/reference/adamw.h"
#include "kernels/reference/convert.h"
#include "kernels/reference/dropout.h"
#include "kernels/reference/embeddings.h"
#include "kernels/reference/layer_norm.h"
#include "kernels/reference/losses.h"
#include "kernels/reference/reductions.h"
#include "kernels/reference/softmax.h"

namespace cpuft {

namespace {

constexpr KernelTable kReferenceTable{
    .isa = "reference",
    .embeddings_forward = &reference::embeddings_forward<float>,
    .embeddings_backward = &reference::embeddings_backward<float>,
    .layer_norm_forward = &reference::layer_norm_forward<float>,
    .add_layer_norm_forward = &reference::add_layer_norm_forward<float>,
    .layer_norm_backward = &reference::layer_norm_backward<float>,
    .gelu_forward = &reference::gelu_forward<float>,
    .gelu_backward = &reference::gelu_backward<float>,
    .gelu_forward_bf16 = &reference::gelu_forward_bf16,
    .gelu_backward_bf16 = &reference::gelu_backward_bf16,
    .tanh_forward = &reference::tanh_forward<float>,
    .tanh_backward = &reference::tanh_backward<float>,
    .softmax_forward = &reference::softmax_forward<float>,
    .softmax_backward = &reference::softmax_backward<float>,
    .dropout_forward = &reference::dropout_forward<float>,
    .dropout_backward = &reference::dropout_backward<float>,
    .dropout_backward_kept = &reference::dropout_backward_kept<float>,
    .dropout_forward_marking = &reference::dropout_forward_marking,
    .dropout_unmark = &reference::dropout_unmark,
    .bias_backward = &reference::bias_backward<float>,
    .bias_backward_bf16 = &reference::bias_backward_bf16,
    .cross_entropy_forward_backward = &reference::cross_entropy_forward_backward<float>,
    .mse_forward_backward = &reference::mse_forward_backward<float>,
    .adamw_update = &reference::adamw_update<float>,
    .adamw_update_sparse = &reference::adamw_update_sparse<float>,
    .sum_squares = &reference::sum_squares<float>,
    .scale = &reference::scale<float>,
    .round_to_bf16 = &reference::round_to_bf16,
};

constexpr KernelTable kAvx512Table{
    .isa = "avx512",
    .embeddings_forward = &avx512::embeddings_forward,
    .embeddings_backward = &avx512::embeddings_backward,
    .layer_norm_forward = &avx512::layer_norm_forward,
    .add_layer_norm_forward = &avx512::add_layer_norm_forward,
    .layer_norm_backward = &avx512::layer_norm_backward,
    .gelu_forward = &avx512::gelu_forward,
    .gelu_backward = &avx512::gelu_backward,
    .gelu_forward_bf16 = &avx512::gelu_forward_bf16,
    .gelu_backward_bf16 = &avx512::gelu_backward_bf16,
    .tanh_forward = &avx512::tanh_forward,
    .tanh_backward = &avx512::tanh_backward,
    .softmax_forward = &avx512::softmax_forward,
    .softmax_backward = &avx512::softmax_backward,
    .dropout_forward = &avx512::dropout_forward,
    .dropout_backward = &avx512::dropout_backward,
    .dropout_backward_kept = &avx512::dropout_backward_kept,
    .dropout_forward_marking = &avx512::dropout_forward_marking,
    .dropout_unmark = &avx512::dropout_unmark,
    .bias_backward = &avx512::bias_backward,
    .bias_backward_bf16 = &avx512::bias_backward_bf16,
    .cross_entropy_forward_backward = &avx512::cross_entropy_forward_backward,
    .mse_forward_backward = &avx512::mse_forward_backward,
    .adamw_update = &avx512::adamw_update,
    .adamw_update_sparse = &avx512::adamw_update_sparse,
    .sum_squares = &avx512::sum_squares,
    .scale = &avx512::scale,
    .round_to_bf16 = &avx512::round_to_bf16,
};

}  // namespace

void avx512::throw_label_out_of_range(int64_t row, int32_t label, int64_t K) {
  throw Error(str("cross_entropy: label ", label, " of row ", row, " is outside [0, ", K, ")"));
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

const KernelTable& select_kernel_table(const char* force_isa, bool has_avx512) {
  const std::string_view force = force_isa == nullptr ? std::string_view() : force_isa;
  if (force.empty()) return has_avx512 ? kAvx512Table : kReferenceTable;
  if (force == "reference") return kReferenceTable;
  if (force == "avx512") {
    CPUFT_REQUIRE(has_avx512,
                  "CPUFT_FORCE_ISA=avx512 but this CPU lacks AVX-512 (F, BW, DQ and VL needed)");
    return kAvx512Table;
  }
  throw Error(str("CPUFT_FORCE_ISA='", force, "' is not a known kernel set (use 'reference' or ",
                  "'avx512', or leave it unset)"));
}

namespace {

// Under CPUFT_PROFILE=1 every kernel is timed as a region named after it: the table's entries are
// replaced by wrappers that open a profile::Scope and call the chosen kernel. The math calling
// kernels() carries no profiling code, and without CPUFT_PROFILE the table is the plain one.
template <auto Entry>
struct Timed;
template <typename R, typename... Args, R (*KernelTable::*Entry)(Args...)>
struct Timed<Entry> {
  static inline R (*kernel)(Args...) = nullptr;
  static inline int slot = -1;
  static R call(Args... args) {
    profile::Scope scope(slot);
    return kernel(args...);
  }
  static void wrap(KernelTable& table, const char* name) {
    kernel = table.*Entry;
    slot = profile::register_slot(name);
    table.*Entry = &call;
  }
};

#define CPUFT_TIME_KERNEL(entry) Timed<&KernelTable::entry>::wrap(t, #entry)

KernelTable timed(const KernelTable& plain) {
  KernelTable t = plain;
  CPUFT_TIME_KERNEL(embeddings_forward);
  CPUFT_TIME_KERNEL(embeddings_backward);
  CPUFT_TIME_KERNEL(layer_norm_forward);
  CPUFT_TIME_KERNEL(add_layer_norm_forward);
  CPUFT_TIME_KERNEL(layer_norm_backward);
  CPUFT_TIME_KERNEL(gelu_forward);
  CPUFT_TIME_KERNEL(gelu_backward);
  CPUFT_TIME_KERNEL(gelu_forward_bf16);
  CPUFT_TIME_KERNEL(gelu_backward_bf16);
  CPUFT_TIME_KERNEL(tanh_forward);
  CPUFT_TIME_KERNEL(tanh_backward);
  CPUFT_TIME_KERNEL(softmax_forward);
  CPUFT_TIME_KERNEL(softmax_backward);
  CPUFT_TIME_KERNEL(dropout_forward);
  CPUFT_TIME_KERNEL(dropout_backward);
  CPUFT_TIME_KERNEL(dropout_backward_kept);
  CPUFT_TIME_KERNEL(dropout_forward_marking);
  CPUFT_TIME_KERNEL(dropout_unmark);
  CPUFT_TIME_KERNEL(bias_backward);
  CPUFT_TIME_KERNEL(bias_backward_bf16);
  CPUFT_TIME_KERNEL(cross_entropy_forward_backward);
  CPUFT_TIME_KERNEL(mse_forward_backward);
  CPUFT_TIME_KERNEL(adamw_update);
  CPUFT_TIME_KERNEL(adamw_update_sparse);
  CPUFT_TIME_KERNEL(sum_squares);
  CPUFT_TIME_KERNEL(scale);
  CPUFT_TIME_KERNEL(round_to_bf16);
  return t;
}

#undef CPUFT_TIME_KERNEL

}  // namespace

const KernelTable& kernels() {
  // Chosen once; a throw leaves the static uninitialised, so every later call reports it again.
  static const KernelTable& chosen =
      select_kernel_table(std::getenv("CPUFT_FORCE_ISA"), cpu_has_avx512());
  static const KernelTable profiled = profile::enabled() ? timed(chosen) : chosen;
  return profile::enabled() ? profiled : chosen;
}

const KernelTable& reference_kernels() {
  return kReferenceTable;
}

const KernelTable* avx512_kernels() {
  static const bool available = cpu_has_avx512();
  return available ? &kAvx512Table : nullptr;
}

}  // namespace cpuft
