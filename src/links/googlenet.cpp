// GoogLeNet: Chainer's children, in its registration order, and stages.
#include "rensa/links/googlenet.h"

#include <memory>

#include "rensa/functions/activation.h"
#include "rensa/functions/convolution.h"
#include "rensa/functions/noise.h"
#include "rensa/functions/normalization.h"
#include "rensa/links/convolution_2d.h"
#include "rensa/links/inception.h"
#include "rensa/links/linear.h"

namespace rensa::links {
namespace {

namespace F = functions;

Variable max_pool(const Variable& x) {
  return F::max_pooling_2d(x, 3, 2);
}
Variable lrn(const Variable& x) {
  return F::local_response_normalization(x, 5, 1.0, 1e-4 / 5);
}

}  // namespace

GoogLeNet::GoogLeNet(const std::string& pretrained_model) : VisionLayers("GoogLeNet") {
  using InitPtr = std::shared_ptr<const initializers::Initializer>;
  const InitPtr init = pretrained(pretrained_model) ? InitPtr(std::make_shared<initializers::Zero>())
                                                    : InitPtr(std::make_shared<initializers::LeCunUniform>(1.0));
  const auto conv = [&](const char* name, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
    auto c = std::make_shared<Convolution2D>(in, out, k,
                                             Convolution2DOptions{.stride = stride, .pad = pad, .initialW = init});
    add_link(name, c);
    return c.get();
  };
  const auto inception = [&](const char* name, int64_t in, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5,
                             int64_t out5, int64_t proj_pool) {
    auto l = std::make_shared<Inception>(in, out1, proj3, out3, proj5, out5, proj_pool);
    add_link(name, l);
    return l.get();
  };
  const auto linear = [&](const char* name, int64_t in, int64_t out) {
    auto l = std::make_shared<Linear>(in, out, LinearOptions{.initialW = init});
    add_link(name, l);
    return l.get();
  };
  Convolution2D* conv1 = conv("conv1", 3, 64, 7, 2, 3);
  Convolution2D* conv2_reduce = conv("conv2_reduce", 64, 64, 1, 1, 0);
  Convolution2D* conv2 = conv("conv2", 64, 192, 3, 1, 1);
  Inception* inc3a = inception("inc3a", 192, 64, 96, 128, 16, 32, 32);
  Inception* inc3b = inception("inc3b", 256, 128, 128, 192, 32, 96, 64);
  Inception* inc4a = inception("inc4a", 480, 192, 96, 208, 16, 48, 64);
  Inception* inc4b = inception("inc4b", 512, 160, 112, 224, 24, 64, 64);
  Inception* inc4c = inception("inc4c", 512, 128, 128, 256, 24, 64, 64);
  Inception* inc4d = inception("inc4d", 512, 112, 144, 288, 32, 64, 64);
  Inception* inc4e = inception("inc4e", 528, 256, 160, 320, 32, 128, 128);
  Inception* inc5a = inception("inc5a", 832, 256, 160, 320, 32, 128, 128);
  Inception* inc5b = inception("inc5b", 832, 384, 192, 384, 48, 128, 128);
  Linear* loss3_fc = linear("loss3_fc", 1024, 1000);
  Convolution2D* loss1_conv = conv("loss1_conv", 512, 128, 1, 1, 0);
  Linear* loss1_fc1 = linear("loss1_fc1", 2048, 1024);
  Linear* loss1_fc2 = linear("loss1_fc2", 1024, 1000);
  Convolution2D* loss2_conv = conv("loss2_conv", 528, 128, 1, 1, 0);
  Linear* loss2_fc1 = linear("loss2_fc1", 2048, 1024);
  Linear* loss2_fc2 = linear("loss2_fc2", 1024, 1000);

  const auto link_stage = [&](const char* name, Link* l) {
    add_stage(name, [l](const Variable& h) { return (*l)(h); });
  };
  add_stage("conv1", [conv1](const Variable& h) { return F::relu((*conv1)(h)); });
  add_stage("pool1", [](const Variable& h) { return lrn(max_pool(h)); });
  add_stage("conv2_reduce", [conv2_reduce](const Variable& h) { return F::relu((*conv2_reduce)(h)); });
  add_stage("conv2", [conv2](const Variable& h) { return lrn(F::relu((*conv2)(h))); });
  add_stage("pool2", max_pool);
  link_stage("inception_3a", inc3a);
  link_stage("inception_3b", inc3b);
  add_stage("pool3", max_pool);
  link_stage("inception_4a", inc4a);
  link_stage("inception_4b", inc4b);
  link_stage("inception_4c", inc4c);
  link_stage("inception_4d", inc4d);
  link_stage("inception_4e", inc4e);
  add_stage("pool4", max_pool);
  link_stage("inception_5a", inc5a);
  link_stage("inception_5b", inc5b);
  add_stage("pool5", [](const Variable& h) { return F::average_pooling_2d(h, 7, 1); });
  add_stage("loss3_fc", [loss3_fc](const Variable& h) { return (*loss3_fc)(F::dropout(h, 0.4)); });
  add_stage("prob", [](const Variable& h) { return F::softmax(h); });
  add_stage(
      "loss1_fc2",
      [=](const Variable& h) {
        const Variable a = F::relu((*loss1_conv)(F::average_pooling_2d(h, 5, 3)));
        return (*loss1_fc2)(F::relu((*loss1_fc1)(a)));
      },
      "inception_4a");
  add_stage(
      "loss2_fc2",
      [=](const Variable& h) {
        const Variable a = F::relu((*loss2_conv)(F::average_pooling_2d(h, 5, 3)));
        return (*loss2_fc2)(F::relu((*loss2_fc1)(a)));
      },
      "inception_4d");
  load_pretrained(pretrained_model);
}

}  // namespace rensa::links
