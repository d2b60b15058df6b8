#include "data/data_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <system_error>

#include "core/check.h"
#include "core/memory.h"
#include "data/utf8.h"

namespace cpuft {

namespace {

// ---- bytes, UTF-8, lines -------------------------------------------------------------------

std::string read_bytes(const std::string& path) {
  // A FIFO or a device (/dev/zero) would block or never end; a file larger than the memory left
  // would end in bad_alloc after minutes: both refused before reading.
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw Error(str(path, ": not a regular file"));
  if (std::filesystem::exists(status)) {
    const auto size = static_cast<int64_t>(std::filesystem::file_size(path, error));
    const int64_t available = available_memory_bytes();
    if (!error && available >= 0 && size > available / 2)
      throw Error(str(path, ": ", format_bytes(static_cast<double>(size)),
                      ", more than half of the ", format_bytes(static_cast<double>(available)),
                      " of memory available"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str(path, ": cannot open file (", std::strerror(errno), ")"));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(str(path, ": read failed"));
  return bytes;
}

// 1-based line of a byte offset. A line ends at "\n", "\r\n" or a lone "\r" (Python's universal
// newlines, which is what the Hugging Face readers see).
int64_t line_of(std::string_view text, size_t offset) {
  int64_t line = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')))
      ++line;
  }
  return line;
}

// The whole file is checked up front, so a bad byte is reported wherever it is (also in columns
// the reader would otherwise skip), with its line and byte offset.
void check_utf8(const std::string& path, std::string_view text) {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos)
    throw Error(str(path, ":", line_of(text, bad), ": invalid UTF-8 at byte offset ", bad));
}

// MRPC's train/dev files start with a UTF-8 byte order mark; it is not part of the first column
// name.
std::string_view strip_bom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

struct Line {
  std::string_view text;
  int64_t number;  // 1-based
};

// Splits on "\n", "\r\n" and lone "\r"; a missing final newline is fine. Empty lines are kept (the
// callers skip them) so that line numbers stay right.
std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  size_t start = 0;
  int64_t number = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    lines.push_back({text.substr(start, i - start), number++});
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < text.size()) lines.push_back({text.substr(start), number});
  return lines;
}

// Tabs only: GLUE fields contain unmatched '"', so no quote handling (Python's csv module with
// default quoting merges or drops rows here).
void split_tabs(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return;
    }
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

// ---- numbers ---------------------------------------------------------------------------------

// Whole-field integer, as pandas reads one ("+3" too).
bool parse_int(std::string_view s, int64_t& value) {
  if (s.size() > 1 && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size();
}

// Whole-field finite decimal number.
bool parse_double(std::string_view s, double& value) {
  if (s.size() > 1 && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(value);
}

std::string quoted_list(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "'" : ", '") + v + "'";
  return out;
}

// ---- GLUE TSV --------------------------------------------------------------------------------

const SplitFormat& split_format(const GlueTask& task, Split split) {
  const SplitFormat& format = task.split(split);
  if (format.files.empty()) {
    throw Error(str("task ", task.name, " has no ", split_name(split), " split"));
  }
  return format;
}

size_t variant_slot(const GlueTask& task, const SplitFormat& format, Split split,
                    const std::string& variant) {
  // An empty variant picks the first file (MNLI: matched), as run_glue evaluates matched first.
  if (variant.empty()) return 0;
  for (size_t i = 0; i < format.variants.size(); ++i) {
    if (format.variants[i] == variant) return i;
  }
  std::vector<std::string> valid;
  for (const std::string& v : format.variants) {
    if (!v.empty()) valid.push_back(v);
  }
  if (valid.empty()) {
    throw Error(
        str("task ", task.name, " ", split_name(split), " split has no variant '", variant, "'"));
  }
  throw Error(str("task ", task.name, " ", split_name(split), " split has no variant '", variant,
                  "'; valid: ", quoted_list(valid)));
}

}  // namespace

std::string glue_split_path(const GlueTask& task, const std::string& data_dir, Split split,
                            const std::string& variant) {
  const SplitFormat& format = split_format(task, split);
  const size_t slot = variant_slot(task, format, split, variant);
  std::string dir = data_dir;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  return dir + task.folder + "/" + format.files[slot];
}

