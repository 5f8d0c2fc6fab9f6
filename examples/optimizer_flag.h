#pragma once
// --optimizer "NAME(ARGS)", as ChainerMN's seq2seq example takes it: NAME is any of Chainer's
// optimizers (lower case), ARGS its hyperparameters, positional in the constructor's order and then
// key=value: "adam()", "adam(0.002, beta2=0.99)", "rmspropgraves(lr=1e-3)", "sgd(0.1)".
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rensa/training.h"

namespace optimizer_flag {

struct Kind {
  std::function<std::unique_ptr<rensa::optimizers::Optimizer>()> make;
  std::vector<std::string> positional;  // hyperparameters in the constructor's order
};

inline const std::map<std::string, Kind>& kinds() {
  namespace O = rensa::optimizers;
  static const std::map<std::string, Kind> table = {
      {"adadelta", {[] { return std::make_unique<O::AdaDelta>(); }, {"rho", "eps"}}},
      {"adagrad", {[] { return std::make_unique<O::AdaGrad>(); }, {"lr", "eps"}}},
      {"adam",
       {[] { return std::make_unique<O::Adam>(); },
        {"alpha", "beta1", "beta2", "eps", "eta", "weight_decay_rate", "amsgrad", "adabound", "final_lr", "gamma"}}},
      {"adamw",
       {[] { return std::make_unique<O::AdamW>(); }, {"alpha", "beta1", "beta2", "eps", "eta", "weight_decay_rate"}}},
      {"amsgrad", {[] { return std::make_unique<O::AMSGrad>(); }, {"alpha", "beta1", "beta2", "eps", "eta"}}},
      {"adabound",
       {[] { return std::make_unique<O::AdaBound>(); },
        {"alpha", "beta1", "beta2", "final_lr", "gamma", "eps", "eta"}}},
      {"amsbound",
       {[] { return std::make_unique<O::AMSBound>(); },
        {"alpha", "beta1", "beta2", "final_lr", "gamma", "eps", "eta"}}},
      {"correctedmomentumsgd", {[] { return std::make_unique<O::CorrectedMomentumSGD>(); }, {"lr", "momentum"}}},
      {"momentumsgd", {[] { return std::make_unique<O::MomentumSGD>(); }, {"lr", "momentum"}}},
      {"msvag", {[] { return std::make_unique<O::MSVAG>(); }, {"lr", "beta", "eta", "weight_decay_rate"}}},
      {"nesterovag", {[] { return std::make_unique<O::NesterovAG>(); }, {"lr", "momentum"}}},
      {"rmsprop", {[] { return std::make_unique<O::RMSprop>(); }, {"lr", "alpha", "eps"}}},
      {"rmspropgraves", {[] { return std::make_unique<O::RMSpropGraves>(); }, {"lr", "alpha", "momentum", "eps"}}},
      {"sgd", {[] { return std::make_unique<O::SGD>(); }, {"lr"}}},
      {"smorms3", {[] { return std::make_unique<O::SMORMS3>(); }, {"lr", "eps"}}},
  };
  return table;
}

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// The optimizer `spec` describes; rensa::ValueError naming the spec and what is wrong in it.
inline std::unique_ptr<rensa::optimizers::Optimizer> make(const std::string& spec) {
  const auto bad = [&spec](const std::string& why) { return rensa::ValueError("--optimizer '" + spec + "': " + why); };
  const auto open = spec.find('(');
  if (open == std::string::npos || spec.back() != ')') throw bad("expected NAME(ARGS), e.g. adam() or sgd(0.1)");
  std::string name = trim(spec.substr(0, open));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto it = kinds().find(name);
  if (it == kinds().end()) {
    std::string names;
    for (const auto& [n, k] : kinds()) names += (names.empty() ? "" : ", ") + n;
    throw bad("unknown optimizer '" + name + "'; known: " + names);
  }
  auto opt = it->second.make();
  const std::string args = trim(spec.substr(open + 1, spec.size() - open - 2));
  std::size_t position = 0;
  bool keywords = false;
  for (std::size_t at = 0; !args.empty() && at <= args.size();) {
    const auto comma = args.find(',', at);
    const std::string arg = trim(args.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    at = comma == std::string::npos ? args.size() + 1 : comma + 1;
    const auto eq = arg.find('=');
    std::string key;
    std::string text = arg;
    if (eq != std::string::npos) {
      key = trim(arg.substr(0, eq));
      text = trim(arg.substr(eq + 1));
      keywords = true;
    } else {
      if (keywords) throw bad("positional argument '" + arg + "' after a keyword argument");
      if (position >= it->second.positional.size()) {
        throw bad(name + " takes at most " + std::to_string(it->second.positional.size()) + " positional arguments");
      }
      key = it->second.positional[position++];
    }
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
      throw bad("'" + arg + "' is not a finite number");
    }
    if (!opt->has_hyperparam(key)) throw bad(name + " has no hyperparameter '" + key + "'");
    opt->set_hyperparam(key, value);
  }
  return opt;
}

}  // namespace optimizer_flag
