// Runs before anything else of cpuft: a CPU older than the one the binary was compiled for
// (CPUFT_MARCH, x86-64-v3 by default) would otherwise die with SIGILL and no message at the first
// AVX2 or FMA instruction, which may be in a static initializer. This file alone is compiled for
// the plain x86-64 baseline (apps/CMakeLists.txt), and its constructor's priority puts it ahead of
// every default-priority initializer of the executable (shared libraries such as oneDNN dispatch
// on the CPU themselves).
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#ifdef CPUFT_CPU_LEVEL  // "x86-64-v2", "x86-64-v3" or "x86-64-v4"; not defined for -march=native

namespace {

__attribute__((constructor(101))) void refuse_a_cpu_below_the_build_level() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports(CPUFT_CPU_LEVEL)) return;
  // write(2) and _exit: nothing of the C++ runtime that might already use newer instructions.
  const char message[] =
      "error: this cpuft binary was built for " CPUFT_CPU_LEVEL
      " CPUs and this CPU is older; build cpuft on it with -DCPUFT_MARCH=native (or the level "
      "it has, e.g. x86-64-v2)\n";
  ssize_t ignored = write(STDERR_FILENO, message, std::strlen(message));
  (void)ignored;
  _exit(1);
}

}  // namespace

#endif
