// permutate, scatter_add (basic and integer-array indices), as_strided, and the take/scatter_add
// kernels under them: conformance, values checked against Chainer 7.8.1, errors.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::binary_fn;
using rensa::test::expect_conforms;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;
using rensa::test::unary_fn;

namespace {

Array iota(const Shape& shape) {
  return Array::arange(0.0, static_cast<double>(shape.numel()), 1.0, Dtype::float64).reshape(shape);
}

std::vector<double> values(const Variable& v) { return v.array().to_vector<double>(); }

Array ints(const std::vector<int32_t>& v) { return Array::from_vector(v); }

std::vector<FunctionCase> cases() {
  FunctionCase strided{"as_strided", unary_fn([](const Variable& x) {
                         return F::as_strided(x, Shape{3, 4}, Shape{2, 1}, 1);  // overlapping windows
                       }),
                       {{4, 3}}};
  strided.size_zero = false;  // the view reaches into x: an empty x has no element to show
  FunctionCase strided_negative{"as_strided_negative", unary_fn([](const Variable& x) {
                                  return F::as_strided(x, Shape{2, 3}, Shape{-3, 0}, 9);
                                }),
                                {{4, 3}}};
  strided_negative.size_zero = false;
  return {
      {"permutate", unary_fn([](const Variable& x) { return F::permutate(x, ints({2, 0, 3, 1}), 1); }), {{3, 4}}},
      {"permutate_inv", unary_fn([](const Variable& x) { return F::permutate(x, ints({2, 0, 3, 1}), -1, true); }),
       {{3, 4}}},
      {"scatter_add_slices", binary_fn([](const Variable& a, const Variable& b) {
         return F::scatter_add(a, {Slice{}, Slice{1, std::nullopt, 2}}, b);
       }),
       {{4, 5}, {4, 2}}},
      {"scatter_add_indices", binary_fn([](const Variable& a, const Variable& b) {
         return F::scatter_add(a, ints({0, 2, 0, -1}), b, 1);
       }),
       {{3, 4}, {3, 4}}},
      {"scatter_add_index_matrix", binary_fn([](const Variable& a, const Variable& b) {
         return F::scatter_add(a, Array::from_vector<int64_t>({1, 1, 0, 2}, Shape{2, 2}), b, 1);
       }),
       {{3, 3}, {3, 2, 2}}},
      {"get_item_indices",
       unary_fn([](const Variable& x) { return F::get_item(x, Array::from_vector<int64_t>({2, -1, 0, 2}, Shape{2, 2}), 1); }),
       {{3, 4}}},
      {"get_item_mask", unary_fn([](const Variable& x) {
         return F::get_item(x, Array::from_vector(std::vector<bool>{true, false, false, true}), -1);
       }),
       {{3, 4}}},
      strided,
      strided_negative,
  };
}

TEST(ArrayIndexing, Conformance) {
  for (auto c : cases()) {
    // b's leading axis is a's (the batch), though their ranks differ.
    if (c.name == "scatter_add_index_matrix") c.batched = {true, true};
    expect_conforms(c);
  }
}

TEST(ArrayIndexing, KnownValues) {
  const Array x = iota({3, 2});
  EXPECT_EQ(values(F::permutate(x, ints({2, 0, 1}))), (std::vector<double>{4, 5, 0, 1, 2, 3}));
  EXPECT_EQ(values(F::permutate(x, ints({2, 0, 1}), 0, true)), (std::vector<double>{2, 3, 4, 5, 0, 1}));
  EXPECT_EQ(values(F::permutate(x, ints({1, 0}), 1)), (std::vector<double>{1, 0, 3, 2, 5, 4}));
  EXPECT_EQ(values(F::scatter_add(Array::zeros({3, 2}, Dtype::float64), ints({0, 2, 0}), x)),
            (std::vector<double>{4, 6, 0, 0, 2, 3}));
  EXPECT_EQ(values(F::scatter_add(Array::zeros({3, 2}, Dtype::float64), {1}, iota({2}))),
            (std::vector<double>{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(values(F::as_strided(iota({4}), Shape{3, 2}, Shape{1, 1})), (std::vector<double>{0, 1, 1, 2, 2, 3}));
  const Variable picked = F::get_item(x, ints({2, -3, 2}));
  EXPECT_EQ(picked.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(picked), (std::vector<double>{4, 5, 0, 1, 4, 5}));
  EXPECT_EQ(values(F::get_item(x, Array::from_vector(std::vector<bool>{false, true}), 1)),
            (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(F::get_item(x, Array::zeros({2, 0}, Dtype::int32), 1).shape(), (Shape{3, 2, 0}));
}

TEST(ArrayIndexing, AsStridedGradientAddsOverlaps) {
  Variable x(iota({4}), true);
  Variable y = F::as_strided(x, Shape{3, 2}, Shape{1, 1}, 0);
  y.set_grad(Variable(Array::ones({3, 2}, Dtype::float64)));
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 2, 1}));  // Chainer's docstring example
}

TEST(ArrayIndexing, RepeatedIndicesAccumulate) {
  Variable b(iota({3, 2}), true);
  Variable y = F::scatter_add(Array::ones({2, 2}, Dtype::float64), ints({1, 1, 1}), b);
  EXPECT_EQ(values(y), (std::vector<double>{1, 1, 7, 10}));
  F::sum(F::mul(y, Variable(iota({2, 2})))).backward();
  EXPECT_EQ(values(b.grad()), (std::vector<double>{2, 3, 2, 3, 2, 3}));
}

TEST(ArrayIndexing, KernelsCpuMatchReferenceInEveryFloatDtype) {
  // Sizes above the cpu loops' parallel threshold; repeated indices in the scatter. Exact: the
  // scatter_add slot fixes the sum (in order of the indices, in float for 16-bit floats, rounded
  // once) on both backends, and as_strided copies.
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < 500; ++i) idx.push_back((i * 7) % 40);
  auto f = [&](const std::vector<Variable>& v) {
    const Array ix = Array::from_vector(idx, v[0].device());
    return std::vector<Variable>{F::scatter_add(v[0], ix, v[1], 1), F::as_strided(v[1], Shape{200, 200}, Shape{7, 11}, 2)};
  };
  for (Dtype dt : {Dtype::float16, Dtype::bfloat16, Dtype::float32, Dtype::float64}) {
    SCOPED_TRACE(dtype_name(dt));
    const Array a = randn({300, 40}, Dtype::float32, 5).astype(dt);
    const Array b = randn({300, 500}, Dtype::float32, 4).astype(dt);
    expect_cpu_matches_reference(f, {a, b}, 0.0, 0.0);
    expect_cpu_matches_reference(f, {rensa::testing::make_noncontiguous(a), rensa::testing::make_noncontiguous(b)},
                                 0.0, 0.0);
  }
}

TEST(ArrayIndexing, KernelsRejectIndicesOutOfRangeBeforeWriting) {
  for (Device device : {Device::cpu(), Device::reference()}) {
    SCOPED_TRACE(device);
    const KernelTable& k = get_backend(device).kernels();
    const Array x = Array::ones({2, 3, 4}, Dtype::float32, device);
    const Array y = Array::zeros({2, 2, 4}, Dtype::float32, device);
    const Array bad = Array::from_vector<int64_t>({0, 3}, device);
    expect_error<IndexError>([&] { k.take(x, bad, y); }, {"take", "index 3", "position 1", "[0, 3)"});
    expect_error<IndexError>([&] { k.scatter_add(y, Array::from_vector<int64_t>({-1, 0}, device), x); },
                             {"scatter_add", "index -1", "[0, 3)"});
    EXPECT_EQ(x.to(Device::cpu()).to_vector<float>(), std::vector<float>(24, 1.0f));  // untouched
    EXPECT_EQ(y.to(Device::cpu()).to_vector<float>(), std::vector<float>(16, 0.0f));
  }
}

TEST(ArrayIndexing, Errors) {
  const Array x = Array::zeros({3, 4});
  expect_error<ShapeError>([&] { F::permutate(x, ints({0, 1})); }, {"permutate", "(2,)", "(3, 4)"});
  expect_error<ValueError>([&] { F::permutate(x, ints({0, 3, 1})); }, {"permutate", "index 3", "[0, 3)"});
  expect_error<ValueError>([&] { F::permutate(x, ints({0, 1, 1})); }, {"permutate", "index 1", "repeated"});
  expect_error<DtypeError>([&] { F::permutate(x, Array::zeros({3})); }, {"permutate", "float32"});
  expect_error<IndexError>([&] { F::permutate(x, ints({0, 1, 2}), 2); }, {"permutate", "axis 2", "(3, 4)"});
  expect_error<ShapeError>([&] { F::scatter_add(x, {Slice{0, 2}}, Array::zeros({2, 3})); },
                           {"scatter_add", "(2, 3)", "(2, 4)", "(3, 4)"});
  expect_error<IndexError>([&] { F::scatter_add(x, {5}, Array::zeros({4})); }, {"scatter_add", "5", "(3, 4)"});
  expect_error<DtypeError>([&] { F::scatter_add(x, {0}, Array::zeros({4}, Dtype::float64)); },
                           {"scatter_add", "float64"});
  expect_error<IndexError>([&] { F::scatter_add(x, ints({0, 4}), Array::zeros({3, 2}), 1); },
                           {"scatter_add", "index 4", "axis 1", "(3, 4)"});
  expect_error<ShapeError>([&] { F::scatter_add(x, ints({0, 1}), Array::zeros({3, 3}), 1); },
                           {"scatter_add", "(3, 3)", "(3, 2)", "(3, 4)"});
  expect_error<IndexError>([&] { F::get_item(x, ints({3}), 0); }, {"get_item", "index 3", "axis 0", "(3, 4)"});
  expect_error<IndexError>([&] { F::get_item(x, Array::zeros({3}, Dtype::bool_), 1); },
                           {"get_item", "mask", "(3,)", "axis 1", "(3, 4)"});
  expect_error<DtypeError>([&] { F::get_item(x, Array::zeros({3})); }, {"get_item", "float32"});
  expect_error<ValueError>([&] { F::as_strided(x, Shape{3, 4}, Shape{1}); }, {"as_strided", "(3, 4)", "(1,)"});
  expect_error<ValueError>([&] { F::as_strided(x, Shape{3, 4}, Shape{4, 1}, 1); },
                           {"as_strided", "element 12", "(3, 4)", "12 elements"});
  expect_error<ValueError>([&] { F::as_strided(x, Shape{2}, Shape{-1}); }, {"as_strided", "element -1"});
  expect_error<ValueError>([&] { F::as_strided(x, Shape{-2}, Shape{1}); }, {"as_strided", "negative", "(-2,)"});
}

}  // namespace
