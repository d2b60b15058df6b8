// bench_onednn_forms: oneDNN's bf16 backward-weights product in the layouts MatmulPlan could hand
// it, timed against the layout it hands it now. It probes oneDNN itself, for forms MatmulPlan does
// not offer (yet), so it is the one program outside src/gemm that includes oneDNN.
//
//   dW(M=out, N=in) += dY^T(M, K) X(K, N), K = tokens (one rung of the ladder, fixed here)
//   "A stored (K,M)": dY as the step stores it, (tokens, out) row-major (now);
//   "A stored (M,K)": dY's bf16 copy written transposed;
//   "+ B packed": X already in the blocked layout oneDNN picks for B (format_tag::any), as a
//                 copy written in that layout would hand it (the copy's cost is not timed).
// Every form is first checked against a double dot product on 64 sampled outputs; each timed call
// follows 256 MiB of other reads (in the step the operands come from memory, not cache).
//   usage: cpuft_bench_onednn_forms [reps=9]      (threads: OMP_NUM_THREADS)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

namespace {

using dnnl::memory;
using Dims = memory::dims;
using dt = memory::data_type;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint16_t to_bf16_bits(float f) {  // nearest, ties to even (finite inputs)
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float from_bf16_bits(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

void evict_caches() {
  static const std::vector<unsigned char> other(size_t{256} << 20, 1);
  static volatile unsigned sink = 0;
  unsigned sum = 0;
  const int64_t lines = static_cast<int64_t>(other.size() / 64);
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (int64_t i = 0; i < lines; ++i) sum += other[static_cast<size_t>(i) * 64];
  sink = sink + sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 9;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  constexpr int64_t K = 1536;
  struct Shape {
    const char* name;
    int64_t out, in;
  };
  const Shape shapes[] = {{"bert qkv", 2304, 768},      {"bert attn_out", 768, 768},
                          {"bert ffn_up", 3072, 768},   {"bert ffn_down", 768, 3072},
                          {"minilm qkv", 1152, 384},    {"minilm attn_out", 384, 384},
                          {"minilm ffn_up", 1536, 384}, {"minilm ffn_down", 384, 1536}};
  std::printf(
      "oneDNN %d.%d.%d, %d OpenMP threads, bf16 backward-weights at K = %ld tokens,\n"
      "caches evicted before each call, median of %d: ms (GFLOP/s)\n",
      dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch, omp_get_max_threads(),
      long(K), reps);
  std::printf("%-16s %20s %20s %20s\n", "weight", "A stored (K,M)", "A stored (M,K)",
              "A (M,K) + B packed");
  for (const Shape& s : shapes) {
    const int64_t M = s.out, N = s.in;
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<uint16_t> dy(K * M), x(K * N), dy_t(M * K);  // dY (K,M), X (K,N), dY^T (M,K)
    for (auto& v : dy) v = to_bf16_bits(dist(gen));
    for (auto& v : x) v = to_bf16_bits(dist(gen));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t m = 0; m < M; ++m) dy_t[m * K + k] = dy[k * M + m];
    const memory::desc a_km(Dims{M, K}, dt::bf16, Dims{1, M});
    const memory::desc a_mk(Dims{M, K}, dt::bf16, Dims{K, 1});
    const memory::desc b_plain(Dims{K, N}, dt::bf16, Dims{N, 1});
    const memory::desc b_any(Dims{K, N}, dt::bf16, memory::format_tag::any);
    const memory::desc c_md(Dims{M, N}, dt::f32, Dims{N, 1});
    std::printf("%-16s", s.name);
    for (int form = 0; form < 3; ++form) {
      dnnl::primitive_attr attr;
      dnnl::post_ops ops;
      ops.append_sum(1.0f);  // accumulate, as the step's backward-weights does
      attr.set_post_ops(ops);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const memory::desc& a_md = form == 0 ? a_km : a_mk;
      const memory::desc& b_md = form == 2 ? b_any : b_plain;
#if DNNL_VERSION_MAJOR >= 3
      dnnl::matmul::primitive_desc pd(engine, a_md, b_md, c_md, attr);
#else
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine);
#endif
      dnnl::matmul prim(pd);
      std::vector<unsigned char> scratch(pd.scratchpad_desc().get_size() + 64);
      std::vector<unsigned char> b_buf(pd.weights_desc().get_size());
      memory b_src(b_plain, engine, x.data()), b_mem(pd.weights_desc(), engine, b_buf.data());
      dnnl::reorder(b_src, b_mem).execute(stream, b_src, b_mem);  // B in the form's layout
      stream.wait();
      std::vector<float> c(M * N, 0.0f);
      memory a_mem(a_md, engine, form == 0 ? dy.data() : dy_t.data());
      memory c_mem(c_md, engine, c.data()), s_mem(pd.scratchpad_desc(), engine, scratch.data());
      auto run = [&] {
        prim.execute(stream, {{DNNL_ARG_SRC, a_mem},
                              {DNNL_ARG_WEIGHTS, b_mem},
                              {DNNL_ARG_DST, c_mem},
                              {DNNL_ARG_SCRATCHPAD, s_mem}});
        stream.wait();
      };
      run();  // C = 0 + product: checked
      std::mt19937 pick(7);
      for (int t = 0; t < 64; ++t) {
        const int64_t i = std::uniform_int_distribution<int64_t>(0, M - 1)(pick);
        const int64_t j = std::uniform_int_distribution<int64_t>(0, N - 1)(pick);
        double want = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = double(from_bf16_bits(dy[k * M + i])) * from_bf16_bits(x[k * N + j]);
          want += p;
          mag += std::abs(p);
        }
        if (std::abs(c[i * N + j] - want) > 1e-5 * mag + 1e-6) {
          std::fprintf(stderr, "%s form %d: C[%ld,%ld] = %g, want %g\n", s.name, form, long(i),
                       long(j), c[i * N + j], want);
          return 1;
        }
      }
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        evict_caches();
        const double t0 = now_s();
        run();
        t.push_back(now_s() - t0);
      }
      std::sort(t.begin(), t.end());
      const double med = t[t.size() / 2];
      std::printf(" %9.2f (%7.1f)", med * 1e3,
                  2.0 * double(M) * double(N) * double(K) / med * 1e-9);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
