// CooMatrix, to_coo and sparse_matmul: conformance in every transposition and batched, against the
// dense product of to_dense(), repeated and padding entries, values from Chainer 7.8.1, errors.
#include <string>
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;
using utils::CooMatrix;

namespace {

std::vector<double> values(const Variable& v) {
  return v.array().to_vector<double>();
}
std::vector<int64_t> ints(const Array& a) {
  return a.to_vector<int64_t>();
}

// A CooMatrix of shape (m, k) over `data` (ldnz,) or (nb, ldnz), its indices a function of data's
// shape: entry 1 repeats entry 0 (repeated entries add up), and for ldnz > 3 the last entry of each
// batch is padding.
CooMatrix pattern(const Variable& data, int64_t m, int64_t k) {
  const int64_t ldnz = data.shape().back(), total = data.size();
  std::vector<int32_t> row(static_cast<std::size_t>(total)), col(row.size());
  for (int64_t i = 0; i < total; ++i) {
    const int64_t j = i % ldnz == 1 ? 0 : i % ldnz, b = i / ldnz;
    const bool pad = ldnz > 3 && i % ldnz == ldnz - 1;
    row[static_cast<std::size_t>(i)] = pad ? -1 : static_cast<int32_t>((j * 5 + b) % m);
    col[static_cast<std::size_t>(i)] = pad ? -1 : static_cast<int32_t>((j * 3 + 2 * b) % k);
  }
  return CooMatrix(data, Array::from_vector(row, data.shape()), Array::from_vector(col, data.shape()), {m, k});
}

constexpr int64_t kM = 3, kK = 4, kN = 5, kLdnz = 6, kBatch = 2;

// The stored shape of an (r, c) operand, transposed or not.
Shape stored(int64_t r, int64_t c, bool trans) {
  return trans ? Shape{c, r} : Shape{r, c};
}
Shape with_batch(Shape s, bool batched) {
  if (batched) s.insert(0, kBatch);
  return s;
}

// op(S) (m, k) times op(D) (k, n), or op(D) (m, k) times op(S) (k, n), as a FunctionCase on
// (data, dense).
FunctionCase product_case(bool sparse_left, bool ta, bool tb, bool batched) {
  const Shape sparse = sparse_left ? stored(kM, kK, ta) : stored(kK, kN, tb);
  const Shape dense = sparse_left ? stored(kK, kN, tb) : stored(kM, kK, ta);
  FunctionCase c;
  c.name = std::string("sparse_matmul")
               .append(sparse_left ? " sparse@dense" : " dense@sparse")
               .append(ta ? " transa" : "")
               .append(tb ? " transb" : "")
               .append(batched ? " batched" : "");
  c.f = [=](const std::vector<Variable>& v) {
    const CooMatrix s = pattern(v[0], sparse[0], sparse[1]);
    return std::vector<Variable>{sparse_left ? F::sparse_matmul(s, v[1], ta, tb) : F::sparse_matmul(v[1], s, ta, tb)};
  };
  c.shapes = {with_batch(Shape{kLdnz}, batched), with_batch(dense, batched)};
  if (batched) c.batched = {true, true};
  return c;
}

}  // namespace

TEST(SparseMatmul, Conformance) {
  for (bool sparse_left : {true, false}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (bool batched : {false, true}) expect_conforms(product_case(sparse_left, ta, tb, batched));
      }
    }
  }
}

TEST(SparseMatmul, MatchesTheDenseProductAndItsGradients) {
  for (bool sparse_left : {true, false}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (bool batched : {false, true}) {
          const FunctionCase c = product_case(sparse_left, ta, tb, batched);
          SCOPED_TRACE(c.name);
          Variable data(randn(c.shapes[0], Dtype::float64, 3), true);
          Variable dense(randn(c.shapes[1], Dtype::float64, 4), true);
          Variable y = c.f({data, dense})[0];
          const Shape sparse = sparse_left ? stored(kM, kK, ta) : stored(kK, kN, tb);
          const CooMatrix s = pattern(data, sparse[0], sparse[1]);
          Variable d2(dense.array(), true);
          Variable full(s.to_dense().array(), true);
          Variable y2 = sparse_left ? F::matmul(full, d2, ta, tb) : F::matmul(d2, full, ta, tb);
          ASSERT_EQ(y.shape(), y2.shape());
          EXPECT_TRUE(allclose(y.array(), y2.array(), 1e-12, 1e-12));

          const Array gy = randn(y.shape(), Dtype::float64, 5);
          y.set_grad(gy);
          y.backward();
          y2.set_grad(gy);
          y2.backward();
          EXPECT_TRUE(allclose(dense.grad().array(), d2.grad().array(), 1e-12, 1e-12));
          // The data's gradient is the dense gradient read at each entry (0 at padding).
          const auto gfull = full.grad().array().to_vector<double>();
          const auto row = ints(s.row()), col = ints(s.col());
          const auto gdata = data.grad().array().to_vector<double>();
          const int64_t k = sparse[1], per = sparse[0] * sparse[1];
          for (std::size_t i = 0; i < gdata.size(); ++i) {
            const int64_t b = static_cast<int64_t>(i) / kLdnz;
            const double want = row[i] < 0 ? 0.0 : gfull[static_cast<std::size_t>(b * per + row[i] * k + col[i])];
            EXPECT_NEAR(gdata[i], want, 1e-12) << "entry " << i;
          }
        }
      }
    }
  }
}

