// Builds without Apache Arrow: the hub parquet files cannot be read, and say how to fix that.
#include "core/check.h"
#include "data/glue_parquet_file.h"

namespace cpuft::glue_parquet {

bool supported() {
  return false;
}

void append_file(const std::string& path, const GlueTask&, const Columns&, Dataset&, int64_t&) {
  throw Error(str(path,
                  ": this cpuft was built without Apache Arrow, which reading the Hugging Face "
                  "hub's parquet files needs; run scripts/fetch_arrow.sh and rebuild (or pass "
                  "--data_dir with the GLUE TSV folders)"));
}

}  // namespace cpuft::glue_parquet
