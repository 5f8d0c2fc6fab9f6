// A two-layer perceptron on a toy batch: forward, backward, reading gradients, one SGD step, and a
// numerical check of the gradients. The README shows this program; the package test builds it
// against an installed rensa, so it always compiles against the real API.
#include <rensa/rensa.h>
#include <rensa/testing/gradient_check.h>

#include <iostream>
#include <vector>

namespace F = rensa::functions;
using rensa::Array;
using rensa::Variable;

int main() {
  rensa::seed(0);
  // 4 examples of 3 features, labels in {0, 1}; the parameters require gradients.
  Variable x(rensa::random::normal({4, 3}));
  Array t = Array::from_vector<int32_t>({0, 1, 1, 0});
  Variable W1(rensa::random::normal({5, 3}), true), b1(Array::zeros({5}), true);
  Variable W2(rensa::random::normal({2, 5}), true), b2(Array::zeros({2}), true);
  auto mlp = [](const std::vector<Variable>& v) {  // v = {x, W1, b1, W2, b2}
    return F::linear(F::relu(F::linear(v[0], v[1], v[2])), v[3], v[4]);
  };

  Variable loss = F::softmax_cross_entropy(mlp({x, W1, b1, W2, b2}), t);
  loss.backward();
  std::cout << "loss " << loss.array().item<float>() << "\ngrad of W2 " << W2.grad().array() << "\n";

  {  // one SGD step, outside the graph
    auto guard = rensa::no_backprop_mode();
    for (const Variable& p : {W1, b1, W2, b2}) p.set_array((p - 0.1 * p.grad()).array());
  }
  Variable after = F::softmax_cross_entropy(mlp({x, W1, b1, W2, b2}), t);
  std::cout << "loss after one step " << after.array().item<float>() << "\n";
  if (!(after.array().item<float>() < loss.array().item<float>())) return 1;

  // Backward against central differences, in float64 (throws rensa::AssertionError on a mismatch).
  std::vector<Array> inputs;
  for (const Variable& v : {x, W1, b1, W2, b2}) inputs.push_back(v.array().astype(rensa::Dtype::float64));
  rensa::testing::check_backward(
      [&](const std::vector<Variable>& v) { return std::vector{F::softmax_cross_entropy(mlp(v), t)}; }, inputs);
  std::cout << "check_backward passed\n";
}
