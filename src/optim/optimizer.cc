#include "optim/optimizer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "core/check.h"
#include "optim/adamw.h"
#include "optim/sgd.h"

namespace cpuft {

namespace {

constexpr const char* kValidOptims = "adamw_torch, adamw_torch_fused or sgd";

// transformers' _parse_optim_args: spaces removed, then "key=value" pairs split on commas.
std::map<std::string, std::string> parse_optim_args(const std::string& text) {
  std::string s = text;
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  std::map<std::string, std::string> args;
  if (s.empty()) return args;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(s.find(',', begin), s.size());
    const std::string pair = s.substr(begin, end - begin);
    const size_t eq = pair.find('=');
    CPUFT_REQUIRE(eq != std::string::npos && pair.find('=', eq + 1) == std::string::npos,
                  "optim_args '", text, "': '", pair, "' is not key=value");
    args[pair.substr(0, eq)] = pair.substr(eq + 1);
    if (end == s.size()) break;
    begin = end + 1;
  }
  return args;
}

double parse_double(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  CPUFT_REQUIRE(!value.empty() && end == value.c_str() + value.size(), "optim_args: ", key, "=",
                value, " is not a number");
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const std::string& optim_args,
                                          const ParamLayout& layout,
                                          const OptimizerOptions& options) {
  const std::map<std::string, std::string> args = parse_optim_args(optim_args);
  if (name == "adamw_torch" || name == "adamw_torch_fused") {
    CPUFT_REQUIRE(args.empty(), "optim ", name, " takes no optim_args (got '", optim_args,
                  "'; transformers would ignore them)");
    return std::make_unique<AdamW>(
        layout, AdamWOptions{options.adam_beta1, options.adam_beta2, options.adam_epsilon,
                             options.weight_decay});
  }
  if (name == "sgd") {
    SgdOptions sgd;
    sgd.weight_decay = options.weight_decay;
    for (const auto& [key, value] : args) {
      if (key == "momentum") {
        sgd.momentum = parse_double(key, value);
      } else if (key == "dampening") {
        sgd.dampening = parse_double(key, value);
      } else if (key == "nesterov") {
        const std::string v = lower(value);
        sgd.nesterov = v == "true" || v == "1" || v == "yes";
      } else if (key == "weight_decay") {
        parse_double(key, value);  // the Trainer's parameter groups override it
      } else {
        throw Error(
            str("optim_args: sgd takes momentum, dampening, nesterov and weight_decay, not '", key,
                "'"));
      }
    }
    return std::make_unique<Sgd>(layout, sgd);
  }
  throw Error(str("optim '", name, "' is not supported by cpuft (transformers' other optimizers, ",
                  "adafactor included, are not implemented); use ", kValidOptims));
}

void Optimizer::check_pass(const UpdatePass& pass, const ParamLayout& layout) {
  const size_t specs = layout.specs().size();
  CPUFT_CHECK(pass.bf16_copy.empty() || pass.bf16_copy.size() == specs,
              "update pass: ", pass.bf16_copy.size(), " bf16 copies for ", specs, " tensors");
  CPUFT_CHECK(pass.zero_grad.empty() || pass.zero_grad.size() == specs,
              "update pass: ", pass.zero_grad.size(), " zeroing flags for ", specs, " tensors");
}

}  // namespace cpuft
