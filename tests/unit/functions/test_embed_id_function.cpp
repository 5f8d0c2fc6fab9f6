// embed_id as a function (the gather behind links::EmbedID): conformance with ignore_label, and
// the reference backend, which it now runs on through the take and scatter_add kernels.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::FunctionCase;
using rensa::test::unary_fn;

namespace {

TEST(EmbedIdFunction, Conformance) {
  FunctionCase c{"embed_id", unary_fn([](const Variable& W) {
                   const Array ids = Array::from_vector<int32_t>({3, -1, 0, 3, 4, -1}, Shape{2, 3}, W.device());
                   return F::embed_id(ids, W, -1);
                 }),
                 {{5, 4}}};
  c.size_zero = false;  // the ids need rows to select
  expect_conforms(c);
}

TEST(EmbedIdFunction, ReferenceBackendMatchesCpu) {
  const Array w = rensa::test::randn({7, 3}, Dtype::float32);
  const Array ids = Array::from_vector<int64_t>({6, 0, 2, 2, 5});
  const Variable on_cpu = F::embed_id(ids, w, 2);
  const Variable on_ref = F::embed_id(ids.to(Device::reference()), w.to(Device::reference()), 2);
  EXPECT_TRUE(array_equal(on_cpu.array(), on_ref.array().to(Device::cpu())));
  const auto row = on_cpu.array().to_vector<float>();
  EXPECT_EQ(std::vector<float>(row.begin() + 6, row.begin() + 9), std::vector<float>(3, 0.0f));  // ignored id 2
}

}  // namespace
