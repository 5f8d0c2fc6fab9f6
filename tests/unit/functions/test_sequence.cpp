// pad_sequence and transpose_sequence: conformance, values checked against Chainer 7.8.1, errors.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;

namespace {

Array iota(const Shape& shape, double start = 0.0) {
  return Array::arange(start, start + static_cast<double>(shape.numel()), 1.0, Dtype::float64).reshape(shape);
}

std::vector<double> values(const Variable& v) { return v.array().to_vector<double>(); }

TEST(Sequence, Conformance) {
  FunctionCase transposed{"transpose_sequence", [](const std::vector<Variable>& v) {
                            return F::transpose_sequence(v);
                          },
                          {{4, 3}, {2, 3}, {2, 3}}};
  transposed.batched = {true, true, true};  // every sequence's length scales: they stay sorted
  transposed.big_leading = 30000;
  FunctionCase transposed_ragged{"transpose_sequence_ragged",
                                 [](const std::vector<Variable>& v) {
                                   // lengths 4, 2, 0: the last sequence appears in no step
                                   return F::transpose_sequence({v[0], F::get_item(v[1], {Slice{0, 2}}),
                                                                 F::get_item(v[1], {Slice{0, 0}})});
                                 },
                                 {{4, 3}, {3, 3}}};
  transposed_ragged.size_zero = false;  // the slices would not be sorted by length
  transposed_ragged.broadcast = false;
  transposed_ragged.big_leading = 4;
  const std::vector<FunctionCase> cases = {
      {"pad_sequence", [](const std::vector<Variable>& v) { return std::vector<Variable>{F::pad_sequence(v)}; },
       {{3, 2}, {2, 2}, {4, 2}}},
      {"pad_sequence_length",
       [](const std::vector<Variable>& v) {
         return std::vector<Variable>{F::pad_sequence(v, v[0].shape()[0] + v[1].shape()[0] + 1, -1.0)};
       },
       {{3, 2, 2}, {1, 2, 2}}},
      transposed,
      transposed_ragged,
  };
  for (const auto& c : cases) expect_conforms(c);
}

TEST(Sequence, KnownValues) {
  const Variable p = F::pad_sequence({Array::ones({2, 2}, Dtype::float64), iota({3, 2})}, std::nullopt, -1.0);
  EXPECT_EQ(p.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values(p), (std::vector<double>{1, 1, 1, 1, -1, -1, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(F::pad_sequence({iota({0, 3})}, 2).shape(), (Shape{1, 2, 3}));
  const auto steps = F::transpose_sequence({iota({3}), iota({2}, 3.0), iota({1}, 5.0)});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(values(steps[0]), (std::vector<double>{0, 3, 5}));
  EXPECT_EQ(values(steps[1]), (std::vector<double>{1, 4}));
  EXPECT_EQ(values(steps[2]), (std::vector<double>{2}));
  EXPECT_TRUE(F::transpose_sequence({}).empty());
  EXPECT_TRUE(F::transpose_sequence({iota({0, 2})}).empty());
  const auto back = F::transpose_sequence(steps);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(values(back[1]), (std::vector<double>{3, 4}));
}

TEST(Sequence, GradientsReachEverySequence) {
  Variable a(iota({3, 2}), true), b(iota({1, 2}), true);
  const auto steps = F::transpose_sequence({a, b});
  F::sum(steps[0]).backward();  // only the first step is used: the rest get zeros
  EXPECT_EQ(values(a.grad()), (std::vector<double>{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{1, 1}));
}

TEST(Sequence, Errors) {
  const Array a = Array::zeros({3, 2}), b = Array::zeros({2, 3});
  expect_error<ValueError>([] { F::pad_sequence({}); }, {"pad_sequence", "empty"});
  expect_error<ShapeError>([&] { F::pad_sequence({a, b}); }, {"pad_sequence", "(3, 2) and (2, 3)"});
  expect_error<ShapeError>([&] { F::pad_sequence({a, Array::zeros({2})}); }, {"pad_sequence", "(3, 2) and (2,)"});
  expect_error<ShapeError>([&] { F::pad_sequence({a, Array::scalar(1.0)}); }, {"pad_sequence", "0-d", "()"});
  expect_error<ShapeError>([&] { F::pad_sequence({a}, 2); }, {"pad_sequence", "length 2", "longest", "(3, 2)"});
  expect_error<DtypeError>([&] { F::pad_sequence({a, Array::zeros({2, 2}, Dtype::float64)}); },
                           {"pad_sequence", "float64"});
  expect_error<ValueError>([&] { F::transpose_sequence({Array::zeros({1, 2}), a}); },
                           {"transpose_sequence", "sorted", "(1, 2) and (3, 2)"});
  expect_error<ShapeError>([&] { F::transpose_sequence({a, b}); }, {"transpose_sequence", "(3, 2) and (2, 3)"});
  expect_error<ValueError>([&] { F::transpose_sequence({a, Variable()}); }, {"transpose_sequence", "null"});
}

}  // namespace
