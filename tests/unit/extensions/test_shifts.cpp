// Hyperparameter schedules: the value after each iteration, resuming, and argument checks; schedules
// composed with ChainedShift, and two shifts on one hyperparameter refused.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <numbers>
#include <vector>

#include "rensa/extensions/chained_shift.h"
#include "rensa/extensions/shifts.h"
#include "rensa/optimizers/adam.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/serializers/npz.h"
#include "rensa/training/trainer.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

namespace E = rensa::extensions;
using rensa::testing_training::FakeUpdater;
using rensa::testing_training::TempDir;
using rensa::training::Trainer;

// Runs `n` iterations with `shift` on an SGD optimizer whose lr starts at `lr0`; returns the value
// of `attr` in effect for updates 1..n+1 (index 0: set by initialize, index t: after t calls).
std::vector<double> schedule(const std::function<std::shared_ptr<rensa::training::Extension>()>& make, int64_t n,
                             rensa::optimizers::Optimizer& optimizer, const std::string& attr = "lr") {
  TempDir dir("shift");
  FakeUpdater updater(3);
  updater.optimizers["main"] = &optimizer;
  Trainer trainer(updater, {n, "iteration"}, dir.path());
  std::vector<double> values;
  trainer.extend(make());
  // Runs after the shift (lower priority), and its initialize after the shift's.
  trainer.extend(rensa::training::make_extension([&](Trainer&) { values.push_back(optimizer.hyperparam(attr)); },
                                                 "probe", {1, "iteration"}, -1000));
  struct Init : rensa::training::Extension {
    std::function<void()> fn;
    void operator()(Trainer&) override {}
    void initialize(Trainer&) override { fn(); }
    std::string default_name() const override { return "init_probe"; }
    int default_priority() const override { return -1000; }
  };
  auto init = std::make_shared<Init>();
  init->fn = [&] { values.insert(values.begin(), optimizer.hyperparam(attr)); };
  trainer.extend(init);
  trainer.run();
  return values;
}

void expect_values(const std::vector<double>& got, const std::vector<double>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << "t = " << i;
}

template <class S, class... Args>
std::function<std::shared_ptr<rensa::training::Extension>()> maker(Args... args) {
  return [=] { return std::make_shared<S>(args...); };
}

TEST(Shifts, ExponentialShift) {
  rensa::optimizers::SGD sgd(1.0);
  expect_values(schedule(maker<E::ExponentialShift>("lr", 0.5), 4, sgd), {1, 0.5, 0.25, 0.125, 0.0625});
  rensa::optimizers::SGD sgd2(5.0);
  // An explicit init overrides the optimizer's value; the target stops the decay.
  expect_values(schedule(maker<E::ExponentialShift>("lr", 0.5, std::optional<double>(1.0), std::optional<double>(0.2)),
                         4, sgd2),
                {1, 0.5, 0.25, 0.2, 0.2});
  rensa::optimizers::SGD sgd3(1.0);
  expect_values(schedule(maker<E::ExponentialShift>("lr", 2.0, std::nullopt, std::optional<double>(5.0)), 4, sgd3),
                {1, 2, 4, 5, 5});
  rensa::test::expect_error<rensa::ValueError>([] { E::ExponentialShift("lr", -1.0); },
                                               {"ExponentialShift", "rate", "-1"});
}

TEST(Shifts, LinearShift) {
  rensa::optimizers::SGD sgd(9.0);
  expect_values(schedule(maker<E::LinearShift>("lr", std::pair<double, double>{1.0, 0.0},
                                               std::pair<int64_t, int64_t>{2, 6}),
                         7, sgd),
                {1, 1, 1, 0.75, 0.5, 0.25, 0, 0});
  rensa::test::expect_error<rensa::ValueError>(
      [] { E::LinearShift("lr", {1.0, 0.0}, {5, 2}); }, {"LinearShift", "(5, 2)"});
}

TEST(Shifts, StepAndMultistepShift) {
  rensa::optimizers::SGD sgd(1.0);
  expect_values(schedule(maker<E::StepShift>("lr", 0.1, int64_t{3}), 6, sgd), {1, 1, 1, 0.1, 0.1, 0.1, 0.01});
  rensa::optimizers::SGD sgd2(1.0);
  expect_values(schedule(maker<E::MultistepShift>("lr", 0.1, std::vector<int64_t>{2, 5}, std::optional<double>(1.0)),
                         6, sgd2),
                {1, 1, 0.1, 0.1, 0.1, 0.01, 0.01});
  rensa::test::expect_error<rensa::ValueError>([] { E::StepShift("lr", 0.1, 0); }, {"StepShift", "step", "0"});
  rensa::test::expect_error<rensa::ValueError>([] { E::MultistepShift("lr", 0.1, {5, 2}); },
                                               {"MultistepShift", "increase", "5", "2"});
}

