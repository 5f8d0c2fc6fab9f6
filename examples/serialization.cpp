// Chainer's serialization example: an MLP saved as .npz and as HDF5, the files' contents listed, and
// both loaded into new models that must equal each other.
//   build/release/examples/serialization --out result/serialization
// Writes model.npz and model.h5 under --out. HDF5 needs rensa built with libhdf5-dev (scripts/setup
// installs it); without it the example says so and does the .npz half.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace S = rensa::serializers;

namespace {

// Chainer's MLP of the example: three Linear layers and a persistent 10 x 10 array.
struct MLP : rensa::Chain {
  L::Linear l1, l2, l3;
  MLP(int64_t n_in = 784, int64_t n_units = 100, int64_t n_out = 10)
      : l1(n_in, n_units), l2(n_units, n_units), l3(n_units, n_out) {
    add_link("l1", l1);
    add_link("l2", l2);
    add_link("l3", l3);
    add_persistent("persistent", rensa::random::uniform({10, 10}, 0.0, 1.0, rensa::Dtype::float64));
  }
  rensa::Variable forward(const rensa::Variable& x) override { return l3(F::relu(l2(F::relu(l1(x))))); }
  using Link::forward;
};

void list(const std::map<std::string, rensa::Array>& arrays, const std::string& what) {
  std::cout << "--- The list of saved params in " << what << " ---\n";
  for (const auto& [key, a] : arrays) std::cout << key << "\t: " << a.shape() << "\n";
  std::cout << "---------------------------------------------\n\n";
}

// Every parameter and persistent value of a equals b's.
bool same(MLP& a, MLP& b) {
  S::DictionarySerializer sa, sb;
  a.serialize(sa);
  b.serialize(sb);
  for (const auto& [key, value] : sa.target()) {
    if (!rensa::array_equal(value, sb.target().at(key))) return false;
    std::cout << key << " " << value.shape() << "\n";
  }
  return sa.target().size() == sb.target().size();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Save an MLP as .npz and HDF5 and load it back (Chainer's serialization example)"};
  app.option_defaults()->always_capture_default();
  std::string out = "result/serialization";
  uint64_t seed = 0;
  app.add_option("-o,--out", out, "Directory for model.npz and model.h5");
  run_flags::add_seed(app, seed, "Seed of the initial parameters");
  CLI11_PARSE(app, argc, argv);
  try {
    rensa::seed(seed);
    std::filesystem::create_directories(out);
    MLP model;
    const std::string npz = out + "/model.npz", h5 = out + "/model.h5";
    S::save_npz(npz, model);
    std::cout << npz << " saved!\n\n";
    list(S::read_npz(npz), npz);
    MLP from_npz;
    S::load_npz(npz, from_npz);
    std::cout << npz << " loaded!\n";
    if (!S::hdf5_available()) {
      std::cout << "serialization: this rensa was built without HDF5 (libhdf5-dev); skipping model.h5\n";
      return same(model, from_npz) ? 0 : 1;
    }
    S::save_hdf5(h5, model);
    std::cout << h5 << " saved!\n\n";
    list(S::read_hdf5(h5), h5);
    MLP from_h5;
    S::load_hdf5(h5, from_h5);
    std::cout << h5 << " loaded!\n";
    if (!same(from_npz, from_h5) || !same(model, from_h5)) {
      std::cerr << "serialization: the models loaded from " << npz << " and " << h5 << " differ\n";
      return 1;
    }
    return 0;
  } catch (const rensa::Error& e) {
    std::cerr << "serialization: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "serialization: " << e.what() << '\n';
    return 1;
  }
}
