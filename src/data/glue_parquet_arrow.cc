// The hub parquet reader on Apache Arrow/Parquet C++ (the pyarrow wheel's libarrow and
// libparquet, scripts/fetch_arrow.sh).
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/glue_parquet_file.h"

namespace cpuft::glue_parquet {

namespace {

// Arrow's messages can span lines; an Error is one line.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

template <typename T>
T ok_or_throw(arrow::Result<T> result, const std::string& context) {
  if (!result.ok()) throw Error(str(context, one_line(result.status().message())));
  return std::move(result).ValueOrDie();
}

void ok_or_throw(const arrow::Status& status, const std::string& context) {
  if (!status.ok()) throw Error(str(context, one_line(status.message())));
}

// The ClassLabel names of the label column, from the metadata `datasets` stores in the file:
// {"info": {"features": {"label": {"names": [...], "_type": "ClassLabel"}, ...}}}. Empty when the
// file has none.
std::vector<std::string> class_label_names(const arrow::Schema& schema, const std::string& path) {
  const auto& meta = schema.metadata();
  if (!meta) return {};
  const int key = meta->FindKey("huggingface");
  if (key < 0) return {};
  const nlohmann::json info = nlohmann::json::parse(meta->value(key), nullptr, false);
  if (info.is_discarded()) {
    throw Error(str(path, ": the \"huggingface\" schema metadata is not JSON"));
  }
  const nlohmann::json* features = nullptr;
  if (info.contains("info") && info["info"].is_object() && info["info"].contains("features")) {
    features = &info["info"]["features"];
  }
  if (!features || !features->is_object() || !features->contains("label")) return {};
  const nlohmann::json& label = (*features)["label"];
  if (!label.is_object() || !label.contains("names") || !label["names"].is_array()) return {};
  std::vector<std::string> names;
  for (const nlohmann::json& n : label["names"]) {
    if (!n.is_string()) throw Error(str(path, ": a ClassLabel name of 'label' is not a string"));
    names.push_back(n.get<std::string>());
  }
  return names;
}

std::shared_ptr<arrow::ChunkedArray> column(const arrow::Table& table, const std::string& name,
                                            const std::string& path) {
  std::shared_ptr<arrow::ChunkedArray> c = table.GetColumnByName(name);
  if (!c) {
    std::string names;
    for (const std::string& n : table.ColumnNames()) names += (names.empty() ? "" : ", ") + n;
    throw Error(str(path, ": no column '", name, "' (columns: ", names, ")"));
  }
  if (c->null_count() > 0) throw Error(str(path, ": column '", name, "' has nulls"));
  return c;
}

// Strings of a text column, whatever Arrow string type it has.
std::vector<std::string> strings(const arrow::ChunkedArray& c, const std::string& name,
                                 const std::string& path) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(c.length()));
  for (const auto& chunk : c.chunks()) {
    // Checks the offsets and that every value is UTF-8.
    const arrow::Status valid = chunk->ValidateFull();
    ok_or_throw(valid, str(path, ": column '", name, "': "));
    if (const auto* a = dynamic_cast<const arrow::StringArray*>(chunk.get())) {
      for (int64_t i = 0; i < a->length(); ++i) out.emplace_back(a->GetView(i));
    } else if (const auto* la = dynamic_cast<const arrow::LargeStringArray*>(chunk.get())) {
      for (int64_t i = 0; i < la->length(); ++i) out.emplace_back(la->GetView(i));
    } else if (const auto* v = dynamic_cast<const arrow::StringViewArray*>(chunk.get())) {
      for (int64_t i = 0; i < v->length(); ++i) out.emplace_back(v->GetView(i));
    } else {
      throw Error(
          str(path, ": column '", name, "' has type ", c.type()->ToString(), ", not a string"));
    }
  }
  return out;
}

// A numeric column as doubles (integers up to 2^53 are exact); `integer` says whether its type is
// an integer type.
std::vector<double> numbers(const arrow::ChunkedArray& c, const std::string& name,
                            const std::string& path, bool& integer) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(c.length()));
  integer = arrow::is_integer(c.type()->id());
  if (!integer && !arrow::is_floating(c.type()->id())) {
    throw Error(
        str(path, ": column '", name, "' has type ", c.type()->ToString(), ", not a number"));
  }
  for (const auto& chunk : c.chunks()) {
    const arrow::ArraySpan span(*chunk->data());
    for (int64_t i = 0; i < chunk->length(); ++i) {
      switch (c.type()->id()) {
#define CPUFT_NUMBER_CASE(ID, T)                                 \
  case arrow::Type::ID:                                          \
    out.push_back(static_cast<double>(span.GetValues<T>(1)[i])); \
    break;
        CPUFT_NUMBER_CASE(INT8, int8_t)
        CPUFT_NUMBER_CASE(INT16, int16_t)
        CPUFT_NUMBER_CASE(INT32, int32_t)
        CPUFT_NUMBER_CASE(INT64, int64_t)
        CPUFT_NUMBER_CASE(UINT8, uint8_t)
        CPUFT_NUMBER_CASE(UINT16, uint16_t)
        CPUFT_NUMBER_CASE(UINT32, uint32_t)
        CPUFT_NUMBER_CASE(UINT64, uint64_t)
        CPUFT_NUMBER_CASE(FLOAT, float)
        CPUFT_NUMBER_CASE(DOUBLE, double)
#undef CPUFT_NUMBER_CASE
        default:
          throw Error(
              str(path, ": column '", name, "' has type ", c.type()->ToString(), ", not a number"));
      }
    }
  }
  return out;
}