TEST(Shifts, PolynomialAndInverseShift) {
  rensa::optimizers::SGD sgd(1.0);
  expect_values(schedule(maker<E::PolynomialShift>("lr", 2.0, int64_t{4}), 5, sgd),
                {1, 0.5625, 0.25, 0.0625, 0, 0});
  rensa::optimizers::SGD sgd2(1.0);
  expect_values(schedule(maker<E::InverseShift>("lr", 1.0, 1.0), 3, sgd2), {1, 0.5, 1.0 / 3, 0.25});
}

TEST(Shifts, WarmupShift) {
  // From 0.1 to the optimizer's 0.5 over 4 iterations, then constant.
  rensa::optimizers::SGD sgd(0.5);
  expect_values(schedule(maker<E::WarmupShift>("lr", 0.1, int64_t{4}), 6, sgd), {0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5});
  rensa::test::expect_error<rensa::ValueError>([] { E::WarmupShift("lr", 0.0, 0); }, {"WarmupShift", "warmup_iter"});
}

TEST(Shifts, CosineShift) {
  const double c = (1 + std::cos(std::numbers::pi / 4)) / 2;
  rensa::optimizers::SGD sgd(1.0);
  expect_values(schedule(maker<E::CosineShift>("lr", int64_t{4}, 0.0), 6, sgd), {1, c, 0.5, 1 - c, 0, 0, 0});
  rensa::optimizers::SGD sgd2(1.0);
  expect_values(schedule(maker<E::CosineShift>("lr", int64_t{4}, 0.2, std::nullopt, true), 6, sgd2),
                {1, 0.2 + 0.8 * c, 0.6, 0.2 + 0.8 * (1 - c), 1, 0.2 + 0.8 * c, 0.6});
}

TEST(Shifts, OtherHyperparametersAndExplicitOptimizer) {
  rensa::optimizers::Adam adam(0.01);
  expect_values(schedule(maker<E::ExponentialShift>("alpha", 0.5), 2, adam, "alpha"), {0.01, 0.005, 0.0025});
  // The schedule drives the optimizer it is given, not the updater's.
  rensa::optimizers::SGD main(1.0);
  rensa::optimizers::MomentumSGD other(1.0, 0.9);
  schedule([&] { return std::make_shared<E::StepShift>("momentum", 0.5, 1, std::nullopt, std::nullopt, &other); }, 2,
           main);
  EXPECT_NEAR(other.hyperparam("momentum"), 0.225, 1e-15);
  EXPECT_EQ(main.hyperparam("lr"), 1.0);
  rensa::optimizers::SGD sgd(1.0);
  rensa::test::expect_error<rensa::ValueError>([&] { schedule(maker<E::ExponentialShift>("beta9", 0.5), 2, sgd); },
                                               {"ExponentialShift", "beta9"});
}

// Runs to `split`, snapshots the trainer, continues in a fresh trainer whose optimizer starts with
// another value, and expects the values of an uninterrupted run.
void expect_resumes(const std::function<std::shared_ptr<rensa::training::Extension>()>& make, int64_t n, int64_t split) {
  rensa::optimizers::SGD ref_opt(1.0);
  const std::vector<double> expected = schedule(make, n, ref_opt);

  TempDir dir("shift_resume");
  rensa::serializers::DictionarySerializer saved;
  rensa::optimizers::SGD opt1(1.0);
  {
    FakeUpdater updater(3);
    updater.optimizers["main"] = &opt1;
    Trainer trainer(updater, {split, "iteration"}, dir.path());
    trainer.extend(make(), "shift");
    trainer.run();
    trainer.serialize(saved);
  }
  rensa::optimizers::SGD opt2(123.0);  // a fresh optimizer: its value must not leak into the schedule
  FakeUpdater updater(3);
  updater.optimizers["main"] = &opt2;
  Trainer trainer(updater, {n, "iteration"}, dir.path());
  trainer.extend(make(), "shift");
  rensa::serializers::DictionaryDeserializer loader(saved.target(), "snapshot");
  trainer.serialize(loader);
  std::vector<double> values;
  trainer.extend(rensa::training::make_extension([&](Trainer&) { values.push_back(opt2.hyperparam("lr")); }, "probe",
                                                 {1, "iteration"}, -1000));
  trainer.run();
  const std::vector<double> tail(expected.begin() + split + 1, expected.end());
  ASSERT_EQ(values.size(), tail.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], tail[i]) << "t = " << split + 1 + i;
}