Dataset read_glue_split(const GlueTask& task, const std::string& data_dir, Split split,
                        const std::string& variant) {
  const SplitFormat& format = split_format(task, split);
  const size_t slot = variant_slot(task, format, split, variant);
  Dataset data;
  data.path = glue_split_path(task, data_dir, split, variant);
  data.name = str(task.name, " ", split_name(split));
  if (!format.variants[slot].empty()) data.name += " " + format.variants[slot];

  const std::string bytes = read_bytes(data.path);
  check_utf8(data.path, bytes);
  const std::vector<Line> lines = split_lines(strip_bom(bytes));

  const size_t num_fields = static_cast<size_t>(format.num_fields);
  bool header_pending = format.header;
  std::vector<std::string_view> fields;
  int64_t row = 0;
  for (const Line& line : lines) {
    // Blank lines carry no row (Python's csv reader skips them too).
    if (line.text.empty()) continue;
    split_tabs(line.text, fields);
    if (fields.size() != num_fields) {
      throw Error(str(data.path, ":", line.number, ": expected ", num_fields,
                      " tab-separated fields, got ", fields.size()));
    }
    if (header_pending) {
      header_pending = false;
      continue;
    }
    Example ex;
    ex.text_a = fields[static_cast<size_t>(format.text_a)];
    if (format.text_b >= 0) {
      ex.text_b = fields[static_cast<size_t>(format.text_b)];
      ex.has_b = true;
    }
    if (format.label >= 0) {
      const std::string_view value = fields[static_cast<size_t>(format.label)];
      if (task.is_regression()) {
        double score = 0;
        // STS-B similarity scores are defined on [0, 5].
        if (!parse_double(value, score) || !(score >= 0.0 && score <= 5.0)) {
          throw Error(
              str(data.path, ":", line.number, ": score '", value, "' is not a number in [0, 5]"));
        }
        ex.score = static_cast<float>(score);
      } else {
        const auto& values = task.label_values_in_file;
        const auto it = std::find(values.begin(), values.end(), value);
        if (it == values.end()) {
          throw Error(str(data.path, ":", line.number, ": label '", value, "' is not one of ",
                          quoted_list(values), " (task ", task.name, ")"));
        }
        ex.label = static_cast<int32_t>(it - values.begin());
      }
      ex.has_label = true;
    }
    if (format.index >= 0) {
      const std::string_view id = fields[static_cast<size_t>(format.index)];
      if (!parse_int(id, ex.index)) {
        throw Error(str(data.path, ":", line.number, ": index '", id, "' is not an integer"));
      }
    } else {
      ex.index = row;
    }
    ++row;
    data.examples.push_back(std::move(ex));
  }
  if (data.examples.empty()) throw Error(str(data.path, ": no examples"));
  return data;
}

// ---- --train_file / --validation_file / --test_file ---------------------------------------

namespace {

// A cell of a data file. CSV/TSV cells are all text (their numeric type is inferred from the
// text, as pandas does); JSON keeps the type the file gives.
struct Cell {
  enum Kind { text, integer, real, other } kind = text;
  std::string value;  // the text, or the number written out
  int64_t i = 0;
  double d = 0;
};

struct Table {
  std::string path;
  bool typed = false;    // JSON: cells carry their own type
  bool records = false;  // rows are numbered by record (JSON array), not by line
  std::vector<std::string> columns;
  std::vector<int64_t> where;              // line (or record) of each row
  std::vector<std::vector<Cell>> rows;     // rows[r][c] belongs to columns[c]
  std::vector<std::vector<bool>> present;  // JSON rows may leave out a key
};

std::string location(const Table& t, size_t row) {
  return t.records ? str(t.path, ": record ", t.where[row]) : str(t.path, ":", t.where[row]);
}

std::string extension(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

void set_header(Table& t, std::vector<std::string> names, int64_t line) {
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) {
      throw Error(str(t.path, ":", line, ": column '", name, "' appears twice in the header"));
    }
  }
  t.columns = std::move(names);
}

void add_text_row(Table& t, std::vector<std::string> fields, int64_t line) {
  if (fields.size() != t.columns.size()) {
    throw Error(str(t.path, ":", line, ": expected ", t.columns.size(),
                    " fields (one per header column), got ", fields.size()));
  }
  std::vector<Cell> cells(fields.size());
  for (size_t c = 0; c < fields.size(); ++c) cells[c].value = std::move(fields[c]);
  t.where.push_back(line);
  t.rows.push_back(std::move(cells));
  t.present.emplace_back(t.columns.size(), true);
}

void parse_tsv(Table& t, std::string_view text) {
  std::vector<std::string_view> fields;
  bool have_header = false;
  for (const Line& line : split_lines(text)) {
    if (line.text.empty()) continue;
    split_tabs(line.text, fields);
    std::vector<std::string> owned(fields.begin(), fields.end());
    if (!have_header) {
      set_header(t, std::move(owned), line.number);
      have_header = true;
    } else {
      add_text_row(t, std::move(owned), line.number);
    }
  }
}

