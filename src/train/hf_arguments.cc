#include "train/hf_arguments.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "data/utf8.h"

namespace cpuft {

std::optional<bool> boolean_word(const std::string& word) {
  std::string lower = word;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* yes : {"true", "yes", "t", "y", "1"})
    if (lower == yes) return true;
  for (const char* no : {"false", "no", "f", "n", "0"})
    if (lower == no) return false;
  return std::nullopt;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& names) {
  const std::string nearest = nearest_name(name, names);
  return nearest.empty() ? "" : str(" (did you mean --", nearest, "?)");
}

// A token that starts a flag rather than being a value: "--x", or "-x" that is not a number.
bool looks_like_flag(const std::string& token) {
  if (token.size() < 2 || token[0] != '-') return false;
  if (token[1] == '-') return true;
  const char c = token[1];
  return !(std::isdigit(static_cast<unsigned char>(c)) || c == '.');
}

// Resolves a flag name as argparse does: exact, "no_" + a default-true boolean, or a unique
// prefix. Returns the canonical name, its shape and whether it is the negated form.
struct Resolved {
  std::string name;
  FlagShape shape;
  bool negated = false;
};

Resolved resolve(const std::string& written, const FlagLookup& lookup,
                 const std::vector<std::string>& all_names) {
  if (const auto shape = lookup(written)) return {written, *shape, false};
  if (written.starts_with("no_")) {
    const std::string base = written.substr(3);
    if (const auto shape = lookup(base);
        shape && shape->kind == FlagShape::Kind::boolean && shape->default_true)
      return {base, *shape, true};
  }
  std::vector<std::string> matches;
  for (const std::string& name : all_names)
    if (name.starts_with(written)) matches.push_back(name);
  if (matches.size() == 1) return {matches[0], *lookup(matches[0]), false};
  if (matches.size() > 1) {
    std::string list;
    for (size_t i = 0; i < matches.size() && i < 4; ++i) list += (i ? ", --" : "--") + matches[i];
    throw UsageError(
        str("ambiguous flag --", written, ": could be ", list, matches.size() > 4 ? ", ..." : ""));
  }
  throw UsageError(str("unknown flag --", written, did_you_mean(written, all_names)));
}

std::string boolean_value(const std::string& flag, const std::string& word) {
  const std::optional<bool> value = boolean_word(word);
  if (!value)
    throw UsageError(
        str("--", flag, ": expected a boolean (true/false, yes/no, 1/0), got '", word, "'"));
  return *value ? "true" : "false";
}

bool is_args_file_name(const std::string& token) {
  for (const char* ext : {".json", ".yaml", ".yml"})
    if (token.ends_with(ext)) return true;
  return false;
}

}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = std::max<size_t>(3, name.size() / 3) + 1;
  for (const std::string& candidate : names) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

ParsedCommandLine parse_command_line(const std::vector<std::string>& args, const FlagLookup& lookup,
                                     const std::vector<std::string>& all_names) {
  ParsedCommandLine parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (token == "-h" || token == "--help") {
      parsed.help = true;
      continue;
    }
    if (!looks_like_flag(token)) {
      parsed.positional.push_back(token);
      continue;
    }
    if (!token.starts_with("--"))
      throw UsageError(str("unknown flag ", token, " (flags start with --)"));
    const size_t eq = token.find('=');
    const std::string written = token.substr(2, eq == std::string::npos ? eq : eq - 2);
    CPUFT_REQUIRE(!written.empty(), "empty flag name in '", token, "'");
    const Resolved flag = resolve(written, lookup, all_names);
    GivenFlag given{flag.name, {}, "command line"};
    const bool has_next = i + 1 < args.size() && !looks_like_flag(args[i + 1]);
    switch (flag.shape.kind) {
      case FlagShape::Kind::boolean:
        if (flag.negated) {
          if (eq != std::string::npos)
            throw UsageError(str("--no_", flag.name, " takes no value (got '", token, "')"));
          given.values = {"false"};
        } else if (eq != std::string::npos) {
          given.values = {boolean_value(flag.name, token.substr(eq + 1))};
        } else if (has_next && !(is_args_file_name(args[i + 1]) && !boolean_word(args[i + 1]))) {
          given.values = {boolean_value(flag.name, args[++i])};
        } else {
          given.values = {"true"};
        }
        break;
      case FlagShape::Kind::value:
        if (eq != std::string::npos) {
          given.values = {token.substr(eq + 1)};
        } else {
          if (!has_next) throw UsageError(str("--", flag.name, " needs a value"));
          given.values = {args[++i]};
        }
        break;
      case FlagShape::Kind::list:
        if (eq != std::string::npos) given.values = {token.substr(eq + 1)};
        while (eq == std::string::npos && i + 1 < args.size() && !looks_like_flag(args[i + 1]))
          given.values.push_back(args[++i]);
        if (given.values.empty())
          throw UsageError(str("--", flag.name, " needs at least one value"));
        break;
    }
    parsed.flags.push_back(std::move(given));
  }
  return parsed;
}

