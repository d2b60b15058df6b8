// Floating-point environment for compute threads.
#pragma once

namespace cpuft {

// Sets flush-to-zero and denormals-are-zero on the calling thread and on every OpenMP worker.
// Why: denormal gradients/moments made a MiniLM AdamW step ~100x slower on these machines.
void enable_flush_denormals_all_threads();

}  // namespace cpuft
