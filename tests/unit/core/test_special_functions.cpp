// The scalar special functions of the elementwise kernels, both the host backends'
// (src/backends/common/special_functions.h) and the reference backend's independent ones
// (src/backends/reference/special.h), against values computed independently in 60-digit arithmetic
// (series and Newton iterations on erf, Euler-Maclaurin sums with exact Bernoulli numbers) or known
// in closed form, and against the identities that tie them to the C++ library's erf, erfc and lgamma.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "src/backends/common/special_functions.h"
#include "src/backends/reference/special.h"

namespace {

// One implementation of the functions, in double.
struct Functions {
  std::string name;
  double (*erfcx)(double);
  double (*erfinv)(double);
  double (*erfcinv)(double);
  double (*ndtr)(double);
  double (*ndtri)(double);
  double (*log_ndtr)(double);
  double (*lgamma)(double);
  double (*digamma)(double);
  double (*zeta)(double, double);
  double (*polygamma)(double, double);
};

namespace hs = rensa::backends::special;
namespace rs = rensa::backends::reference::special;

const Functions kHost{"host",       hs::erfcx,  hs::erfinv,  hs::erfcinv, hs::ndtr,     hs::ndtri,
                      hs::log_ndtr, hs::lgamma, hs::digamma, hs::zeta,    hs::polygamma};
// The reference's long double results, rounded to double as its kernels round them.
const Functions kReference{"reference",
                           [](double x) { return static_cast<double>(rs::erfcx(x)); },
                           [](double x) { return static_cast<double>(rs::erfinv(x)); },
                           [](double x) { return static_cast<double>(rs::erfcinv(x)); },
                           [](double x) { return static_cast<double>(rs::ndtr(x)); },
                           [](double x) { return static_cast<double>(rs::ndtri(x)); },
                           [](double x) { return static_cast<double>(rs::log_ndtr(x)); },
                           [](double x) { return static_cast<double>(rs::lgamma(x)); },
                           [](double x) { return static_cast<double>(rs::digamma(x)); },
                           [](double s, double q) { return static_cast<double>(rs::zeta(s, q)); },
                           [](double n, double x) { return static_cast<double>(rs::polygamma(n, x)); }};

// Test names and failures show the implementation's name.
void PrintTo(const Functions& f, std::ostream* os) {
  *os << f.name;
}

class SpecialFunctions : public ::testing::TestWithParam<Functions> {};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;
constexpr double kEuler = 0.57721566490153286061;

struct Known {
  double x, want;
};

void expect_rel(double got, double want, double rtol, const char* what, double x) {
  EXPECT_NEAR(got, want, rtol * std::abs(want)) << what << "(" << x << ")";
}

}  // namespace

TEST_P(SpecialFunctions, Erfcx) {
  const Functions& sp = GetParam();
  for (const Known& k : std::vector<Known>{{-3, 16205.988853999586},
                                           {0.1, 0.8964569799691267},
                                           {1, 0.427583576155807},
                                           {5, 0.11070463773306863},
                                           {30, 0.01879588886141675},
                                           {1e3, 0.0005641893014533876}}) {
    expect_rel(sp.erfcx(k.x), k.want, 4e-15, "erfcx", k.x);
  }
  // Both sides of the switch to the continued fraction, and the limits.
  expect_rel(sp.erfcx(24.999999), sp.erfcx(25.000001), 1e-6, "erfcx", 25.0);
  EXPECT_EQ(sp.erfcx(kInf), 0.0);
  EXPECT_EQ(sp.erfcx(-30.0), kInf);
  EXPECT_EQ(sp.erfcx(0.0), 1.0);
  EXPECT_TRUE(std::isnan(sp.erfcx(NAN)));
}