namespace {

// JSON values as the command line would spell them.
std::vector<std::string> json_values(const nlohmann::json& value) {
  if (value.is_boolean()) return {value.get<bool>() ? "true" : "false"};
  if (value.is_string()) return {value.get<std::string>()};
  if (value.is_number()) return {value.dump()};
  if (value.is_array()) {
    std::vector<std::string> out;
    for (const nlohmann::json& element : value) {
      CPUFT_REQUIRE(!element.is_array() && !element.is_object(), "nested lists are not flags");
      for (std::string& v : json_values(element)) out.push_back(std::move(v));
    }
    return out;
  }
  return {value.dump()};  // an object: JSON text, as HF takes dict fields from the command line
}

// Values an args file may expand to: aliases (*a) repeat a node, so ten nested lists of ten
// aliases would otherwise expand to 10^10 values ("billion laughs").
constexpr size_t kMaxYamlValues = 100000;

nlohmann::json yaml_to_json(const YAML::Node& node, size_t& budget) {
  CPUFT_REQUIRE(budget > 0, "expands to more than ", kMaxYamlValues, " values (nested aliases?)");
  --budget;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return node.Scalar();
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const YAML::Node& element : node) out.push_back(yaml_to_json(element, budget));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node)
        out[entry.first.as<std::string>()] = yaml_to_json(entry.second, budget);
      return out;
    }
  }
  return nullptr;
}

nlohmann::json read_args_document(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CPUFT_REQUIRE(in.good(), path, ": cannot open the args file");
  std::ostringstream text;
  text << in.rdbuf();
  if (path.ends_with(".yaml") || path.ends_with(".yml")) {
    // yaml-cpp passes any bytes through; the values become JSON (nlohmann checks JSON itself).
    const size_t bad = find_invalid_utf8(text.str());
    CPUFT_REQUIRE(bad == std::string_view::npos, path, ": not valid UTF-8 at byte ", bad);
    size_t budget = kMaxYamlValues;
    try {
      return yaml_to_json(YAML::Load(text.str()), budget);
    } catch (const YAML::Exception& e) {
      throw Error(str(path, ": not valid YAML: ", e.what()));
    } catch (const Error& e) {
      throw Error(str(path, ": ", e.what()));
    }
  }
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range (1e999)
    throw Error(str(path, ": not valid JSON: ", e.what()));
  }
}

}  // namespace

std::vector<GivenFlag> read_args_file(const std::string& path, const FlagLookup& lookup,
                                      const std::vector<std::string>& all_names) {
  const nlohmann::json document = read_args_document(path);
  CPUFT_REQUIRE(document.is_object(), path, ": must be one object of flag names to values");
  std::vector<GivenFlag> flags;
  for (const auto& [key, value] : document.items()) {
    const std::optional<FlagShape> shape = lookup(key);
    if (!shape)
      throw UsageError(str(path, ": unknown key '", key, "'", did_you_mean(key, all_names)));
    if (value.is_null()) continue;
    GivenFlag given{key, {}, path};
    try {
      given.values = json_values(value);
    } catch (const Error& e) {
      throw UsageError(str(path, ": key '", key, "': ", e.what()));
    }
    if (shape->kind == FlagShape::Kind::boolean) {
      if (given.values.size() != 1)
        throw UsageError(str(path, ": key '", key, "' must be a boolean"));
      given.values[0] = boolean_value(key, given.values[0]);
    } else if (shape->kind == FlagShape::Kind::value && given.values.size() != 1) {
      throw UsageError(str(path, ": key '", key, "' takes one value, got ", value.dump()));
    }
    flags.push_back(std::move(given));
  }
  return flags;
}

}  // namespace cpuft