// RFC 4180: fields separated by ',', optionally enclosed in '"' with '""' standing for a quote;
// quoted fields may hold commas and line breaks. Like pandas, blank lines are skipped, a quote
// inside an unquoted field is an ordinary character and text after a closing quote is kept.
void parse_csv(Table& t, std::string_view text) {
  const size_t n = text.size();
  size_t i = 0;
  int64_t line = 1;
  bool have_header = false;
  auto at_break = [&](size_t k) { return k < n && (text[k] == '\n' || text[k] == '\r'); };
  auto skip_break = [&]() {  // consumes one line break at i
    if (text[i] == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
    ++i;
    ++line;
  };
  while (i < n) {
    if (at_break(i)) {  // blank line
      skip_break();
      continue;
    }
    const int64_t start_line = line;
    std::vector<std::string> fields;
    while (true) {
      std::string field;
      if (i < n && text[i] == '"') {
        ++i;
        while (true) {
          if (i >= n) {
            throw Error(str(t.path, ":", start_line, ": quoted field is never closed"));
          }
          const char c = text[i];
          if (c == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (c == '\n' || (c == '\r' && !(i + 1 < n && text[i + 1] == '\n'))) ++line;
          field += c;
          ++i;
        }
      }
      while (i < n && text[i] != ',' && !at_break(i)) field += text[i++];
      fields.push_back(std::move(field));
      if (i < n && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < n) skip_break();
      break;
    }
    if (!have_header) {
      set_header(t, std::move(fields), start_line);
      have_header = true;
    } else {
      add_text_row(t, std::move(fields), start_line);
    }
  }
}

Cell json_cell(const nlohmann::ordered_json& v) {
  Cell cell;
  if (v.is_string()) {
    cell.kind = Cell::text;
    cell.value = v.get<std::string>();
  } else if (v.is_number_integer()) {
    cell.kind = Cell::integer;
    cell.i = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
    cell.value = std::to_string(cell.i);
  } else if (v.is_number_float()) {
    cell.kind = Cell::real;
    cell.d = v.get<double>();
    cell.value = v.dump();
  } else {
    cell.kind = Cell::other;
    cell.value = v.dump();
  }
  return cell;
}

void add_json_row(Table& t, const nlohmann::ordered_json& obj, int64_t where) {
  const std::string loc = t.records ? str(t.path, ": record ", where) : str(t.path, ":", where);
  if (!obj.is_object()) throw Error(str(loc, ": expected a JSON object"));
  // Columns are the keys in order of first appearance (as Arrow builds the schema).
  for (const auto& item : obj.items()) {
    if (std::find(t.columns.begin(), t.columns.end(), item.key()) == t.columns.end()) {
      t.columns.push_back(item.key());
      for (auto& p : t.present) p.push_back(false);
      for (auto& r : t.rows) r.emplace_back();
    }
  }
  std::vector<Cell> cells(t.columns.size());
  std::vector<bool> present(t.columns.size(), false);
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const auto it = obj.find(t.columns[c]);
    if (it == obj.end() || it->is_null()) continue;
    // Cells hold int64: above INT64_MAX a label would wrap (18446744073709551615 would read as -1,
    // "unlabelled").
    if (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX) {
      throw Error(str(loc, ": column '", t.columns[c], "': ", it->dump(), " is beyond int64"));
    }
    cells[c] = json_cell(*it);
    present[c] = true;
  }
  t.where.push_back(where);
  t.rows.push_back(std::move(cells));
  t.present.push_back(std::move(present));
}

// One JSON object per line, or (as the datasets JSON loader also accepts) one array of objects.
void parse_json(Table& t, std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') {
    nlohmann::ordered_json doc;
    try {
      doc = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(str(t.path, ": ", e.what()));
    }
    t.records = true;
    int64_t record = 0;
    for (const auto& obj : doc) add_json_row(t, obj, ++record);
    return;
  }
  for (const Line& line : split_lines(text)) {
    if (line.text.find_first_not_of(" \t") == std::string_view::npos) continue;
    nlohmann::ordered_json obj;
    try {
      obj = nlohmann::ordered_json::parse(line.text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(str(t.path, ":", line.number, ": ", e.what()));
    }
    add_json_row(t, obj, line.number);
  }
}

Table read_table(const std::string& path) {
  Table t;
  t.path = path;
  const std::string ext = extension(path);
  if (ext != ".csv" && ext != ".tsv" && ext != ".json" && ext != ".jsonl") {
    throw Error(
        str(path, ": unknown data file type '", ext, "' (expected .csv, .tsv, .json or .jsonl)"));
  }
  const std::string bytes = read_bytes(path);
  check_utf8(path, bytes);
  const std::string_view text = strip_bom(bytes);
  if (ext == ".csv") {
    parse_csv(t, text);
  } else if (ext == ".tsv") {
    parse_tsv(t, text);
  } else {
    t.typed = true;
    parse_json(t, text);
  }
  if (t.rows.empty()) throw Error(str(path, ": no examples"));
  return t;
}

int find_column(const Table& t, const std::string& name) {
  const auto it = std::find(t.columns.begin(), t.columns.end(), name);
  return it == t.columns.end() ? -1 : static_cast<int>(it - t.columns.begin());
}

// How one label cell reads: JSON says so itself; CSV/TSV text is an integer, a real or a string,
// as pandas would type it.
Cell::Kind label_kind(const Table& t, const Cell& cell) {
  if (t.typed || cell.kind != Cell::text) return cell.kind;
  int64_t i = 0;
  double d = 0;
  if (parse_int(cell.value, i)) return Cell::integer;
  if (parse_double(cell.value, d)) return Cell::real;
  return Cell::text;
}

bool cell_integer(const Table& t, const Cell& cell, int64_t& v) {
  if (t.typed) {
    v = cell.i;
    return cell.kind == Cell::integer;
  }
  return parse_int(cell.value, v);
}

bool cell_number(const Table& t, const Cell& cell, double& v) {
  if (t.typed) {
    v = cell.kind == Cell::integer ? static_cast<double>(cell.i) : cell.d;
    return cell.kind == Cell::integer || cell.kind == Cell::real;
  }
  return parse_double(cell.value, v);
}

// pandas' default missing-value strings, and the spellings of infinity it parses: in a CSV/TSV
// label column run_glue would read them as NaN or inf and train on a non-finite label.
bool missing_or_infinite(std::string_view value) {
  static const std::set<std::string_view> words = {
      "#N/A",    "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN",     "-nan",      "1.#IND",
      "1.#QNAN", "<NA>",     "N/A", "NA",      "NULL",     "NaN",      "None",      "n/a",
      "nan",     "null",     "inf", "-inf",    "+inf",     "Infinity", "-Infinity", "+Infinity"};
  return words.count(value) > 0;
}

}  // namespace