std::shared_ptr<arrow::Table> read_table(const std::string& path) {
  std::shared_ptr<arrow::io::ReadableFile> file =
      ok_or_throw(arrow::io::ReadableFile::Open(path), str(path, ": cannot open: "));
  const std::string bad = str(path, ": not a readable parquet file: ");
  std::unique_ptr<parquet::arrow::FileReader> reader =
      ok_or_throw(parquet::arrow::OpenFile(file, arrow::default_memory_pool()), bad);
  std::shared_ptr<arrow::Table> table = ok_or_throw(reader->ReadTable(), bad);
  ok_or_throw(table->ValidateFull(), bad);
  return table;
}

void append(const std::string& path, const GlueTask& task, const Columns& columns, Dataset& data,
            int64_t& next_row) {
  const std::shared_ptr<arrow::Table> table = read_table(path);
  const std::vector<std::string> a =
      strings(*column(*table, columns.text_a, path), columns.text_a, path);
  std::vector<std::string> b;
  if (!columns.text_b.empty())
    b = strings(*column(*table, columns.text_b, path), columns.text_b, path);
  bool integer = false;
  const std::vector<double> labels =
      numbers(*column(*table, "label", path), "label", path, integer);
  std::vector<double> idx;
  if (table->GetColumnByName("idx")) {
    bool idx_integer = false;
    idx = numbers(*column(*table, "idx", path), "idx", path, idx_integer);
    if (!idx_integer) throw Error(str(path, ": column 'idx' is not an integer column"));
  }

  // File label id -> task label id, through the ClassLabel names when the file has them.
  std::vector<int32_t> to_task;
  if (!task.is_regression()) {
    if (!integer) {
      throw Error(str(path, ": column 'label' has type ",
                      table->GetColumnByName("label")->type()->ToString(), ", but task ", task.name,
                      " is a classification task (integer class ids)"));
    }
    const std::vector<std::string> names = class_label_names(*table->schema(), path);
    if (names.empty()) {
      for (size_t i = 0; i < task.labels.size(); ++i) to_task.push_back(static_cast<int32_t>(i));
    }
    for (const std::string& name : names) {
      const auto it = std::find(task.labels.begin(), task.labels.end(), name);
      if (it == task.labels.end()) {
        throw Error(str(path, ": ClassLabel name '", name, "' is not a label of task ", task.name));
      }
      to_task.push_back(static_cast<int32_t>(it - task.labels.begin()));
    }
  }

  const int64_t rows = table->num_rows();
  for (int64_t r = 0; r < rows; ++r, ++next_row) {
    const size_t i = static_cast<size_t>(r);
    Example ex;
    ex.text_a = a[i];
    if (!columns.text_b.empty()) {
      ex.text_b = b[i];
      ex.has_b = true;
    }
    const double label = labels[i];
    if (label == -1.0 && columns.test_split) {
      ex.has_label = false;  // the hub's test splits have no labels
    } else if (task.is_regression()) {
      // STS-B similarity scores are defined on [0, 5].
      if (!(label >= 0.0 && label <= 5.0)) {
        throw Error(str(path, ": row ", r, ": label ", label, " is not a score in [0, 5]"));
      }
      ex.score = static_cast<float>(label);
      ex.has_label = true;
    } else {
      if (!(label >= 0.0 && label < static_cast<double>(to_task.size()))) {
        throw Error(str(path, ": row ", r, ": label ", label, " is not a class id in [0, ",
                        to_task.size(), ") of task ", task.name,
                        columns.test_split ? "" : " (-1, no label, is only for test splits)"));
      }
      ex.label = to_task[static_cast<size_t>(label)];
      ex.has_label = true;
    }
    ex.index = idx.empty() ? next_row : static_cast<int64_t>(idx[i]);
    data.examples.push_back(std::move(ex));
  }
}

}  // namespace

bool supported() {
  return true;
}

void append_file(const std::string& path, const GlueTask& task, const Columns& columns,
                 Dataset& data, int64_t& next_row) {
  // Arrow reports errors as Status; the Parquet reader can also throw (ParquetException).
  std::string what;
  try {
    append(path, task, columns, data, next_row);
    return;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  }
  throw Error(str(path, ": not a readable parquet file: ", one_line(what)));
}

}  // namespace cpuft::glue_parquet
