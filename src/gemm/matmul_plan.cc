// MatmulPlan over oneDNN matmul primitives.
//
// How the varying dimension is handled (measurements and the argument are in docs/gemm.md):
// oneDNN's fast fp32/bf16 matmul on AVX-512 (brgemm) needs every dimension fixed when the primitive
// is created. Rows of a product are independent (M) and a sum over K can be split into partial
// sums, so a product of any size s <= max runs as a few fixed-size pieces (greedy: 1600 = 1536 +
// 64), each with its own primitive created up front (a "ladder" of rungs: the maximum, 2^j and
// 3*2^j below it). With a user-managed scratchpad these primitives allocate no buffer and touch no
// fresh memory during run(). The alternatives (a runtime-dimension primitive, dnnl_sgemm) go
// through oneDNN's gemm:jit driver, which allocates ~7 MB of packing buffers inside every call; a
// runtime-dimension primitive was measured taking ~950 page faults (~4 MB) per call.
//
// The ladder needs each piece at a fixed offset with fixed strides, which holds unless the varying
// dimension is the contiguous one of a stored operand (A stored (K,M) with M varying; A stored
// (M,K) or B stored (N,K) with K varying): there the leading dimension is the actual size. Those
// layouts (not used by LinearPlans) use dnnl_sgemm. So does backward-data (M varying, B stored
// (K,N), no bias), where brgemm measured 25-40% slower than gemm:jit on every BERT shape; the price
// is gemm:jit's per-call packing allocation, whose page faults were measured at 0-5 per call there.
// And so does fp32 backward-weights (K varying) when both dimensions of C are kSgemmWeightsMinDim
// or more: on every BERT-base shape gemm:jit was as fast or faster (Zen 5: -1% to +31%; the AMX
// Xeon: 4-22%, and 3x for ffn_down's 768 x 3072, where brgemm ran at a quarter of the FMA peak),
// while on MiniLM's smaller ones brgemm was as fast or 8-15% faster (docs/gemm.md,
// docs/performance.md).
//
// bf16 plans (bf16 A and B, fp32 C and bias) always use the ladder: oneDNN 2.6 has no public bf16
// gemm function, so the layouts the ladder cannot express are refused for them (LinearPlans never
// asks for those).
//
// A bf16 plan with M varying and desc.pack_b packs B once per run. oneDNN's bf16 kernels read
// B in a blocked layout (pairs of K rows interleaved, in tiles); given B plain they copy it into
// that layout inside every execution, on each thread for the blocks it computes, so a product of
// 1730 rows split as 1536 + 192 + 2 repacked all of W three times. Here a reorder primitive
// writes B once into the layout oneDNN chose for the largest rung (format_tag::any), and every rung
// is created to read that layout with a brgemm kernel, as oneDNN picks for B as stored (on AMX,
// every rung from the maximum down to 1 takes it; a rung that would need a reference or gemm-based
// kernel for it turns packing off for the plan). Measured on AMX with cold caches, the reorder
// included (`cpuft_bench_ops --bf16-packing`, docs/performance.md): BERT-base's backward-data
// products 10-26% faster for three of the four linears (5 runs), the square attn_out's 4-9% slower
// in four runs and 16% faster in one; of the forward products only ffn_down's, whose K (3072) is 4x
// its N, gains in every run (11-18%), qkv's and attn_out's go either way. Without AMX (a Zen 5,
// avx512_core_bf16 kernels, the same bench) packing made the sum of BERT-base's four forward
// products 1-11% faster in each of 6 runs (qkv's and ffn_up's in every run), and MiniLM's 0-8%
// faster in 3. So LinearPlans packs W for backward-data, and for forward
// where in_features > out_features or the CPU has no AMX (forward_packs_weights). Not always the
// unpacked product's bits: for K of 2304 and more oneDNN sums the unpacked product's K in other
// chunks (both are exact products summed in fp32; the tests hold both to the same tolerance).
//
// When K varies (backward-weights: a sum over the batch's tokens) every piece reads and writes all
// of C, so the greedy split's small tail pieces (1750 = 1536 + 192 + 16 + 4 + 2) each cost a pass
// over C for little arithmetic. The last kPaddedTail - 1 rows or fewer therefore run as one piece:
// copied, with zero rows after them, into a buffer of the smallest rung that holds them (1750 =
// 1536 + 192 + 24 of which 2 zero). Zero rows add exact zeros to the sums (docs/performance.md).
#include "gemm/matmul_plan.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/buffer.h"
#include "core/check.h"
#include "core/profile.h"