// A (10^6, 10^6) matrix with three entries: the dense one would need 8 TB.
TEST(SparseMatmul, CostsWhatTheEntriesCostNotTheDenseMatrix) {
  const int64_t n = 1000000;
  Variable data(Array::from_vector<double>({2, 3, 4}), true);
  const CooMatrix s(data, Array::from_vector<int32_t>({5, n - 1, 5}), Array::from_vector<int32_t>({n - 1, 0, 7}),
                    {n, n});
  Variable b(Array::ones({n, 1}, Dtype::float64), true);
  Variable c = F::sparse_matmul(s, b);
  EXPECT_EQ(c.shape(), (Shape{n, 1}));
  EXPECT_EQ(c.array().at<double>({5, 0}), 6.0);
  EXPECT_EQ(c.array().at<double>({n - 1, 0}), 3.0);
  c.set_grad(Array::full({n, 1}, 0.5, Dtype::float64));
  c.backward();
  EXPECT_EQ(data.grad().array().to_vector<double>(), (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(b.grad().array().at<double>({n - 1, 0}), 1.0);
  EXPECT_EQ(b.grad().array().at<double>({7, 0}), 2.0);
}

// The values below come from Chainer 7.8.1 (chainer.utils.to_coo, F.sparse_matmul, backward).
TEST(SparseMatmul, ChainerValues) {
  const Array a = Array::from_vector<double>({0, 2, 0, 0, -1, 0, 0, 3, 0, 0, 0.5, 0}, {3, 4});
  const CooMatrix s = utils::to_coo(a, std::nullopt, true);
  EXPECT_EQ(values(s.data()), (std::vector<double>{2, -1, 3, 0.5}));
  EXPECT_EQ(ints(s.row()), (std::vector<int64_t>{0, 1, 1, 2}));
  EXPECT_EQ(ints(s.col()), (std::vector<int64_t>{1, 0, 3, 2}));
  EXPECT_EQ(s.row().dtype(), Dtype::int32);
  EXPECT_EQ(s.order(), utils::CooOrder::c);

  Variable b(Array::arange(-3.0, 5.0, 1.0, Dtype::float64).reshape({4, 2}), true);
  Variable c = F::sparse_matmul(s, b);
  EXPECT_EQ(values(c), (std::vector<double>{-2, 0, 12, 14, 0.5, 1}));
  c.set_grad(Array::from_vector<double>({1, -1, 0.5, 2, -2, 1}, {3, 2}));
  c.backward();
  EXPECT_EQ(s.data().grad().array().to_vector<double>(), (std::vector<double>{-1, -5.5, 9.5, 0}));
  EXPECT_EQ(b.grad().array().to_vector<double>(), (std::vector<double>{-0.5, -2, 2, -2, -1, 0.5, 1.5, 6}));

  const Array x = Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(values(F::sparse_matmul(x, s)), (std::vector<double>{-2, 2, 1.5, 6, -5, 8, 3, 15}));
  EXPECT_EQ(values(F::sparse_matmul(s, x, true, true)), (std::vector<double>{-2, -5, 2, 8, 1.5, 3, 6, 15}));

  // Batched, the first matrix padded to the second's five nonzeros.
  std::vector<double> ab{0, 2, 0, 0, -1, 0, 0, 3, 0, 0, 0.5, 0, 7, 4, 0, 0, -2, 0, 0, 6, 0, 0, 1, 0};
  const CooMatrix sb = utils::to_coo(Array::from_vector(ab, {2, 3, 4}), std::nullopt, true);
  EXPECT_EQ(values(sb.data()), (std::vector<double>{2, -1, 3, 0.5, 0, 7, 4, -2, 6, 1}));
  EXPECT_EQ(ints(sb.row()), (std::vector<int64_t>{0, 1, 1, 2, -1, 0, 0, 1, 1, 2}));
  EXPECT_EQ(ints(sb.col()), (std::vector<int64_t>{1, 0, 3, 2, -1, 0, 1, 0, 3, 2}));
  Variable xb(Array::arange(-2.0, 4.0, 0.5, Dtype::float64).reshape({2, 2, 3}), true);
  Variable cb = F::sparse_matmul(xb, sb);
  EXPECT_EQ(values(cb), (std::vector<double>{1.5, -4, -0.5, -4.5, 0, -1, 0.25, 0, 4, 4, 2, 9, 11.5, 10, 3.5, 18}));
  cb.set_grad(Array::arange(-1.0, 3.0, 0.25, Dtype::float64).reshape({2, 2, 4}));
  cb.backward();
  EXPECT_EQ(sb.data().grad().array().to_vector<double>(),
            (std::vector<double>{1.375, 1.5, 0.375, 0.75, 0, 6, 6.875, 7.5, 10.875, 11.75}));
  EXPECT_EQ(xb.grad().array().to_vector<double>(),
            (std::vector<double>{-1.5, 0.25, -0.25, 0.5, 2.25, 0.25, 12, 8.5, 1.5, 23, 12.5, 2.5}));
}

TEST(CooMatrix, ToCooPadsAndToDenseAddsRepeats) {
  const Array a = Array::from_vector<float>({0, 2, 0, -1, 0, 0}, {2, 3});
  const CooMatrix s = utils::to_coo(a, 4);
  EXPECT_EQ(s.data().dtype(), Dtype::float32);
  EXPECT_FALSE(s.data().requires_grad());
  EXPECT_EQ(values(s.data()), (std::vector<double>{2, -1, 0, 0}));
  EXPECT_EQ(ints(s.row()), (std::vector<int64_t>{0, 1, -1, -1}));
  EXPECT_EQ(ints(s.col()), (std::vector<int64_t>{1, 0, -1, -1}));
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_TRUE(array_equal(s.to_dense().array(), a));
  EXPECT_EQ(utils::to_coo(a, 1).data().size(), 2);  // ldnz is raised to the number of nonzeros
  EXPECT_EQ(utils::to_coo(Array::zeros({2, 3})).data().size(), 0);
  EXPECT_EQ(values(utils::to_coo(Array::zeros({2, 3})).to_dense()), std::vector<double>(6, 0.0));

  const Array batch = Array::from_vector<double>({0, 1, 0, 2, 3, 0, 0, 0, 0, 4, 0, 0}, {2, 2, 3});
  const CooMatrix sb = utils::to_coo(batch, 3);
  EXPECT_EQ(ints(sb.row()), (std::vector<int64_t>{0, 1, 1, 1, -1, -1}));
  EXPECT_EQ(ints(sb.col()), (std::vector<int64_t>{1, 0, 1, 0, -1, -1}));
  EXPECT_TRUE(array_equal(sb.to_dense().array(), batch));

  // Repeated entries add up; padding data is ignored.
  const CooMatrix r(Variable(Array::from_vector<double>({1, 2, 4, 9})), Array::from_vector<int32_t>({1, 1, 0, -1}),
                    Array::from_vector<int64_t>({2, 2, 0, -1}), {2, 3});
  EXPECT_EQ(values(r.to_dense()), (std::vector<double>{4, 0, 0, 0, 0, 3}));
  EXPECT_EQ(values(F::sparse_matmul(r, Array::from_vector<double>({1, 10, 100}, {3, 1}))),
            (std::vector<double>{4, 300}));
}

TEST(CooMatrix, Order) {
  const auto order = [](std::vector<int32_t> row, std::vector<int32_t> col) {
    return utils::get_order(Array::from_vector(row), Array::from_vector(col));
  };
  EXPECT_EQ(order({0, 0, 1, -1}, {0, 2, 1, -1}), utils::CooOrder::c);
  EXPECT_EQ(order({1, 0, 2}, {0, 1, 1}), utils::CooOrder::f);
  EXPECT_EQ(order({1, 0, 2}, {1, 0, 0}), utils::CooOrder::other);
  // Each batch is sorted on its own.
  EXPECT_EQ(utils::get_order(Array::from_vector<int32_t>({0, 1, 0, 2}, {2, 2}),
                             Array::from_vector<int32_t>({0, 0, 1, 1}, {2, 2})),
            utils::CooOrder::c);
  const CooMatrix given(Variable(Array::zeros({2})), Array::from_vector<int32_t>({1, 0}),
                        Array::from_vector<int32_t>({0, 0}), {2, 2}, utils::CooOrder::other);
  EXPECT_EQ(given.order(), utils::CooOrder::other);
}

TEST(SparseMatmul, Errors) {
  const auto coo = [](std::vector<int32_t> row, std::vector<int32_t> col, Shape shape) {
    return CooMatrix(Variable(Array::ones({static_cast<int64_t>(row.size())})), Array::from_vector(row),
                     Array::from_vector(col), shape);
  };
  const CooMatrix s = coo({0, 2}, {3, 1}, {3, 4});
  expect_error<ShapeError>(
      [&] {
        F::sparse_matmul(s, Array::zeros({5, 2}));
      },
      {"sparse_matmul", "CooMatrix (3, 4)", "data (2,)", "(5, 2)", "inner dims 4 vs 5"});
  expect_error<ShapeError>(
      [&] {
        F::sparse_matmul(Array::zeros({2, 4}), s);
      },
      {"sparse_matmul", "(2, 4)", "CooMatrix (3, 4)", "inner dims 4 vs 3"});
  expect_error<ShapeError>(
      [&] {
        F::sparse_matmul(s, Array::zeros({2, 5}), false, true);
      },
      {"sparse_matmul", "(2, 5) (transposed)", "inner dims 4 vs 5"});
  expect_error<ShapeError>(
      [&] {
        F::sparse_matmul(s, Array::zeros({1, 4, 2}));
      },
      {"sparse_matmul", "(1, 4, 2)", "must be 2-d"});
  const CooMatrix sb(Variable(Array::ones({2, 1})), Array::zeros({2, 1}, Dtype::int32),
                     Array::zeros({2, 1}, Dtype::int32), {3, 4});
  expect_error<ShapeError>(
      [&] {
        F::sparse_matmul(sb, Array::zeros({3, 4, 2}));
      },
      {"sparse_matmul", "data (2, 1)", "(3, 4, 2)", "batch sizes 2 vs 3"});
  expect_error<ShapeError>([&] { F::sparse_matmul(sb, Array::zeros({4, 2})); }, {"sparse_matmul", "must be 3-d"});
  expect_error<DtypeError>(
      [&] {
        F::sparse_matmul(s, Array::zeros({4, 2}, Dtype::float64));
      },
      {"sparse_matmul", "float32", "float64"});
  const CooMatrix si(Variable(Array::ones({1}, Dtype::int32)), Array::zeros({1}, Dtype::int32),
                     Array::zeros({1}, Dtype::int32), {3, 4});
  expect_error<DtypeError>([&] { F::sparse_matmul(si, Array::zeros({4, 2})); }, {"sparse_matmul", "int32"});
  // Indices changed after construction are checked again.
  const CooMatrix m = coo({0, 1}, {0, 1}, {2, 2});
  m.row().fill(5);
  expect_error<IndexError>(
      [&] {
        F::sparse_matmul(m, Array::zeros({2, 2}));
      },
      {"sparse_matmul", "row index 5", "(2, 2)"});

  expect_error<IndexError>([&] { coo({0, 3}, {0, 0}, {3, 4}); }, {"CooMatrix", "row index 3", "[-1, 3)", "(3, 4)"});
  expect_error<IndexError>([&] { coo({0, 1}, {-2, 0}, {3, 4}); }, {"CooMatrix", "col index -2", "[-1, 4)"});
  expect_error<ValueError>([&] { coo({0, -1}, {0, 1}, {3, 4}); }, {"CooMatrix", "entry 1", "-1 in both"});
  expect_error<ShapeError>([&] { coo({0}, {0}, {0, 4}); }, {"CooMatrix", "(0, 4)"});
  expect_error<ShapeError>([&] { coo({0}, {0}, {3, 4, 1}); }, {"CooMatrix", "(3, 4, 1)"});
  expect_error<ShapeError>(
      [&] {
        CooMatrix(Variable(Array::ones({3})), Array::zeros({2}, Dtype::int32), Array::zeros({2}, Dtype::int32), {3, 4});
      },
      {"CooMatrix", "(2,)", "(3,)"});
  expect_error<ShapeError>(
      [&] {
        CooMatrix(Variable(Array::ones({2})), Array::zeros({2}, Dtype::int32), Array::zeros({3}, Dtype::int32), {3, 4});
      },
      {"CooMatrix", "(2,)", "(3,)"});
  expect_error<DtypeError>(
      [&] {
        CooMatrix(Variable(Array::ones({2})), Array::zeros({2}), Array::zeros({2}, Dtype::int32), {3, 4});
      },
      {"CooMatrix", "row", "float32"});
  expect_error<ShapeError>(
      [&] {
        CooMatrix(Variable(Array::ones({1, 1, 1})), Array::zeros({1, 1, 1}, Dtype::int32),
                  Array::zeros({1, 1, 1}, Dtype::int32), {3, 4});
      },
      {"CooMatrix", "(1, 1, 1)"});
  expect_error<ShapeError>([&] { utils::to_coo(Array::zeros({4})); }, {"to_coo", "(4,)"});
  expect_error<ValueError>([&] { utils::to_coo(Array::zeros({0, int64_t{1} << 32})); }, {"to_coo", "int32"});
}