TEST(Shifts, ResumeContinuesTheSchedule) {
  expect_resumes(maker<E::ExponentialShift>("lr", 0.9), 8, 3);
  expect_resumes(maker<E::LinearShift>("lr", std::pair<double, double>{1.0, 0.0}, std::pair<int64_t, int64_t>{2, 6}), 8,
                 3);
  expect_resumes(maker<E::StepShift>("lr", 0.5, int64_t{2}), 8, 3);
  expect_resumes(maker<E::MultistepShift>("lr", 0.5, std::vector<int64_t>{2, 4, 6}), 8, 3);
  expect_resumes(maker<E::PolynomialShift>("lr", 0.9, int64_t{10}), 8, 3);
  expect_resumes(maker<E::InverseShift>("lr", 0.1, 0.75), 8, 3);
  expect_resumes(maker<E::WarmupShift>("lr", 0.01, int64_t{5}), 8, 3);
  expect_resumes(maker<E::CosineShift>("lr", int64_t{5}, 0.1, std::nullopt, true), 8, 3);
}

// ---- ChainedShift -----------------------------------------------------------------------------

TEST(ChainedShift, WarmupThenCosine) {
  // From 0.25 to the optimizer's 1.0 over 4 iterations, then cosine to 0 over 4 more.
  const double c = (1 + std::cos(std::numbers::pi / 4)) / 2;
  rensa::optimizers::SGD sgd(1.0);
  expect_values(schedule([] { return E::warmup_then("lr", 4, 0.25, std::make_shared<E::CosineShift>("lr", 4)); }, 10,
                         sgd),
                {0.25, 0.4375, 0.625, 0.8125, 1, c, 0.5, 1 - c, 0, 0, 0});
}

TEST(ChainedShift, WarmupThenStepPolynomialAndMultistep) {
  rensa::optimizers::SGD sgd(2.0);
  expect_values(schedule([] { return E::warmup_then("lr", 2, 0.5, std::make_shared<E::StepShift>("lr", 0.1, 3)); }, 7,
                         sgd),
                {1, 1.5, 2, 2, 2, 0.2, 0.2, 0.2});
  rensa::optimizers::SGD sgd2(1.0);
  expect_values(
      schedule([] { return E::warmup_then("lr", 1, 0.0, std::make_shared<E::PolynomialShift>("lr", 1.0, 4)); }, 6,
               sgd2),
      {0, 1, 0.75, 0.5, 0.25, 0, 0});
  // MultistepShift keeps per-call state: the chain advances it with the segment's own t.
  rensa::optimizers::SGD sgd3(1.0);
  expect_values(schedule(
                    [] {
                      return std::make_shared<E::ChainedShift>(
                          "lr", std::vector<E::ShiftSegment>{
                                    {std::make_shared<E::WarmupShift>("lr", 0.1, 2), 2},
                                    {std::make_shared<E::MultistepShift>("lr", 0.5, std::vector<int64_t>{2, 4}), 0}});
                    },
                    7, sgd3),
                {0.1, 0.55, 1, 1, 0.5, 0.5, 0.25, 0.25});
  // Without a decay, the warm-up holds the target; an explicit init overrides the optimizer's.
  rensa::optimizers::SGD sgd4(9.0);
  expect_values(schedule([] { return E::warmup_then("lr", 2, 0.5, nullptr, 4.0); }, 3, sgd4), {2, 3, 4, 4});
}

TEST(ChainedShift, ResumeContinuesTheSchedule) {
  const auto chain = [] {
    return std::make_shared<E::ChainedShift>(
        "lr", std::vector<E::ShiftSegment>{
                  {E::warmup_then("lr", 3, 0.1, nullptr), 3},
                  // Resumed at 4, a MultistepShift that lost its step would repeat 0.5 at 5.
                  {std::make_shared<E::MultistepShift>("lr", 0.5, std::vector<int64_t>{1, 2}), 4},
                  {std::make_shared<E::CosineShift>("lr", 4, 0.01), 0}});
  };
  for (int64_t split : {1, 3, 4, 7, 9}) expect_resumes(chain, 12, split);
  expect_resumes([] { return E::warmup_then("lr", 4, 0.2, std::make_shared<E::ExponentialShift>("lr", 0.8)); }, 9, 2);
}