namespace cpuft {
namespace {

using dnnl::memory;
using Dims = memory::dims;

// Logical (rows, cols) fp32 matrix; `stored_transposed` means it is stored (cols, rows) row-major.
memory::desc matrix_desc(int64_t rows, int64_t cols, bool stored_transposed) {
  return memory::desc(Dims{rows, cols}, memory::data_type::f32,
                      stored_transposed ? Dims{1, rows} : Dims{cols, 1});
}

// Whether oneDNN's name of a matmul implementation is one of its brgemm kernels:
// "brg:avx512_core_amx" in oneDNN 2.x (Debian 12), "brg_matmul:avx10_1_512_amx" in 3.x (Debian 13).
bool is_brgemm(const std::string& implementation) {
  return implementation.rfind("brg:", 0) == 0 || implementation.rfind("brg_matmul:", 0) == 0;
}

void check_sgemm(dnnl_status_t status) {
  CPUFT_CHECK(status == dnnl_success, "dnnl_sgemm failed with status ", static_cast<int>(status));
}

// Row-major C(M,N) = alpha op(A) op(B) + beta C with leading dimensions; M, N, K >= 0.
void sgemm(bool at, bool bt, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  check_sgemm(
      dnnl_sgemm(at ? 'T' : 'N', bt ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc));
}

// Below this many rows the rest of a varying K runs as one zero-padded piece (see the top).
constexpr int64_t kPaddedTail = 64;

// fp32 backward-weights runs on dnnl_sgemm when C has at least this many rows and columns (see the
// top): the smallest dimension of every BERT-base weight, above all of MiniLM-L6's 384.
constexpr int64_t kSgemmWeightsMinDim = 768;

// Every primitive a plan creates (onednn_primitives_created).
std::atomic<int64_t> g_primitives_created{0};

}  // namespace

struct MatmulPlan::Impl {
  // One fixed-size primitive with memory objects created without a data handle; run() only sets
  // the handles. (oneDNN's execute() itself still makes a few small bookkeeping allocations for its
  // argument map, < 1 KiB per call; no buffer is allocated.)
  struct Rung {
    int64_t size = 0;            // extent of the varying dimension this primitive computes
    std::string implementation;  // oneDNN's impl_info_str()
    dnnl::matmul prim;
    memory a, b, c, bias, scratch;
  };

  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  mutable dnnl::stream stream{engine};  // wait() is non-const in the C++ API
  bool use_sgemm = false;   // layouts the ladder cannot express (see the top of the file)
  std::vector<Rung> first;  // descending sizes; the piece at offset 0 (carries bias, accumulate)
  std::vector<Rung> rest;   // K-varying only: later pieces, which always accumulate, no bias
  // Shared by all rungs (pieces run one after another); oneDNN writes it during a const run().
  mutable std::vector<float> scratchpad;
  // K varying only: the zero-padded last piece's rows of A (K, M) and B (K, N), kPaddedTail - 1
  // rows and their zero padding at most, as bytes of the input type.
  mutable std::vector<unsigned char> tail_a, tail_b;
  // M varying, bf16: B in the blocked layout oneDNN's kernels read (see the top), written by
  // `pack` at the start of every run() and read by every piece of it.
  bool packed_b = false;
  dnnl::reorder pack;
  memory pack_src, pack_dst, pack_scratch;
  mutable AlignedBuffer<unsigned char> packed_b_buf;