DataFileLabels data_file_labels(const std::string& train_path) {
  const Table t = read_table(train_path);
  const int col = find_column(t, "label");
  if (col < 0) throw Error(str(train_path, ": no 'label' column"));
  const auto c = static_cast<size_t>(col);
  bool any_text = false, any_real = false, any_number = false;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (!t.present[r][c]) throw Error(str(location(t, r), ": no label"));
    const Cell& cell = t.rows[r][c];
    if (cell.value.empty()) throw Error(str(location(t, r), ": empty label"));
    if (!t.typed && missing_or_infinite(cell.value))
      throw Error(str(location(t, r), ": label '", cell.value,
                      "' is missing or not finite (pandas reads it as NaN or inf); remove the row "
                      "or give it a label"));
    switch (label_kind(t, cell)) {
      case Cell::text:
        any_text = true;
        break;
      case Cell::real:
        any_real = any_number = true;
        break;
      case Cell::integer:
        any_number = true;
        break;
      case Cell::other:
        throw Error(str(location(t, r), ": label ", cell.value, " is not a string or a number"));
    }
    // A JSON column cannot mix strings and numbers (Arrow refuses it, so run_glue does too). In
    // CSV/TSV one non-numeric cell makes the whole column text (pandas' object dtype).
    if (t.typed && any_text && any_number) {
      throw Error(str(location(t, r), ": label column mixes strings and numbers"));
    }
  }
  DataFileLabels labels;
  if (any_text) {
    std::set<std::string> unique;
    for (const auto& row : t.rows) unique.insert(row[c].value);
    labels.names.assign(unique.begin(), unique.end());  // std::string orders by code point
  } else if (any_real) {
    labels.regression = true;
  } else {
    std::set<int64_t> unique;
    for (size_t r = 0; r < t.rows.size(); ++r) {
      int64_t v = 0;
      cell_integer(t, t.rows[r][c], v);
      // run_glue would map -1 to "no label" and then fail in training; say so here instead.
      if (v == -1) throw Error(str(location(t, r), ": label -1 (unlabelled) in a train file"));
      unique.insert(v);
    }
    labels.integer = true;
    for (int64_t v : unique) labels.names.push_back(std::to_string(v));
  }
  return labels;
}

