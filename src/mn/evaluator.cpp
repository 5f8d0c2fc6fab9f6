// The multi-node evaluator (exact sums and counts over ranks) and the observation aggregator.
#include "rensa/mn/evaluator.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"

namespace rensa::mn {
namespace {

void put(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }

std::string encode(const training::DictSummary& summary) {
  std::string out;
  for (const auto& [key, e] : summary.entries()) {
    const uint64_t len = key.size();
    put(out, &len, sizeof len);
    out += key;
    put(out, &e.x, sizeof e.x);
    put(out, &e.x2, sizeof e.x2);
    put(out, &e.weight, sizeof e.weight);
  }
  return out;
}

training::DictSummary decode(const std::string& bytes, int rank) {
  training::DictSummary summary;
  std::size_t pos = 0;
  auto take = [&](void* p, std::size_t n) {
    RENSA_CHECK(pos + n <= bytes.size(), ValueError, "allreduce_summary: truncated summary from rank ", rank);
    std::memcpy(p, bytes.data() + pos, n);
    pos += n;
  };
  while (pos < bytes.size()) {
    uint64_t len = 0;
    take(&len, sizeof len);
    RENSA_CHECK(len <= bytes.size() - pos, ValueError, "allreduce_summary: truncated summary from rank ", rank);
    std::string key = bytes.substr(pos, len);
    pos += len;
    training::DictSummary::Entry e;
    take(&e.x, sizeof e.x);
    take(&e.x2, sizeof e.x2);
    take(&e.weight, sizeof e.weight);
    summary.entries()[key] = e;
  }
  return summary;
}

}  // namespace

training::DictSummary allreduce_summary(const training::DictSummary& summary, Communicator comm) {
  const std::vector<std::string> all = comm.allgather_bytes(encode(summary));
  training::DictSummary out;
  for (std::size_t r = 0; r < all.size(); ++r) out.merge(decode(all[r], static_cast<int>(r)));
  return out;
}

MultiNodeEvaluator::MultiNodeEvaluator(std::shared_ptr<extensions::Evaluator> evaluator, Communicator comm)
    : evaluator_(std::move(evaluator)), comm_(std::move(comm)) {
  RENSA_CHECK(evaluator_ != nullptr, ValueError, "create_multi_node_evaluator: null evaluator");
}

training::DictSummary MultiNodeEvaluator::evaluate_summary() {
  // The inner evaluator prefixes keys with its name: give it the one the trainer gave this extension.
  if (!name().empty()) evaluator_->set_name(name());
  return allreduce_summary(evaluator_->evaluate_summary(), comm_);
}

void MultiNodeEvaluator::operator()(training::Trainer& trainer) {
  (void)trainer;
  training::report(evaluate());
}

MultiNodeEvaluator create_multi_node_evaluator(extensions::Evaluator evaluator, Communicator comm) {
  return MultiNodeEvaluator(std::make_shared<extensions::Evaluator>(std::move(evaluator)), std::move(comm));
}

ObservationAggregator::ObservationAggregator(Communicator comm, std::vector<std::string> keys,
                                             ObservationAggregatorOptions options)
    : comm_(std::move(comm)), keys_(std::move(keys)), options_(std::move(options)) {
  RENSA_CHECK(!keys_.empty(), ValueError, "ObservationAggregator: no keys to aggregate");
  sums_.assign(keys_.size(), 0.0);
  counts_.assign(keys_.size(), 0);
}

void ObservationAggregator::operator()(training::Trainer& trainer) {
  training::Observation& obs = trainer.observation();
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const auto it = obs.find(keys_[i]);
    if (it == obs.end()) continue;
    sums_[i] += it->second;
    ++counts_[i];
  }
  if (!options_.comm_trigger(trainer)) return;
  // Per key: the sum over ranks of each rank's mean, and the number of ranks that had values.
  const std::size_t k = keys_.size();
  std::vector<double> packed(2 * k, 0.0);
  for (std::size_t i = 0; i < k; ++i) {
    if (counts_[i] == 0) continue;
    packed[i] = sums_[i] / static_cast<double>(counts_[i]);
    packed[k + i] = 1.0;
  }
  const std::vector<double> total = comm_.allreduce(Array::from_vector(packed), ReduceOp::sum).to_vector<double>();
  for (std::size_t i = 0; i < k; ++i) {
    if (total[k + i] > 0) obs[keys_[i] + options_.suffix] = total[i] / total[k + i];
  }
  sums_.assign(k, 0.0);
  counts_.assign(k, 0);
}

void ObservationAggregator::serialize(serializers::Serializer& s) {
  Array sums = Array::from_vector(sums_);
  Array counts = Array::from_vector(counts_);
  if (!s.is_loading()) {
    s.array("sums", sums);
    s.array("counts", counts);
  } else if (s.contains("sums")) {
    Array ls, lc;
    s.array("sums", ls);
    s.array("counts", lc);
    std::vector<double> vs = ls.to_vector<double>();
    std::vector<int64_t> vc = lc.to_vector<int64_t>();
    RENSA_CHECK(vs.size() == keys_.size() && vc.size() == keys_.size(), ValueError, "ObservationAggregator: ",
                s.path(), " holds ", vs.size(), " values for ", keys_.size(), " keys");
    sums_ = std::move(vs);
    counts_ = std::move(vc);
  }
  options_.comm_trigger.serialize(s.child("comm_trigger"));
}

}  // namespace rensa::mn