  // B's descriptor as stored: (K,N) row-major, or (N,K) row-major when b_transposed.
  static memory::desc plain_b_desc(const MatmulDesc& d, int64_t k, memory::data_type in) {
    return d.b_transposed ? memory::desc(Dims{k, d.n}, in, Dims{1, d.k})
                          : memory::desc(Dims{k, d.n}, in, Dims{d.n, 1});
  }

  // b_layout: B's descriptor for the primitive, or nullptr for B as stored.
  Rung make_rung(const MatmulDesc& d, int64_t size, bool accumulate, bool bias,
                 const memory::desc* b_layout = nullptr) {
    const int64_t m = d.varying == VaryingDim::m ? size : d.m;
    const int64_t k = d.varying == VaryingDim::k ? size : d.k;
    const memory::data_type in =
        d.precision == MatmulPrecision::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    // Strides (in elements) use the maxima, which equal the actual sizes wherever the ladder is
    // used.
    const memory::desc a_md = d.a_transposed ? memory::desc(Dims{m, k}, in, Dims{1, d.m})
                                             : memory::desc(Dims{m, k}, in, Dims{d.k, 1});
    const memory::desc b_md = b_layout ? *b_layout : plain_b_desc(d, k, in);
    const memory::desc c_md = matrix_desc(m, d.n, false);
    const memory::desc bias_md = bias ? matrix_desc(1, d.n, false) : memory::desc();

    dnnl::primitive_attr attr;
    // User scratchpad: oneDNN would otherwise allocate it at every execution.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
#if DNNL_VERSION_MAJOR >= 3
    dnnl::matmul::primitive_desc pd(engine, a_md, b_md, bias_md, c_md, attr);
#else
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, bias_md, c_md), attr, engine);
#endif
    Rung r;
    r.size = size;
    r.implementation = pd.impl_info_str();
    r.prim = dnnl::matmul(pd);
    g_primitives_created.fetch_add(1, std::memory_order_relaxed);
    r.a = memory(a_md, engine, DNNL_MEMORY_NONE);
    r.b =
        memory(pd.weights_desc(), engine, DNNL_MEMORY_NONE);  // b_md, or the layout chosen for any
    r.c = memory(c_md, engine, DNNL_MEMORY_NONE);
    if (bias) r.bias = memory(bias_md, engine, DNNL_MEMORY_NONE);
    r.scratch = memory(pd.scratchpad_desc(), engine, DNNL_MEMORY_NONE);
    return r;
  }

  // M varying, bf16: creates every rung with B in the layout oneDNN picks for the largest
  // (format_tag::any), and the reorder that writes it. False, with nothing kept, where that layout
  // is B as stored, a rung would take it with a kernel other than a brgemm one (the kind oneDNN
  // picks for B as stored; a reference kernel would be slow), or oneDNN has no implementation
  // for it.
  bool create_packed_rungs(const MatmulDesc& d, const std::vector<int64_t>& sizes) {
    const memory::desc plain = plain_b_desc(d, d.k, memory::data_type::bf16);
    const memory::desc any(Dims{d.k, d.n}, memory::data_type::bf16, memory::format_tag::any);
    std::vector<Rung> rungs;
    memory::desc chosen;
    dnnl::reorder::primitive_desc pack_pd;
    try {
      // The largest rung, created with `any`, already reads the chosen layout: it is the first.
      rungs.push_back(make_rung(d, sizes.front(), d.accumulate, d.bias, &any));
      chosen = rungs.front().b.get_desc();
      if (chosen == plain) return false;
      for (size_t i = 1; i < sizes.size(); ++i)
        rungs.push_back(make_rung(d, sizes[i], d.accumulate, d.bias, &chosen));
      for (const Rung& r : rungs)
        if (!is_brgemm(r.implementation)) return false;
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      pack_pd = dnnl::reorder::primitive_desc(engine, plain, engine, chosen, attr);
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) throw;  // out of memory and the like are errors
      return false;
    }
    pack = dnnl::reorder(pack_pd);
    g_primitives_created.fetch_add(1, std::memory_order_relaxed);
    pack_scratch = memory(pack_pd.scratchpad_desc(), engine, DNNL_MEMORY_NONE);
    pack_src = memory(plain, engine, DNNL_MEMORY_NONE);
    pack_dst = memory(chosen, engine, DNNL_MEMORY_NONE);
    packed_b_buf = AlignedBuffer<unsigned char>(chosen.get_size());
    first = std::move(rungs);
    packed_b = true;
    return true;
  }

  // Writes B into packed_b_buf in the rungs' layout; returns the buffer.
  const void* pack_b(const void* b) const {
    pack_src.set_data_handle(const_cast<void*>(b));
    pack_dst.set_data_handle(packed_b_buf.data());
    pack_scratch.set_data_handle(scratchpad.data());
    pack.execute(
        stream,
        {{DNNL_ARG_FROM, pack_src}, {DNNL_ARG_TO, pack_dst}, {DNNL_ARG_SCRATCHPAD, pack_scratch}});
    stream.wait();
    return packed_b_buf.data();
  }

  // oneDNN's memory objects take non-const handles; A, B and bias are only read.
  void execute(const Rung& r, float* c, const void* a, const void* b, const float* bias) const {
    r.a.set_data_handle(const_cast<void*>(a));
    r.b.set_data_handle(const_cast<void*>(b));
    r.c.set_data_handle(c);
    r.scratch.set_data_handle(scratchpad.data());
    if (bias) {
      r.bias.set_data_handle(const_cast<float*>(bias));
      r.prim.execute(stream, {{DNNL_ARG_SRC, r.a},
                              {DNNL_ARG_WEIGHTS, r.b},
                              {DNNL_ARG_BIAS, r.bias},
                              {DNNL_ARG_DST, r.c},
                              {DNNL_ARG_SCRATCHPAD, r.scratch}});
    } else {
      r.prim.execute(stream, {{DNNL_ARG_SRC, r.a},
                              {DNNL_ARG_WEIGHTS, r.b},
                              {DNNL_ARG_DST, r.c},
                              {DNNL_ARG_SCRATCHPAD, r.scratch}});
    }
    stream.wait();
  }
};

