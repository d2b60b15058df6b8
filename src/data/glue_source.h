// Where a GLUE task's data is, and the reader for the Hugging Face hub's GLUE parquet files.
//
// run_glue.py --task_name mrpc (or --dataset_name glue --dataset_config_name mrpc) calls
// load_dataset("glue", "mrpc"), which reads the parquet files of the hub dataset nyu-mll/glue from
// the huggingface_hub cache:
//   <hub cache>/datasets--nyu-mll--glue/refs/main           the commit of the revision "main"
//   <hub cache>/datasets--nyu-mll--glue/snapshots/<commit>/<config>/<split>-0000i-of-0000n.parquet
// with the configs cola sst2 mrpc qqp stsb mnli qnli rte wnli ax (= GlueTask::name) and the splits
// train, validation, test (mnli: validation_matched, validation_mismatched, test_matched,
// test_mismatched; ax: test only). find_glue_data() looks there, then in the TSV folders of
// download_glue_data.py's layout; read_glue_split(task, source, ...) reads either.
//
// Columns (run_glue.py's task_to_keys): cola, sst2: sentence; mrpc, stsb, rte, wnli: sentence1,
// sentence2; qqp: question1, question2; mnli, ax: premise, hypothesis; qnli: question, sentence;
// then label (int64 class id, -1 in test; float32 score for stsb, -1 in test) and idx (int32).
//
// Label ids. The hub's label is a ClassLabel whose names (stored with the file, in the schema
// metadata "huggingface") are, in id order: cola unacceptable/acceptable, sst2 negative/positive,
// mrpc not_equivalent/equivalent, qqp not_duplicate/duplicate, mnli and ax
// entailment/neutral/contradiction, qnli and rte entailment/not_entailment, wnli
// not_entailment/entailment. run_glue.py takes these names as its label_list, so label i is name i.
// GlueTask::labels lists the same names in the same order (glue_tasks.cc; the TSV files spell them
// 0/1 or as the words, mapped onto those names), so for the hub files as published the id is kept
// as is. The reader still maps through the names in the file's metadata: a file whose ClassLabel
// lists them in another order gets each label by name, and a name the task does not have is an
// error. A file without that metadata keeps the ids (checked to be in range).
//
// Errors are cpuft::Error with one line: "<path>: ..." for a file, or the list of every place
// tried when find_glue_data finds nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/data_reader.h"
#include "data/glue_tasks.h"

namespace cpuft {

struct GlueSource {
  enum class Kind {
    tsv,          // dir holds <task.folder>/train.tsv ... (download_glue_data.py layout)
    hub_parquet,  // dir is the snapshot .../datasets--nyu-mll--glue/snapshots/<commit>
  };
  Kind kind = Kind::tsv;
  std::string dir;
  // Where it came from, for the log: "--data_dir", "Hugging Face hub cache (HF_HOME)", "GLUE_DIR",
  // "the repository's data/glue".
  std::string origin;
};

// The data/glue folder of the source tree this build was configured from.
std::string default_repo_glue_dir();

// Where to look. Empty strings skip a place.
struct GlueSearch {
  // --data_dir: when set it is the only place (TSV), as before; not checked here (read_glue_split
  // reports a missing file).
  std::string data_dir;
  // The hub revision: a name with a file under refs/ ("main"), or a commit hash under snapshots/.
  std::string revision = "main";
  // The hub cache folder; empty: hf_hub_cache_dir().
  std::string hub_cache;
  // The repository's data/glue (where this build's source tree has it); empty skips it.
  std::string repo_data_dir = default_repo_glue_dir();
};

// The huggingface_hub cache folder, as huggingface_hub resolves it: $HF_HUB_CACHE (or the older
// $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub. A leading "~" is expanded.
std::string hf_hub_cache_dir();

// Finds the data of `task`, trying in order: search.data_dir; the hub cache (the parquet files of
// nyu-mll/glue at search.revision, also under the older repository name "glue", with a folder for
// task.name); $GLUE_DIR/<task.folder>; search.repo_data_dir/<task.folder>. A hub snapshot is
// passed over when this build has no Arrow (glue_parquet_supported()), and says so in `tried`.
// Returns nullopt when nothing is found; `tried` (when given) receives one entry per place:
// "<path> (<why not>)".
std::optional<GlueSource> locate_glue_data(const GlueTask& task, const GlueSearch& search,
                                           std::vector<std::string>* tried = nullptr);

// locate_glue_data, or throws Error with one line naming the task and every place tried.
GlueSource find_glue_data(const GlueTask& task, const GlueSearch& search = {});

// The hub's split name: "train", "validation", "test"; for MNLI "validation_matched" ... (an
// empty variant is "matched", as read_glue_split takes it). Throws Error for a split or variant
// the task does not have (the same message as read_glue_split).
std::string hub_split_name(const GlueTask& task, Split split, const std::string& variant = "");

// The parquet files of one split in a snapshot folder, in shard order:
// <snapshot>/<task.name>/<split>-<i>-of-<n>.parquet (all n shards), or else the files
// <snapshot>/<task.name>/<split>/*.parquet (the refs/convert/parquet layout). Throws Error when
// there are none or a shard is missing.
std::vector<std::string> glue_parquet_files(const GlueTask& task, const std::string& snapshot_dir,
                                            Split split, const std::string& variant = "");

// Whether this build reads parquet (it was configured with Apache Arrow; scripts/fetch_arrow.sh).
bool glue_parquet_supported();

// Reads one split from a hub snapshot folder into the same Dataset read_glue_split(task, data_dir,
// ...) gives for the TSV files: name "<task> <split> [variant]", text_a/text_b from the task's
// columns, labels mapped as described at the top (test rows with -1 unlabelled; stsb scores must
// lie in [0, 5]), index = the idx column (else the row number across the shards). Throws Error:
// a build without Arrow (one line saying how to get it), a file that is not parquet or is
// truncated, a missing or mistyped column, a null, invalid UTF-8, a label out of range, no rows.
Dataset read_glue_parquet_split(const GlueTask& task, const std::string& snapshot_dir, Split split,
                                const std::string& variant = "");

// Reads one split from wherever `source` points (TSV: read_glue_split(task, source.dir, ...)).
Dataset read_glue_split(const GlueTask& task, const GlueSource& source, Split split,
                        const std::string& variant = "");

}  // namespace cpuft
