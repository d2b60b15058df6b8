// The weight files of a Hugging Face model folder, as transformers saves them and hubs ship them.
//
// open_weight_files(dir) returns, in this order of preference (transformers 5.24's):
//   1. model.safetensors, alone (an index beside it is not read, as in transformers);
//   2. the shards of model.safetensors.index.json, sorted by file name. The index must be a JSON
//      object whose "weight_map" maps every tensor name to a shard file name; each shard named must
//      be a relative path inside dir (no absolute path, no ".." component) and a regular file;
//      every tensor of the map must be in the shard the map names, no tensor may be in two shards,
//      and every tensor of a shard must be in the map. Files the map does not name are ignored, as
//      transformers ignores them. "metadata" is not needed (transformers 5.24 fails without it).
//   3. otherwise an error: for pytorch_model.bin(.index.json) one line saying that cpuft never
//      loads pickles, with the one-line conversion with transformers; for tf_model.h5 and
//      flax_model.msgpack that transformers 5 reads neither; else the list of what was looked for.
// transformers itself is laxer with a sharded checkpoint: it reads every tensor of every shard the
// map names, wherever the map puts it; a tensor in two shards silently takes the later shard's
// value; a listed tensor that no shard holds is initialised afresh; shard names that leave the
// folder are followed. cpuft refuses each of these with one line naming the index and the tensor.
//
// Every file is checked to be a regular file before it is opened (a FIFO, a device or a
// directory is refused; SafetensorsFile::open checks again).
#pragma once

#include <string>
#include <vector>

#include "io/safetensors.h"

namespace cpuft {

std::vector<SafetensorsFile> open_weight_files(const std::string& model_dir);

// The command that turns a folder of PyTorch pickles into safetensors with transformers 5 (tested:
// every tensor and value kept, for bare BertModel and BertForSequenceClassification folders).
std::string pickle_conversion_command(const std::string& model_dir);

}  // namespace cpuft
