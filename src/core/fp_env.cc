#include "core/fp_env.h"

#include <omp.h>
#include <pmmintrin.h>
#include <xmmintrin.h>

namespace cpuft {

namespace {
void enable_flush_denormals_this_thread() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}
}  // namespace

void enable_flush_denormals_all_threads() {
  enable_flush_denormals_this_thread();
#pragma omp parallel
  enable_flush_denormals_this_thread();
}

}  // namespace cpuft