MatmulPlan::MatmulPlan(const MatmulDesc& desc) : desc_(desc), impl_(std::make_unique<Impl>()) {
  const MatmulDesc& d = desc_;
  CPUFT_CHECK(d.m > 0 && d.n > 0 && d.k > 0, "matmul sizes m=", d.m, " n=", d.n, " k=", d.k);
  CPUFT_CHECK(!(d.bias && d.accumulate), "matmul: bias together with accumulate is not supported");
  Impl& im = *impl_;
  // dnnl_sgemm where the ladder cannot express the layout, and where it was measured clearly
  // faster: M varying with B stored (K,N) and no bias, i.e. backward-data, 25-40% faster than
  // brgemm on the BERT shapes (docs/gemm.md); K varying with a C of BERT-base's sizes or larger,
  // i.e. backward-weights (top of the file).
  const bool ladder_cannot = (d.varying == VaryingDim::m && d.a_transposed) ||
                             (d.varying == VaryingDim::k && (!d.a_transposed || d.b_transposed));
  if (d.precision == MatmulPrecision::bf16) {
    CPUFT_CHECK(!ladder_cannot, "bf16 matmul: the varying dimension may not be the contiguous one ",
                "of a stored input (no bf16 gemm function to fall back on)");
  } else {
    im.use_sgemm = ladder_cannot ||
                   (d.varying == VaryingDim::m && !d.b_transposed && !d.bias) ||  // backward-data
                   (d.varying == VaryingDim::k &&
                    std::min(d.m, d.n) >= kSgemmWeightsMinDim);  // large backward-weights
  }
  if (im.use_sgemm) return;

  // Rung sizes: the whole size when nothing varies; else the maximum, every power of two below it
  // (which lets a greedy split express every size from 1 to the maximum) and every 3 * 2^j below
  // it (fewer, larger pieces: 1600 = 1536 + 64 instead of 1024 + 512 + 64). Creating a rung costs
  // about a millisecond.
  std::vector<int64_t> sizes;
  if (d.varying == VaryingDim::none) {
    sizes.push_back(d.m);
  } else {
    const int64_t max = d.varying == VaryingDim::m ? d.m : d.k;
    sizes.push_back(max);
    for (int64_t s = 1; s < max; s *= 2) {
      sizes.push_back(s);
      if (3 * s < max && s >= 2) sizes.push_back(3 * s);
    }
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
  }
  const bool packed = d.pack_b && d.precision == MatmulPrecision::bf16 &&
                      d.varying == VaryingDim::m && im.create_packed_rungs(d, sizes);
  if (!packed) {
    for (int64_t s : sizes) im.first.push_back(im.make_rung(d, s, d.accumulate, d.bias));
  }
  if (d.varying == VaryingDim::k && !(d.accumulate && !d.bias)) {
    for (int64_t s : sizes) im.rest.push_back(im.make_rung(d, s, true, false));
  }
  size_t scratch_bytes = 0;
  for (const auto* rungs : {&im.first, &im.rest}) {
    for (const auto& r : *rungs)
      scratch_bytes = std::max(scratch_bytes, r.scratch.get_desc().get_size());
  }
  if (im.packed_b) {
    scratch_bytes = std::max(scratch_bytes, im.pack_scratch.get_desc().get_size());
  }
  im.scratchpad.assign((scratch_bytes + sizeof(float) - 1) / sizeof(float) + 1, 0.0f);
  if (d.varying == VaryingDim::k) {
    const size_t in_bytes = d.precision == MatmulPrecision::bf16 ? sizeof(bf16) : sizeof(float);
    // A tail has fewer than kPaddedTail rows and runs as the smallest rung that holds them: at most
    // kPaddedTail rows (a rung whenever the maximum exceeds it), or the maximum.
    const int64_t rows = std::min(kPaddedTail, d.k);
    im.tail_a.assign(static_cast<size_t>(rows * d.m) * in_bytes, 0);
    im.tail_b.assign(static_cast<size_t>(rows * d.n) * in_bytes, 0);
  }
}