TEST_P(SpecialFunctions, ErfinvAndErfcinv) {
  const Functions& sp = GetParam();
  // (Values at the doubles nearest the decimal arguments.)
  for (const Known& k : std::vector<Known>{{0.5, 0.4769362762044699},
                                           {0.9, 1.1630871536766743},
                                           {0.999, 2.3267537655135246},
                                           {-0.25, -0.2253120550121781},
                                           {1e-5, 8.862269254759594e-06},
                                           {0.9999999, 3.7665625816384707}}) {
    expect_rel(sp.erfinv(k.x), k.want, 2e-15, "erfinv", k.x);
    const double z = 1.0 - k.x;                                          // rounded, but 1 - z is exact:
    expect_rel(sp.erfcinv(z), sp.erfinv(1.0 - z), 2e-15, "erfcinv", z);  // erfcinv(z) = erfinv(1 - z)
  }
  // Deep tails, where 1 - x is not representable: erfcinv keeps the relative accuracy of z.
  for (const Known& k :
       std::vector<Known>{{1e-10, 4.572824967389486}, {1e-100, 15.065574702592645}, {1e-300, 26.209469960516124}}) {
    expect_rel(sp.erfcinv(k.x), k.want, 2e-15, "erfcinv", k.x);
  }
  // erfcinv(2 - z) = -erfcinv(z), where 2 - z is exact.
  for (double z : {1e-10, 0.25, 0.4, 0.75}) {
    const double w = 2.0 - z;
    expect_rel(sp.erfcinv(w), -sp.erfcinv(2.0 - w), 2e-15, "erfcinv", w);
  }
  // Round trips over the whole range.
  for (double y = -0.999; y < 1.0; y += 0.0137) {
    EXPECT_NEAR(std::erf(sp.erfinv(y)), y, 4e-16) << y;
    EXPECT_NEAR(std::erfc(sp.erfcinv(1.0 + y)), 1.0 + y, 4e-16 * (1.0 + y) + 1e-17) << y;
  }
  EXPECT_EQ(sp.erfinv(1.0), kInf);
  EXPECT_EQ(sp.erfinv(-1.0), -kInf);
  EXPECT_TRUE(std::isnan(sp.erfinv(1.5)));
  EXPECT_EQ(sp.erfcinv(0.0), kInf);
  EXPECT_EQ(sp.erfcinv(2.0), -kInf);
  EXPECT_TRUE(std::isnan(sp.erfcinv(-0.1)));
  EXPECT_TRUE(std::isnan(sp.erfcinv(2.1)));
}

TEST_P(SpecialFunctions, NormalDistribution) {
  const Functions& sp = GetParam();
  expect_rel(sp.ndtri(0.025), -1.9599639845400543, 2e-15, "ndtri", 0.025);
  expect_rel(sp.ndtri(1e-10), -6.361340902404057, 2e-15, "ndtri", 1e-10);
  expect_rel(sp.ndtri(0.9), 1.2815515655446006, 2e-15, "ndtri", 0.9);
  EXPECT_EQ(sp.ndtri(0.5), 0.0);
  EXPECT_EQ(sp.ndtri(0.0), -kInf);
  EXPECT_EQ(sp.ndtri(1.0), kInf);
  EXPECT_TRUE(std::isnan(sp.ndtri(1.5)));
  for (double x = -8.0; x < 8.0; x += 0.37)
    EXPECT_NEAR(sp.ndtr(sp.ndtri(sp.ndtr(x))), sp.ndtr(x), 1e-15 + 1e-14 * sp.ndtr(x));
  for (const Known& k : std::vector<Known>{{-40, -804.6084420137538},
                                           {-5, -15.064998393988725},
                                           {3, -0.0013508099647481938},
                                           {10, -7.619853024160525e-24}}) {
    expect_rel(sp.log_ndtr(k.x), k.want, 1e-14, "log_ndtr", k.x);
  }
  EXPECT_EQ(sp.log_ndtr(-kInf), -kInf);
  EXPECT_EQ(sp.log_ndtr(kInf), 0.0);
}

