#include "train/encoded_dataset.h"

#include <algorithm>

#include "core/check.h"

namespace cpuft {

namespace {

// splitmix64: a small, fully specified generator, so shuffles are the same on every platform
// (std::shuffle's use of the generator is implementation-defined).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); the modulo bias is below n / 2^64, negligible for any dataset size.
  uint64_t below(uint64_t n) { return next() % n; }
};

std::vector<int64_t> permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  SplitMix64 rng{seed * 0x100000001B3ull + static_cast<uint64_t>(epoch)};
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[rng.below(static_cast<uint64_t>(i) + 1)]);
  return order;
}

}  // namespace

int64_t EncodedDataset::max_length() const {
  int64_t longest = 0;
  for (int64_t i = 0; i < size(); ++i) longest = std::max(longest, length(i));
  return longest;
}

int64_t EncodedDataset::longest_tokens(int64_t count) const {
  std::vector<int64_t> lengths(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i) lengths[static_cast<size_t>(i)] = length(i);
  const auto k = static_cast<std::ptrdiff_t>(std::clamp<int64_t>(count, 0, size()));
  std::nth_element(lengths.begin(), lengths.begin() + k, lengths.end(), std::greater<>());
  int64_t total = 0;
  for (std::ptrdiff_t i = 0; i < k; ++i) total += lengths[static_cast<size_t>(i)];
  return total;
}

EncodedDataset encode_dataset(const Dataset& dataset, const Tokenizer& tokenizer, int max_length) {
  const int64_t n = static_cast<int64_t>(dataset.examples.size());
  std::vector<Encoding> encodings(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < n; ++i) {
    const Example& e = dataset.examples[i];
    try {
      const std::string_view b = e.text_b;
      encodings[i] = tokenizer.encode(e.text_a, e.has_b ? &b : nullptr, max_length);
    } catch (const Error& error) {
      errors[i] = error.what();
    }
  }
  for (int64_t i = 0; i < n; ++i)
    CPUFT_REQUIRE(errors[i].empty(), dataset.name, ": example ", i, ": ", errors[i]);

  EncodedDataset out;
  out.has_labels = n > 0;
  for (int64_t i = 0; i < n; ++i) {
    const Example& e = dataset.examples[i];
    out.input_ids.insert(out.input_ids.end(), encodings[i].input_ids.begin(),
                         encodings[i].input_ids.end());
    out.token_type_ids.insert(out.token_type_ids.end(), encodings[i].token_type_ids.begin(),
                              encodings[i].token_type_ids.end());
    out.offsets.push_back(static_cast<int64_t>(out.input_ids.size()));
    out.labels.push_back(e.has_label ? e.label : -1);
    out.scores.push_back(e.score);
    out.indices.push_back(e.index);
    out.has_labels = out.has_labels && e.has_label;
  }
  return out;
}

void fill_batch(Batch& batch, const EncodedDataset& data, std::span<const int64_t> rows,
                bool regression, std::span<const int64_t> numbers) {
  CPUFT_CHECK(numbers.empty() || numbers.size() == rows.size(), numbers.size(), " numbers for ",
              rows.size(), " rows");
  batch.clear();
  for (int64_t row : rows) {
    const auto begin = static_cast<size_t>(data.offsets[row]);
    const auto count = static_cast<size_t>(data.length(row));
    batch.add_sequence({data.input_ids.data() + begin, count},
                       {data.token_type_ids.data() + begin, count});
    const int64_t j = batch.num_sequences() - 1;
    batch.sample_ids.push_back(numbers.empty() ? j : numbers[static_cast<size_t>(j)]);
    if (!data.has_labels) continue;
    if (regression)
      batch.targets.push_back(data.scores[row]);
    else
      batch.labels.push_back(data.labels[row]);
  }
}

