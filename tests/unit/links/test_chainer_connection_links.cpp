// Chainer 7.8.1's .npz of its connection links loads into rensa's (names and weight layouts), and
// the loaded links give Chainer's outputs (tests/fixtures/README.md: how the files were written).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "rensa/links/bilinear.h"
#include "rensa/links/convolution_nd.h"
#include "rensa/links/deformable_convolution_2d.h"
#include "rensa/links/depthwise_convolution_2d.h"
#include "rensa/links/dilated_convolution_2d.h"
#include "rensa/links/local_convolution_2d.h"
#include "rensa/links/mlp_convolution_2d.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/links/recurrent_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::sin_array;

namespace {

// The reference script's model; the links with in_channels 0 take their shapes from the file.
struct Model : Chain {
  L::Convolution1D conv1d{2, 3, 3, {.stride = 2, .pad = 1}};
  L::Convolution3D conv3d{2, 4, {2, 3, 2}, {.pad = {1, 0, 1}, .groups = 2}};
  L::Deconvolution1D deconv1d{0, 2, 3, {.stride = 2}};
  L::Deconvolution3D deconv3d{0, 2, 2, {.stride = {1, 2, 1}}};
  L::DilatedConvolution2D dilated{0, 3, 3, {.pad = 2, .dilate = 2}};
  L::DepthwiseConvolution2D depthwise{0, 2, 3, {.pad = 1}};
  L::LocalConvolution2D local{2, 3, F::Int2{5, 5}, 3};
  L::MLPConvolution2D mlp{2, {3, 2}, 3, {.pad = 1}};
  L::DeformableConvolution2D deform{0, 3, 3, {.pad = 1}};
  L::Bilinear bilinear{3, 2, 4};
  Model() {
    add_link("conv1d", conv1d);
    add_link("conv3d", conv3d);
    add_link("deconv1d", deconv1d);
    add_link("deconv3d", deconv3d);
    add_link("dilated", dilated);
    add_link("depthwise", depthwise);
    add_link("local", local);
    add_link("mlp", mlp);
    add_link("deform", deform);
    add_link("bilinear", bilinear);
  }
};

Variable input(const Shape& shape, double off) {
  return Variable(sin_array(shape, off).astype(Dtype::float32));
}

}  // namespace

TEST(ChainerConnectionLinks, LoadAndMatchChainer) {
  const std::string dir = RENSA_TEST_FIXTURES_DIR;
  Model m;
  serializers::load_npz(dir + "/chainer_connection_links.npz", m);
  EXPECT_EQ(m.deconv3d.W().shape(), (Shape{2, 2, 2, 2, 2}));
  EXPECT_EQ(m.depthwise.b().shape(), (Shape{4}));
  EXPECT_EQ(m.deform.offset_conv().W().shape(), (Shape{18, 2, 3, 3}));
  for (const auto& [path, p] : m.namedparams()) EXPECT_EQ(p.dtype(), Dtype::float32) << path;

  const Variable x1 = input({2, 2, 5}, 1.0), x3 = input({1, 2, 3, 4, 3}, 1.1), x2 = input({2, 2, 5, 5}, 1.2);
  const Variable xd1 = input({2, 3, 4}, 1.3), e1 = input({2, 3}, 1.4), e2 = input({2, 2}, 1.5);
  const std::map<std::string, Variable> got = {{"conv1d", m.conv1d(x1)},      {"conv3d", m.conv3d(x3)},
                                               {"deconv1d", m.deconv1d(xd1)}, {"deconv3d", m.deconv3d(x3)},
                                               {"dilated", m.dilated(x2)},    {"depthwise", m.depthwise(x2)},
                                               {"local", m.local(x2)},        {"mlp", m.mlp(x2)},
                                               {"deform", m.deform(x2)},      {"bilinear", m.bilinear(e1, e2)}};
  const auto want = serializers::read_npz(dir + "/chainer_connection_links_outputs.npz");
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [name, y] : got) {
    ASSERT_TRUE(want.count(name)) << name;
    const Array& w = want.at(name);
    ASSERT_EQ(y.shape(), w.shape()) << name;
    EXPECT_TRUE(allclose(y.array(), w, 1e-5, 1e-5)) << name << "\nrensa: " << y.array() << "\nChainer: " << w;
  }
}