TEST_P(SpecialFunctions, Digamma) {
  const Functions& sp = GetParam();
  for (const Known& k : std::vector<Known>{{0.001, -1000.5755719318103},
                                           {3.7, 1.1671535393615113},
                                           {25.5, 3.2189424728839198},
                                           {1e5, 11.512920464961896},
                                           {1.0, -kEuler},
                                           {0.5, -kEuler - 2 * std::log(2.0)},
                                           {-2.3, 3.31732315756182}}) {
    expect_rel(sp.digamma(k.x), k.want, 4e-15, "digamma", k.x);
  }
  EXPECT_NEAR(sp.digamma(1.4616321449683623), 0.0, 1e-15);  // its positive root
  // The derivative of lgamma.
  for (double x : {-3.7, -0.2, 0.3, 2.5, 17.0}) {
    const double h = 1e-5;
    EXPECT_NEAR(sp.digamma(x), (sp.lgamma(x + h) - sp.lgamma(x - h)) / (2 * h), 1e-8) << x;
  }
  EXPECT_EQ(sp.digamma(0.0), -kInf);
  EXPECT_EQ(sp.digamma(-0.0), kInf);
  EXPECT_TRUE(std::isnan(sp.digamma(-2.0)));
  EXPECT_EQ(sp.digamma(kInf), kInf);
}

TEST_P(SpecialFunctions, Zeta) {
  const Functions& sp = GetParam();
  struct Case {
    double s, q, want;
  };
  for (const Case& c : std::vector<Case>{{2, 1, kPi * kPi / 6},
                                         {4, 1, std::pow(kPi, 4) / 90},
                                         {3, 2, 0.2020569031595943},
                                         {1.5, 0.25, 10.213055360466601},
                                         {4.5, 3.5, 0.005708011293831409},
                                         {7, 4, 7.95300110952091e-05},
                                         {30, 2, 9.313274324196682e-10},
                                         {1.01, 1, 100.57794333849687},
                                         {2, 1000.5, 0.0009999999166666958},
                                         {2, 0.5, kPi * kPi / 2}}) {
    EXPECT_NEAR(sp.zeta(c.s, c.q), c.want, 4e-15 * std::abs(c.want)) << "zeta(" << c.s << ", " << c.q << ")";
  }
  // Negative q: terms up to 8 in size cancel to 0.054.
  EXPECT_NEAR(sp.zeta(3, -2.5), 0.0541020258208637, 2e-14 * 0.0541020258208637);
  EXPECT_EQ(sp.zeta(1.0, 2.0), kInf);
  EXPECT_TRUE(std::isnan(sp.zeta(0.5, 2.0)));
  EXPECT_EQ(sp.zeta(2.0, -3.0), kInf);
  EXPECT_TRUE(std::isnan(sp.zeta(2.5, -0.5)));
  EXPECT_EQ(sp.zeta(2.0, 0.0), kInf);
}

TEST_P(SpecialFunctions, Polygamma) {
  const Functions& sp = GetParam();
  struct Case {
    double n, x, want;
  };
  for (const Case& c : std::vector<Case>{{1, 0.5, kPi * kPi / 2},
                                         {1, 7.25, 0.14787923315893217},
                                         {2, 0.3, -75.27253658872603},
                                         {3, 4, 0.04486532819275507},
                                         {6, 4, -0.05726160798855055},
                                         {4, 20.5, -3.742211313047414e-05},
                                         {0, 3.7, 1.1671535393615113}}) {
    EXPECT_NEAR(sp.polygamma(c.n, c.x), c.want, 4e-15 * std::abs(c.want)) << "polygamma(" << c.n << ", " << c.x << ")";
  }
  // The derivative of the order below.
  for (double x : {-1.3, 0.7, 5.0}) {
    const double h = 1e-5;
    EXPECT_NEAR(sp.polygamma(1, x), (sp.digamma(x + h) - sp.digamma(x - h)) / (2 * h),
                1e-6 * std::abs(sp.polygamma(1, x)));
  }
  EXPECT_TRUE(std::isnan(sp.polygamma(-1, 2.0)));
  EXPECT_TRUE(std::isnan(sp.polygamma(1.5, 2.0)));
}

INSTANTIATE_TEST_SUITE_P(Backends, SpecialFunctions, ::testing::Values(kHost, kReference),
                         [](const ::testing::TestParamInfo<Functions>& info) { return info.param.name; });
