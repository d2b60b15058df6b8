#include "train/progress.h"

#include <cstdio>

#include "core/check.h"

namespace cpuft {

void Progress::update(int64_t step, double loss, double samples_per_second,
                      double tokens_per_second, double mfu) {
  if (!enabled_) return;
  const double elapsed = watch_.seconds();
  const double eta =
      step > 0 ? elapsed / static_cast<double>(step) * static_cast<double>(total_ - step) : -1;
  const int width = 30;
  const int filled = total_ > 0 ? static_cast<int>(width * step / total_) : 0;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  char mfu_text[32] = "";
  if (mfu >= 0) std::snprintf(mfu_text, sizeof mfu_text, "  MFU %.1f%%", 100 * mfu);
  char line[240];
  std::snprintf(line, sizeof line,
                "\r[%s] %lld/%lld  loss %.4f  %.1f samples/s  %.0f tokens/s%s  ETA %s   ",
                bar.c_str(), static_cast<long long>(step), static_cast<long long>(total_), loss,
                samples_per_second, tokens_per_second, mfu_text, format_duration(eta).c_str());
  last_ = line;
  std::fputs(line, stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::message(const std::string& text) {
  if (enabled_ && drawn_) std::fputs("\r\033[K", stderr);
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
  if (enabled_ && drawn_) {
    std::fputs(last_.c_str(), stderr);
    std::fflush(stderr);
  }
}

void Progress::finish() {
  if (enabled_ && drawn_) std::fputs("\n", stderr);
  drawn_ = false;
}

}  // namespace cpuft
