#include "core/check.h"

namespace cpuft {

void throw_check_failure(const char* file, int line, const char* condition,
                         const std::string& message) {
  std::string text = str(file, ":", line, ": check failed: ", condition);
  if (!message.empty()) text += str(" (", message, ")");
  throw Error(text);
}

}  // namespace cpuft
