// `cpuft env` and `cpuft inspect`.
#pragma once

#include <string>

namespace cpuft {

// Prints (on rank 0) the kernels, oneDNN and its matmul kernels, the launcher, the backends and
// every rank's cores, threads and host, after starting the job with `backend`.
void print_environment(const std::string& backend);

// Loads a Hugging Face model folder and prints its shape, parameter count and what loading it
// initialised or ignored.
void print_model_summary(const std::string& dir);

}  // namespace cpuft
