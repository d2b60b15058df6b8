// Errors and checks.
//
// cpuft reports every problem by throwing cpuft::Error with one line of text. The apps catch it,
// print "error: <text>" and exit non-zero. Two kinds of text:
//   - input problems (bad file, bad flag): the message names the file, tensor or field; thrown with
//     `throw Error(str(...))` or CPUFT_REQUIRE.
//   - broken internal invariants: CPUFT_CHECK adds file:line so the bug can be found.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace cpuft {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error every rank of a job raises at the same point, decided from facts all ranks gathered
// (ranks that disagree on the run's set-up; an output folder in use). No peer waits on this rank,
// so the job ends normally, rank 0 printing the line: MPI_Abort killed the other ranks before
// their lines got out (seen under load: rank 1's "ranks disagree" line lost).
class AgreedError : public Error {
 public:
  using Error::Error;
};

// Concatenates anything that has operator<<, e.g. str("tensor '", name, "' has ", n, " bytes").
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream out;
  ((out << args), ...);
  return out.str();
}

[[noreturn]] void throw_check_failure(const char* file, int line, const char* condition,
                                      const std::string& message);

}  // namespace cpuft

// Internal invariant: CPUFT_CHECK(n > 0, "n=", n). Message gets "file:line: check failed".
#define CPUFT_CHECK(condition, ...)                                                            \
  do {                                                                                         \
    if (!(condition)) [[unlikely]]                                                             \
      ::cpuft::throw_check_failure(__FILE__, __LINE__, #condition, ::cpuft::str(__VA_ARGS__)); \
  } while (0)

// Input validation: CPUFT_REQUIRE(ok, "config.json: field 'x' must be ..."). Message only.
#define CPUFT_REQUIRE(condition, ...)                  \
  do {                                                 \
    if (!(condition)) [[unlikely]]                     \
      throw ::cpuft::Error(::cpuft::str(__VA_ARGS__)); \
  } while (0)