std::string MatmulPlan::implementation() const {
  return impl_->use_sgemm ? "dnnl_sgemm" : impl_->first.front().implementation;
}

bool MatmulPlan::packs_b() const {
  return impl_->packed_b;
}

MatmulPlan::~MatmulPlan() = default;
MatmulPlan::MatmulPlan(MatmulPlan&&) noexcept = default;
MatmulPlan& MatmulPlan::operator=(MatmulPlan&&) noexcept = default;

void MatmulPlan::run(float* c, const float* a, const float* b, const float* bias,
                     int64_t varying_size) const {
  CPUFT_CHECK(desc_.precision == MatmulPrecision::f32, "matmul: fp32 inputs given to a bf16 plan");
  run_typed(c, a, b, bias, varying_size);
}

void MatmulPlan::run(float* c, const bf16* a, const bf16* b, const float* bias,
                     int64_t varying_size) const {
  CPUFT_CHECK(desc_.precision == MatmulPrecision::bf16,
              "matmul: bf16 inputs given to an fp32 plan");
  run_typed(c, a, b, bias, varying_size);
}

template <typename In>
void MatmulPlan::run_typed(float* c, const In* a, const In* b, const float* bias,
                           int64_t varying_size) const {
  const MatmulDesc& d = desc_;
  const Impl& im = *impl_;
  CPUFT_CHECK((bias != nullptr) == d.bias, "matmul: bias pointer must be given iff desc.bias");
  int64_t m = d.m, k = d.k;
  if (d.varying != VaryingDim::none) {
    const int64_t max = d.varying == VaryingDim::m ? d.m : d.k;
    CPUFT_CHECK(varying_size >= 0 && varying_size <= max, "matmul: varying size ", varying_size,
                " outside [0, ", max, "]");
    (d.varying == VaryingDim::m ? m : k) = varying_size;
  }
  if (m == 0) return;
  if (k == 0) {  // empty sum: C = bias or 0, or C unchanged when accumulating
    if (d.accumulate) return;
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * d.n;
      if (bias) {
        std::copy(bias, bias + d.n, row);
      } else {
        std::fill(row, row + d.n, 0.0f);
      }
    }
    return;
  }

  if constexpr (std::is_same_v<In, float>) {
    if (im.use_sgemm) {
      float beta = d.accumulate ? 1.0f : 0.0f;
      if (bias) {  // sgemm has no bias input: start C from the broadcast bias and add the product
        for (int64_t i = 0; i < m; ++i) std::copy(bias, bias + d.n, c + i * d.n);
        beta = 1.0f;
      }
      sgemm(d.a_transposed, d.b_transposed, m, d.n, k, 1.0f, a, d.a_transposed ? m : k, b,
            d.b_transposed ? k : d.n, beta, c, d.n);
      return;
    }
  }

  if (d.varying == VaryingDim::none) {
    im.execute(im.first.front(), c, a, b, bias);
    return;
  }
  // Greedy split into the largest rungs that fit; rungs are in descending order.
  const void* b_run = im.packed_b ? im.pack_b(b) : b;
  int64_t done = 0;
  const int64_t total = d.varying == VaryingDim::m ? m : k;
  for (size_t i = 0; i < im.first.size() && done < total; ++i) {
    // K varying: pieces of kPaddedTail rows or more, the rest as one padded piece below.
    if (d.varying == VaryingDim::k && im.first[i].size < kPaddedTail) break;
    while (total - done >= im.first[i].size) {
      if (d.varying == VaryingDim::m) {
        // Rows [done, done + size): A (M,K) and C (M,N) are row-major, so a row offset.
        im.execute(im.first[i], c + done * d.n, a + done * d.k, b_run, bias);
      } else {
        // Partial sum over K rows [done, done + size) of A (K,M) and B (K,N).
        const Impl::Rung& r = (done == 0 || im.rest.empty()) ? im.first[i] : im.rest[i];
        im.execute(r, c, a + done * d.m, b + done * d.n, done == 0 ? bias : nullptr);
      }
      done += im.first[i].size;
    }
  }
  if (done < total) {
    CPUFT_CHECK(d.varying == VaryingDim::k, "matmul ladder covered ", done, " of ", total);
    // K's last rows: one piece of the smallest rung that holds them, zero rows after them.
    const int64_t rows = total - done;
    size_t i = im.first.size() - 1;
    while (im.first[i].size < rows) --i;
    const int64_t size = im.first[i].size;
    auto* tail_a = reinterpret_cast<In*>(im.tail_a.data());
    auto* tail_b = reinterpret_cast<In*>(im.tail_b.data());
    CPUFT_CHECK(static_cast<size_t>(size * d.m) * sizeof(In) <= im.tail_a.size(), "matmul tail of ",
                size, " rows");
    std::copy(a + done * d.m, a + total * d.m, tail_a);
    std::fill(tail_a + rows * d.m, tail_a + size * d.m, In{});
    std::copy(b + done * d.n, b + total * d.n, tail_b);
    std::fill(tail_b + rows * d.n, tail_b + size * d.n, In{});
    const Impl::Rung& r = (done == 0 || im.rest.empty()) ? im.first[i] : im.rest[i];
    im.execute(r, c, tail_a, tail_b, done == 0 ? bias : nullptr);
  }
}

