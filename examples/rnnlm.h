#pragma once
// The parts of Chainer's PTB example (examples/ptb/train_ptb.py) that train_ptb and train_char_lm
// share: the parallel sequential iterator, the truncated-BPTT updater, the recurrent language model
// and the perplexity columns of the log.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"

namespace rnnlm {

// Chainer's ParallelSequentialIterator: batch row i reads position (offset_i + iteration) mod length
// with offset_i = i * length / batch_size; each example is (token, next token).
class ParallelSequentialIterator : public rensa::iterators::Iterator {
 public:
  ParallelSequentialIterator(std::shared_ptr<const std::vector<int32_t>> text, int64_t batch_size, bool repeat)
      : text_(std::move(text)), batch_size_(batch_size), repeat_(repeat) {}

  std::optional<rensa::iterators::Batch> next() override {
    const auto length = static_cast<int64_t>(text_->size());
    if (!repeat_ && iteration_ * batch_size_ >= length) return std::nullopt;
    previous_epoch_detail_ = epoch_detail();
    rensa::iterators::Batch batch;
    for (int64_t i = 0; i < batch_size_; ++i) {
      const int64_t offset = i * length / batch_size_;
      batch.push_back({token_at(offset + iteration_), token_at(offset + iteration_ + 1)});
    }
    ++iteration_;
    const int64_t epoch = iteration_ * batch_size_ / length;
    is_new_epoch_ = epoch_ < epoch;
    epoch_ = std::max(epoch_, epoch);
    return batch;
  }
  int64_t epoch() const override { return epoch_; }
  double epoch_detail() const override {
    return static_cast<double>(iteration_ * batch_size_) / static_cast<double>(text_->size());
  }
  std::optional<double> previous_epoch_detail() const override {
    return previous_epoch_detail_ < 0 ? std::nullopt : std::optional<double>(previous_epoch_detail_);
  }
  bool is_new_epoch() const override { return is_new_epoch_; }
  int64_t batch_size() const override { return batch_size_; }
  void reset() override {
    iteration_ = epoch_ = 0;
    is_new_epoch_ = false;
    previous_epoch_detail_ = -1;
  }
  void serialize(rensa::serializers::Serializer& s) override {
    s.scalar("iteration", iteration_);
    s.scalar("epoch", epoch_);
    s.scalar("is_new_epoch", is_new_epoch_);
    s.scalar("previous_epoch_detail", previous_epoch_detail_);
  }

 private:
  rensa::Array token_at(int64_t i) const {
    return rensa::Array::scalar((*text_)[static_cast<size_t>(i % static_cast<int64_t>(text_->size()))],
                                rensa::Dtype::int32);
  }
  std::shared_ptr<const std::vector<int32_t>> text_;
  int64_t batch_size_;
  bool repeat_;
  int64_t iteration_ = 0, epoch_ = 0;
  bool is_new_epoch_ = false;
  double previous_epoch_detail_ = -1;
};

// Chainer's BPTTUpdater: one update per --bproplen steps of the iterator.
class BPTTUpdater : public rensa::training::StandardUpdater {
 public:
  BPTTUpdater(rensa::iterators::Iterator& iterator, rensa::optimizers::Optimizer& optimizer, int64_t bprop_len)
      : StandardUpdater(iterator, optimizer), bprop_len_(bprop_len) {}

 protected:
  void update_core() override {
    rensa::iterators::Iterator& iterator = get_iterator("main");
    rensa::optimizers::Optimizer& optimizer = get_optimizer("main");
    rensa::Variable loss;
    for (int64_t i = 0; i < bprop_len_; ++i) {
      const std::vector<rensa::Array> xt = converter()(*iterator.next(), device());
      const rensa::Variable step = optimizer.target()->forward(std::vector<rensa::Variable>(xt.begin(), xt.end()));
      loss = loss.is_null() ? step : loss + step;
    }
    optimizer.target()->cleargrads();
    loss.backward();
    loss.unchain_backward();  // the next segment starts from the LSTM states, not through them
    optimizer.update();
  }

 private:
  int64_t bprop_len_;
};

// EmbedID -> LSTM x n_layers -> Linear with dropout on each layer's input, every parameter drawn
// uniformly from [-0.1, 0.1) as in Chainer's example.
struct RNNLM : rensa::Chain {
  rensa::links::EmbedID embed;
  std::vector<std::unique_ptr<rensa::links::LSTM>> lstms;
  rensa::links::Linear out;
  double dropout;
  RNNLM(int64_t n_vocab, int64_t n_units, int64_t n_layers, double dropout_ratio)
      : embed(n_vocab, n_units), out(n_units, n_vocab), dropout(dropout_ratio) {
    add_link("embed", embed);
    for (int64_t k = 0; k < n_layers; ++k) {
      lstms.push_back(std::make_unique<rensa::links::LSTM>(n_units, n_units));
      add_link(std::string("l").append(std::to_string(k + 1)), *lstms.back());
    }
    add_link("out", out);
    for (const auto& [name, p] : namedparams()) p.set_array(rensa::random::uniform(p.shape(), -0.1, 0.1, p.dtype()));
  }
  void reset_state() {
    for (auto& lstm : lstms) lstm->reset_state();
  }
  rensa::Variable forward(const rensa::Variable& x) override {
    rensa::Variable h = embed(x);
    for (auto& lstm : lstms) h = (*lstm)(rensa::functions::dropout(h, dropout));
    return out(rensa::functions::dropout(h, dropout));
  }
  using Link::forward;
};

// A LogReport that adds perplexity (and val_perplexity) = exp of the mean cross entropy per token.
inline rensa::extensions::LogReport perplexity_log() {
  rensa::extensions::LogReport log;
  log.set_postprocess([](rensa::training::Observation& entry) {
    entry["perplexity"] = std::exp(entry.at("main/loss"));
    if (entry.count("validation/main/loss") != 0) entry["val_perplexity"] = std::exp(entry["validation/main/loss"]);
  });
  return log;
}

}  // namespace rnnlm
