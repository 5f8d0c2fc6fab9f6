// spatial_transformer_grid and spatial_transformer_sampler: conformance, values checked against
// Chainer 7.8.1, errors.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::binary_fn;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::unary_fn;

namespace {

std::vector<double> values(const Variable& v) { return v.array().to_vector<double>(); }

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

TEST(SpatialTransformer, Conformance) {
  FunctionCase grid{"spatial_transformer_grid",
                    unary_fn([](const Variable& theta) { return F::spatial_transformer_grid(theta, {3, 4}); }),
                    {{2, 2, 3}}};
  // Images 5 x 5: the sampler is not differentiable where a coordinate crosses a pixel (grid
  // values -1, -0.5, ..., 1) or reaches the clamp one pixel outside (-1.5, 1.5).
  FunctionCase sampler{"spatial_transformer_sampler", binary_fn([](const Variable& x, const Variable& g) {
                         return F::spatial_transformer_sampler(x, g);
                       }),
                       {{2, 3, 5, 5}, {2, 2, 3, 4}}};
  sampler.lo = -1.7;
  sampler.hi = 1.7;
  sampler.kinks = {-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5};
  expect_conforms(grid);
  expect_conforms(sampler);
}

TEST(SpatialTransformer, KnownValues) {
  const Array theta = Array::from_vector<double>({0.5, 0.1, 0.2, -0.3, 0.8, 0.1}, Shape{1, 2, 3});
  expect_near(values(F::spatial_transformer_grid(theta, {2, 3})),
              {-0.4, 0.1, 0.6, -0.2, 0.3, 0.8, -0.4, -0.7, -1.0, 1.2, 0.9, 0.6});
  const Array x = Array::arange(0.0, 24.0, 1.0, Dtype::float64).reshape({2, 1, 3, 4});
  const Array g = Array::from_vector<double>({-1, 0.3, 1.4, -0.2, -1, 0.6, 0.2, -2.5,  //
                                              0.1, 0.9, -0.7, 1.0, 0.5, -0.4, 1.2, 0.0},
                                             Shape{2, 2, 2, 2});
  expect_near(values(F::spatial_transformer_sampler(x, g)), {0.0, 8.35, 3.12, 0.0, 19.65, 17.25, 16.36, 19.0});
}

TEST(SpatialTransformer, Errors) {
  expect_error<ShapeError>([] { F::spatial_transformer_grid(Array::zeros({2, 3, 3}), 4); },
                           {"spatial_transformer_grid", "(2, 3, 3)"});
  expect_error<ValueError>([] { F::spatial_transformer_grid(Array::zeros({2, 2, 3}), {0, 4}); },
                           {"spatial_transformer_grid", "(0, 4)"});
  expect_error<DtypeError>([] { F::spatial_transformer_grid(Array::zeros({2, 2, 3}, Dtype::int32), 4); },
                           {"spatial_transformer_grid", "int32"});
  const Array x = Array::zeros({2, 3, 4, 4});
  expect_error<ShapeError>([&] { F::spatial_transformer_sampler(x, Array::zeros({3, 2, 4, 4})); },
                           {"spatial_transformer_sampler", "(2, 3, 4, 4)", "(3, 2, 4, 4)"});
  expect_error<ShapeError>([&] { F::spatial_transformer_sampler(x, Array::zeros({2, 3, 4, 4})); },
                           {"spatial_transformer_sampler", "(2, 3, 4, 4)"});
  expect_error<DtypeError>([&] { F::spatial_transformer_sampler(x, Array::zeros({2, 2, 4, 4}, Dtype::float64)); },
                           {"spatial_transformer_sampler", "float64", "float32"});
}

}  // namespace