namespace {

// Whether a bf16 forward product packs W once per run (the top of the file says where it pays).
// The CPU's AMX, not oneDNN's: a oneDNN capped below AMX (ONEDNN_MAX_CPU_ISA) keeps the AMX rule,
// which costs speed, not correctness.
bool forward_packs_weights(int64_t in_features, int64_t out_features) {
  __builtin_cpu_init();
  return in_features > out_features || !__builtin_cpu_supports("amx-bf16");
}

}  // namespace

LinearPlans::LinearPlans(int64_t max_rows, int64_t in_features, int64_t out_features,
                         MatmulPrecision precision, const std::string& name, bool with_bias)
    : fwd(MatmulDesc{.m = max_rows,
                     .n = out_features,
                     .k = in_features,
                     .b_transposed = true,
                     .bias = with_bias,
                     .varying = VaryingDim::m,
                     .precision = precision,
                     .pack_b = forward_packs_weights(in_features, out_features)}),
      bwd_data(MatmulDesc{.m = max_rows,
                          .n = in_features,
                          .k = out_features,
                          .varying = VaryingDim::m,
                          .precision = precision,
                          .pack_b = true}),
      bwd_weights(MatmulDesc{.m = out_features,
                             .n = in_features,
                             .k = max_rows,
                             .a_transposed = true,
                             .accumulate = true,
                             .varying = VaryingDim::k,
                             .precision = precision}),
      fwd_slot(profile::register_slot(name + ".fwd")),
      bwd_data_slot(profile::register_slot(name + ".bwd_data")),
      bwd_weights_slot(profile::register_slot(name + ".bwd_weights")) {}