std::vector<int64_t> epoch_order(const EncodedDataset& data, uint64_t seed, int64_t epoch,
                                 bool group_by_length, int64_t batch_size) {
  std::vector<int64_t> order = permutation(data.size(), seed, epoch);
  if (!group_by_length) return order;
  const int64_t mega = 50 * batch_size;
  auto longer = [&](int64_t a, int64_t b) { return data.length(a) > data.length(b); };
  for (int64_t start = 0; start < data.size(); start += mega) {
    const auto first = order.begin() + start;
    const auto last = order.begin() + std::min(start + mega, data.size());
    std::stable_sort(first, last, longer);
  }
  // The longest example goes first (HF swaps it with the first megabatch's head), so memory
  // peaks on step one.
  if (data.size() > 0) {
    const auto longest = std::max_element(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return data.length(a) < data.length(b);
    });
    std::iter_swap(order.begin(), longest);
  }
  return order;
}

int64_t batches_per_epoch(int64_t examples, int world_size, int64_t batch, bool drop_last) {
  const int64_t per_rank = (examples + world_size - 1) / world_size;
  return drop_last ? per_rank / batch : (per_rank + batch - 1) / batch;
}

int64_t steps_per_epoch(int64_t examples, int world_size, int64_t batch, int64_t accumulation,
                        bool drop_last) {
  const int64_t batches = batches_per_epoch(examples, world_size, batch, drop_last);
  return std::max<int64_t>(1, (batches + accumulation - 1) / accumulation);
}

std::vector<int64_t> pad_to_ranks(const std::vector<int64_t>& order, int world_size) {
  CPUFT_CHECK(world_size >= 1, "world size ", world_size);
  if (world_size == 1 || order.empty()) return order;
  const auto n = static_cast<int64_t>(order.size());
  const int64_t padded = (n + world_size - 1) / world_size * world_size;
  std::vector<int64_t> out(order);
  for (int64_t i = n; i < padded; ++i) out.push_back(order[static_cast<size_t>(i % n)]);
  return out;
}

std::vector<int> deal_by_tokens(std::span<const int64_t> lengths, int world_size) {
  const auto n = static_cast<int64_t>(lengths.size());
  CPUFT_CHECK(world_size >= 1 && n % world_size == 0, n, " examples for ", world_size, " ranks");
  std::vector<int> rank_of(static_cast<size_t>(n), 0);
  if (world_size == 1) return rank_of;
  std::vector<int64_t> by_length(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) by_length[static_cast<size_t>(i)] = i;
  std::stable_sort(by_length.begin(), by_length.end(), [&](int64_t a, int64_t b) {
    return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
  });
  const int64_t room = n / world_size;
  std::vector<int64_t> tokens(static_cast<size_t>(world_size), 0), count(tokens);
  for (const int64_t i : by_length) {
    int best = -1;
    for (int r = 0; r < world_size; ++r)
      if (count[static_cast<size_t>(r)] < room &&
          (best < 0 || tokens[static_cast<size_t>(r)] < tokens[static_cast<size_t>(best)]))
        best = r;
    rank_of[static_cast<size_t>(i)] = best;
    tokens[static_cast<size_t>(best)] += lengths[static_cast<size_t>(i)];
    ++count[static_cast<size_t>(best)];
  }
  return rank_of;
}

RankRows rank_rows(const EncodedDataset& data, std::span<const int64_t> window,
                   int64_t first_number, int rank, int world_size) {
  CPUFT_CHECK(rank >= 0 && rank < world_size, "rank ", rank, " of ", world_size);
  std::vector<int64_t> lengths;
  lengths.reserve(window.size());
  for (const int64_t row : window) lengths.push_back(data.length(row));
  const std::vector<int> rank_of = deal_by_tokens(lengths, world_size);
  RankRows mine;
  for (size_t i = 0; i < window.size(); ++i) {
    if (rank_of[i] != rank) continue;
    mine.rows.push_back(window[i]);
    mine.numbers.push_back(first_number + static_cast<int64_t>(i));
  }
  return mine;
}

}  // namespace cpuft
