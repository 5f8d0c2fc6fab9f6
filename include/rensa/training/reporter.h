#pragma once
/// \file
/// The reporter under its training names. It lives in rensa/core/reporter.h (namespace rensa), below
/// links, which report; chainer.Reporter is likewise not part of chainer.training.

#include "rensa/core/reporter.h"

namespace rensa::training {

using rensa::Observation;
using rensa::report;
using rensa::Reporter;

}  // namespace rensa::training