void LinearPlans::forward(float* y, const float* x, const float* w, const float* b,
                          int64_t rows) const {
  profile::Scope scope(fwd_slot);
  fwd.run(y, x, w, b, rows);
}

void LinearPlans::backward_data(float* d_x, const float* d_y, const float* w, int64_t rows) const {
  profile::Scope scope(bwd_data_slot);
  bwd_data.run(d_x, d_y, w, nullptr, rows);
}

void LinearPlans::backward_weights(float* d_w, const float* d_y, const float* x,
                                   int64_t rows) const {
  profile::Scope scope(bwd_weights_slot);
  bwd_weights.run(d_w, d_y, x, nullptr, rows);
}

namespace {

// Runs `plan` on the operands' copies that match its precision.
void run_operands(const MatmulPlan& plan, float* c, Operand a, Operand b, const float* bias,
                  int64_t rows) {
  if (plan.desc().precision == MatmulPrecision::bf16) {
    CPUFT_CHECK(a.b16 != nullptr && b.b16 != nullptr, "bf16 linear product without bf16 inputs");
    plan.run(c, a.b16, b.b16, bias, rows);
  } else {
    CPUFT_CHECK(a.f32 != nullptr && b.f32 != nullptr, "fp32 linear product without fp32 inputs");
    plan.run(c, a.f32, b.f32, bias, rows);
  }
}

}  // namespace

void LinearPlans::forward(float* y, Operand x, Operand w, const float* b, int64_t rows) const {
  profile::Scope scope(fwd_slot);
  run_operands(fwd, y, x, w, b, rows);
}

void LinearPlans::backward_data(float* d_x, Operand d_y, Operand w, int64_t rows) const {
  profile::Scope scope(bwd_data_slot);
  run_operands(bwd_data, d_x, d_y, w, nullptr, rows);
}

void LinearPlans::backward_weights(float* d_w, Operand d_y, Operand x, int64_t rows) const {
  profile::Scope scope(bwd_weights_slot);
  run_operands(bwd_weights, d_w, d_y, x, nullptr, rows);
}

void strided_gemm(bool a_transposed, bool b_transposed, int64_t M, int64_t N, int64_t K,
                  float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                  float* C, int64_t ldc) {
  CPUFT_CHECK(M >= 0 && N >= 0 && K >= 0, "strided_gemm sizes ", M, " ", N, " ", K);
  sgemm(a_transposed, b_transposed, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int64_t onednn_primitives_created() {
  return g_primitives_created.load(std::memory_order_relaxed);
}

bool cpu_has_bf16_matmul() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
}

void require_bf16_matmul(const char* flag, bool available) {
  CPUFT_REQUIRE(available, flag,
                " needs a CPU with AVX512_BF16 or AMX-BF16 instructions (without them bfloat16 "
                "products run slower than fp32); this CPU has neither: run without ",
                flag);
}

const char* onednn_version_string() {
  static const std::string text = [] {
    const dnnl_version_t* v = dnnl_version();
    const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "omp"
                          : v->cpu_runtime == DNNL_RUNTIME_TBB ? "tbb"
                          : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "seq"
                                                               : "other";
    return str(v->major, '.', v->minor, '.', v->patch, " (cpu runtime ", runtime, ")");
  }();
  return text.c_str();
}

}  // namespace cpuft