Dataset read_data_file(const std::string& path, const DataFileLabels& labels) {
  const Table t = read_table(path);
  Dataset data;
  data.name = path;
  data.path = path;

  const int label_col = find_column(t, "label");
  std::vector<int> text_cols;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (static_cast<int>(c) != label_col) text_cols.push_back(static_cast<int>(c));
  }
  if (text_cols.empty()) throw Error(str(path, ": no text column besides 'label'"));
  int col_a = text_cols[0];
  int col_b = text_cols.size() >= 2 ? text_cols[1] : -1;
  if (find_column(t, "sentence1") >= 0 && find_column(t, "sentence2") >= 0) {
    col_a = find_column(t, "sentence1");
    col_b = find_column(t, "sentence2");
  } else {
    for (int col : {col_a, col_b}) {
      if (col < 0) continue;
      const auto c = static_cast<size_t>(col);
      bool all_integers = !t.rows.empty();
      for (size_t r = 0; r < t.rows.size() && all_integers; ++r) {
        int64_t value = 0;
        all_integers = t.present[r][c] && cell_integer(t, t.rows[r][c], value);
      }
      const std::string& name = t.columns[c];
      if (name == "idx" || name == "index" || all_integers)
        data.notes.push_back(str(path, ": text column '", name,
                                 "' (the first columns besides 'label' are the text, as ",
                                 "run_glue.py picks them) ",
                                 all_integers ? "holds only integers" : "looks like an index",
                                 "; name the text columns sentence1 and sentence2 to choose them"));
    }
  }

  auto text_of = [&](size_t r, int col) -> std::string {
    const auto c = static_cast<size_t>(col);
    if (!t.present[r][c]) {
      throw Error(str(location(t, r), ": no value for column '", t.columns[c], "'"));
    }
    if (t.rows[r][c].kind != Cell::text) {
      throw Error(str(location(t, r), ": column '", t.columns[c], "' must be a string, got ",
                      t.rows[r][c].value));
    }
    return t.rows[r][c].value;
  };
  auto not_a_label = [&](size_t r, const Cell& cell) {
    return Error(str(location(t, r), ": label '", cell.value, "' is not one of ",
                     quoted_list(labels.names)));
  };

  for (size_t r = 0; r < t.rows.size(); ++r) {
    Example ex;
    ex.index = static_cast<int64_t>(r);
    ex.text_a = text_of(r, col_a);
    if (col_b >= 0) {
      ex.text_b = text_of(r, col_b);
      ex.has_b = true;
    }
    if (label_col >= 0 && t.present[r][static_cast<size_t>(label_col)]) {
      const Cell& cell = t.rows[r][static_cast<size_t>(label_col)];
      if (labels.regression) {
        double v = 0;
        if (!cell_number(t, cell, v)) {
          throw Error(str(location(t, r), ": label '", cell.value, "' is not a number"));
        }
        // Scores are float32: beyond float's range the conversion is undefined (in practice inf).
        if (!(std::fabs(v) <= std::numeric_limits<float>::max())) {
          throw Error(str(location(t, r), ": label '", cell.value, "' is beyond float's range"));
        }
        ex.score = static_cast<float>(v);
        ex.has_label = true;
      } else {
        std::string key = cell.value;
        if (labels.integer) {
          int64_t v = 0;
          if (!cell_integer(t, cell, v)) throw not_a_label(r, cell);
          key = std::to_string(v);
        } else if (cell.kind != Cell::text) {
          throw not_a_label(r, cell);
        }
        // run_glue keeps an integer -1 as "no label" (how unlabelled test rows are marked).
        if (!(labels.integer && key == "-1")) {
          const auto it = std::find(labels.names.begin(), labels.names.end(), key);
          if (it == labels.names.end()) throw not_a_label(r, cell);
          ex.label = static_cast<int32_t>(it - labels.names.begin());
          ex.has_label = true;
        }
      }
    }
    data.examples.push_back(std::move(ex));
  }
  return data;
}

GlueTask data_file_task(const DataFileLabels& labels) {
  GlueTask task;
  if (labels.regression) {
    task.metric_names = {"mse"};
  } else {
    task.labels = labels.names;
    task.label_values_in_file = labels.names;
    task.metric_names = {"accuracy"};
  }
  return task;
}

}  // namespace cpuft
