// For the dist tests: the error make_communicator() gives for (backend, launch), or "(no error)".
#pragma once

#include <string>

#include "core/check.h"
#include "parallel/communicator.h"
#include "parallel/launcher.h"

namespace cpuft {

inline std::string factory_error(const std::string& backend, const LaunchInfo& launch) {
  try {
    make_communicator(backend, launch);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace cpuft