TEST(ChainedShift, Errors) {
  using Segments = std::vector<E::ShiftSegment>;
  const auto warm = [] { return std::make_shared<E::WarmupShift>("lr", 0.0, 2); };
  rensa::test::expect_error<rensa::ValueError>([] { E::ChainedShift("lr", Segments{}); }, {"ChainedShift", "no segments"});
  rensa::test::expect_error<rensa::ValueError>([] { E::ChainedShift("lr", Segments{{nullptr, 0}}); },
                                               {"ChainedShift", "segment 0", "null"});
  rensa::test::expect_error<rensa::ValueError>(
      [&] { E::ChainedShift("lr", Segments{{warm(), 2}, {std::make_shared<E::ExponentialShift>("alpha", 0.5), 0}}); },
      {"ChainedShift", "segment 1", "ExponentialShift", "'alpha'", "'lr'"});
  rensa::test::expect_error<rensa::ValueError>([&] { E::ChainedShift("lr", Segments{{warm(), 0}, {warm(), 0}}); },
                                               {"ChainedShift", "segment 0", "length 0"});
  rensa::test::expect_error<rensa::ValueError>([&] { E::ChainedShift("lr", Segments{{warm(), 3}}); },
                                               {"ChainedShift", "last segment", "3"});
  rensa::optimizers::SGD sgd;
  rensa::test::expect_error<rensa::ValueError>(
      [&] {
        E::ChainedShift("lr", Segments{{std::make_shared<E::WarmupShift>("lr", 0.0, 2, std::nullopt, &sgd), 0}});
      },
      {"ChainedShift", "segment 0", "own optimizer"});
  rensa::test::expect_error<rensa::ValueError>([] { E::warmup_then("lr", -1, 0.5, nullptr); },
                                               {"warmup_then", "warmup_iter", "-1"});
  rensa::test::expect_error<rensa::ValueError>([] { E::warmup_then("lr", 0, 0.5, nullptr); },
                                               {"warmup_then", "no warm-up"});
  rensa::test::expect_error<rensa::ValueError>([] { E::warmup_then("lr", 2, 1.5, nullptr); },
                                               {"warmup_then", "start_fraction", "1.5"});
  rensa::test::expect_error<rensa::ValueError>([] { E::WarmupShift::from_fraction("lr", -0.5, 2); },
                                               {"WarmupShift", "start_fraction", "-0.5"});
}

// Two shifts on one hyperparameter of one optimizer would overwrite each other: refused at
// initialize, naming both. Other hyperparameters, or other optimizers, are fine.
TEST(ChainedShift, TwoShiftsOnOneHyperparameterAreRefused) {
  TempDir dir("shift_twice");
  rensa::optimizers::MomentumSGD opt(1.0, 0.9), other(1.0, 0.9);
  FakeUpdater updater(3);
  updater.optimizers["main"] = &opt;
  {
    Trainer trainer(updater, {2, "iteration"}, dir.path());
    trainer.extend(E::WarmupShift("lr", 0.1, 5));
    trainer.extend(E::ExponentialShift("lr", 0.5, std::nullopt, std::nullopt, &opt), "decay");
    rensa::test::expect_error<rensa::ValueError>([&] { trainer.run(); },
                                                 {"'lr'", "WarmupShift", "'decay'", "ChainedShift"});
  }
  Trainer trainer(updater, {2, "iteration"}, dir.path());
  trainer.extend(E::WarmupShift("lr", 0.1, 5));
  trainer.extend(E::ExponentialShift("momentum", 0.5));
  trainer.extend(E::ExponentialShift("lr", 0.5, std::nullopt, std::nullopt, &other));
  trainer.run();
  EXPECT_NEAR(opt.hyperparam("lr"), 0.1 + 0.9 * 2 / 5, 1e-15);
  EXPECT_NEAR(opt.hyperparam("momentum"), 0.225, 1e-15);
  EXPECT_NEAR(other.hyperparam("lr"), 0.25, 1e-15);
}

}  // namespace
