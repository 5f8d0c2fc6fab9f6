// Training-step throughput of a word-level LSTM language model: EmbedID, a stacked NStepLSTM over
// time-major batches, Linear to the vocabulary, softmax cross entropy over every step, backward and
// one SGD update (the step of a truncated-BPTT segment). bench/lstm_lm_torch.py runs the same step
// with PyTorch's nn.LSTM; bench/torch_compare prints both and the ratio.
//   bench_lstm_lm --threads 1            (embedding 256, hidden 512, 2 layers, 35 steps, batch 32)
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/train_step.h"

namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::Variable;

namespace {

struct LanguageModel : rensa::Chain {
  LanguageModel(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers)
      : embed_(vocab, embed), lstm_(layers, embed, hidden, 0.0), out_(hidden, vocab) {
    add_link("embed", embed_);
    add_link("lstm", lstm_);
    add_link("out", out_);
  }
  // x, t: (T, B) int32 token ids; returns the mean cross entropy over all T B positions.
  Variable loss(const rensa::Array& x, const rensa::Array& t) {
    const int64_t steps = x.shape()[0], batch = x.shape()[1];
    const Variable e = embed_(Variable(x.reshape({steps * batch})));
    std::vector<Variable> xs = F::split_axis(e, steps, 0);
    auto r = F::n_step_lstm(lstm_.n_layers(), 0.0, zeros(batch), zeros(batch), lstm_.ws(), lstm_.bs(), xs);
    const Variable h = F::concat(r.ys, 0);
    return F::softmax_cross_entropy(out_(h), t.reshape({steps * batch}));
  }
  Variable zeros(int64_t batch) {
    return Variable(rensa::Array::zeros({lstm_.n_layers(), batch, lstm_.out_size()}, rensa::Dtype::float32));
  }
  L::EmbedID embed_;
  L::NStepLSTM lstm_;
  L::Linear out_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Training-step throughput of a 2-layer LSTM language model with SGD"};
  int64_t vocab = 10000, embed = 256, hidden = 512, layers = 2, steps = 35;
  rensa_bench::StepOptions o;
  o.batchsize = 32;
  o.warmup = 3;
  app.add_option("--vocab", vocab)->check(CLI::Range(2, 1000000));
  app.add_option("--embed", embed)->check(CLI::Range(1, 100000));
  app.add_option("--hidden", hidden)->check(CLI::Range(1, 100000));
  app.add_option("--layers", layers)->check(CLI::Range(1, 100));
  app.add_option("--steps", steps, "Time steps per segment (bproplen)")->check(CLI::Range(1, 100000));
  rensa_bench::add_step_options(app, o);
  CLI11_PARSE(app, argc, argv);
  if (o.dtype != "float32") {
    std::fprintf(stderr, "bench_lstm_lm: only --dtype float32\n");
    return 2;
  }

  rensa::set_num_threads(o.threads);
  rensa::seed(0);
#if defined(__x86_64__) && defined(__GNUC__)
  // The same test the cpu backend makes for its LSTM cell kernels.
  std::printf("lstm cell kernels: %s\n", rensa::cpu_features().avx2 ? "AVX2 (8 float lanes)" : "baseline (SSE2)");
#endif
  LanguageModel model(vocab, embed, hidden, layers);
  rensa::optimizers::SGD optimizer(1.0);
  optimizer.setup(model);
  constexpr int kBatches = 4;
  std::vector<rensa::Array> xs, ts;
  for (int i = 0; i < kBatches; ++i) {
    xs.push_back(rensa::random::uniform({steps, o.batchsize}, 0.0, double(vocab)).astype(rensa::Dtype::int32));
    ts.push_back(rensa::random::uniform({steps, o.batchsize}, 0.0, double(vocab)).astype(rensa::Dtype::int32));
  }
  int64_t step = 0;
  auto train_step = [&] {
    const std::size_t i = static_cast<std::size_t>(step++ % kBatches);
    optimizer.update([&] { return model.loss(xs[i], ts[i]); });
  };
  const std::string label = "lstm-lm vocab " + std::to_string(vocab) + " embed " + std::to_string(embed) + " hidden " +
                            std::to_string(hidden) + "x" + std::to_string(layers) + " steps " + std::to_string(steps);
  rensa_bench::time_steps(label, o, train_step);
  return 0;
}
