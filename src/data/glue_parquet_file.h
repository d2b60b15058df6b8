// Internal to src/data: the part of the hub parquet reader that needs Apache Arrow
// (glue_parquet_arrow.cc), or its stand-in for builds without Arrow (glue_parquet_no_arrow.cc).
#pragma once

#include <string>
#include <vector>

#include "data/data_reader.h"
#include "data/glue_tasks.h"

namespace cpuft::glue_parquet {

// Whether this build links Arrow/Parquet.
bool supported();

// The text columns and the split being read, for append_file.
struct Columns {
  std::string text_a;
  std::string text_b;  // empty: single-sentence task
  bool test_split = false;
};

// Appends the rows of one parquet file to data.examples (see read_glue_parquet_split);
// `next_row` is the row number of the file's first row across the split and is advanced.
void append_file(const std::string& path, const GlueTask& task, const Columns& columns,
                 Dataset& data, int64_t& next_row);

}  // namespace cpuft::glue_parquet
