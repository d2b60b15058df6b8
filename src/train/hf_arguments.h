// HfArgumentParser's grammar: how a run_glue.py command line and args file are read.
//
// transformers' HfArgumentParser is argparse over the fields of dataclasses; run_glue.py users
// write, and cpuft therefore reads:
//   --flag value     --flag=value
//   --bool_flag      (true)      --bool_flag True|False|yes|no|t|f|y|n|1|0 (any case)
//   --no_bool_flag   (false; only for booleans whose default is true, as HfArgumentParser adds)
//   --list_flag a b c            (nargs="+": values up to the next --flag)
//   --per_device_train_batch 8   (a unique prefix of a flag name: argparse's allow_abbrev)
//   a JSON or YAML args file: {"flag": value, ...}; flags after it on the command line win.
// This file knows only the grammar; which flags exist and what they do is train_flags.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"

namespace cpuft {

// A usage error (unknown flag, bad or missing value): `cpuft train` prints it as one "error:"
// line and exits 2, as argparse does.
class UsageError : public Error {
 public:
  using Error::Error;
};

// What the grammar needs to know of a flag.
struct FlagShape {
  enum class Kind { boolean, value, list };
  Kind kind = Kind::value;
  bool default_true = false;  // a boolean whose default is true also has --no_<name>
};

// A flag name (without "--") -> its shape, or nullopt for a name that is no flag.
using FlagLookup = std::function<std::optional<FlagShape>(const std::string& name)>;

// One flag as given: its values (one for boolean and value flags, one or more for lists; a
// boolean's value is already "true" or "false"), and where it came from.
struct GivenFlag {
  std::string name;
  std::vector<std::string> values;
  std::string origin;  // "command line" or the args file's path
};

struct ParsedCommandLine {
  std::vector<std::string> positional;  // e.g. the args file
  std::vector<GivenFlag> flags;         // in the order given (a later one wins)
  bool help = false;                    // -h / --help
};

// Parses the arguments after `cpuft train`. `all_names` lists every flag, for prefixes and the
// "did you mean" of an unknown flag. Throws UsageError naming the flag.
ParsedCommandLine parse_command_line(const std::vector<std::string>& args, const FlagLookup& lookup,
                                     const std::vector<std::string>& all_names);

// Reads a JSON (.json) or YAML (.yaml, .yml) args file: one object of flag name -> value. Values
// become the strings the command line would have given (true/false, numbers as written, lists
// element by element, objects as JSON text); null means "not given". Unknown names are a
// UsageError naming the file and the key. File problems are an Error naming the file.
std::vector<GivenFlag> read_args_file(const std::string& path, const FlagLookup& lookup,
                                      const std::vector<std::string>& all_names);

// transformers' string_to_bool: true/false, yes/no, t/f, y/n, 1/0 in any case; nullopt otherwise.
std::optional<bool> boolean_word(const std::string& word);

// The name in `names` closest to `name` (edit distance), for "did you mean"; "" when none is
// close.
std::string nearest_name(const std::string& name, const std::vector<std::string>& names);

}  // namespace cpuft
