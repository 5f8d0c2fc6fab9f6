// The communicator variants: how each reduces the packed gradients (ChainerMN's naive, flat,
// hierarchical, two_dimensional and single_node communicators, and a dummy one for measuring).
#include <algorithm>
#include <sstream>

#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {
namespace {

void allreduce_in_place(MPI_Comm comm, void* data, int64_t count, Dtype wire) {
  RENSA_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_type(wire), mpi_op(wire, ReduceOp::sum), comm));
}

// All gradients packed into one buffer per wire dtype, one MPI_Allreduce over every rank.
class FlatCommunicator : public CommunicatorImpl {
 public:
  using CommunicatorImpl::CommunicatorImpl;
  void reduce_wire(Channel& ch, void* data, int64_t count, Dtype wire) override {
    if (inter_size() == 1 && shm_allreduce(ch, data, data, count, wire, ReduceOp::sum)) return;
    allreduce_in_place(ch.world.get(), data, count, wire);
  }
};

// One MPI_Allreduce per gradient (the baseline).
class NaiveCommunicator : public FlatCommunicator {
 public:
  using FlatCommunicator::FlatCommunicator;
  void mean_grads(Channel& ch, const std::vector<Array>& grads) override {
    for (const Array& g : grads) CommunicatorImpl::mean_grads(ch, {g});
  }
};

// Every rank on one host: the flat algorithm over the host's communicator.
class SingleNodeCommunicator : public CommunicatorImpl {
 public:
  SingleNodeCommunicator(std::string name, MPI_Comm base, const CommunicatorOptions& options, std::string host)
      : CommunicatorImpl(std::move(name), base, options, std::move(host)) {
    RENSA_CHECK(inter_size() == 1, ValueError,
                "create_communicator: single_node needs every rank on one host, but the ", size(), " ranks are on ",
                inter_size(), " hosts; use flat, hierarchical or two_dimensional");
  }
  void reduce_wire(Channel& ch, void* data, int64_t count, Dtype wire) override {
    if (shm_allreduce(ch, data, data, count, wire, ReduceOp::sum)) return;
    allreduce_in_place(ch.intra.get(), data, count, wire);
  }
};

// Reduce to the first rank of each host, allreduce among those, broadcast within each host: only
// one rank per host talks across hosts.
class HierarchicalCommunicator : public CommunicatorImpl {
 public:
  using CommunicatorImpl::CommunicatorImpl;
  void reduce_wire(Channel& ch, void* data, int64_t count, Dtype wire) override {
    const MPI_Datatype type = mpi_type(wire);
    const MPI_Op op = mpi_op(wire, ReduceOp::sum);
    const int n = static_cast<int>(count);
    // Within the host through shared memory when it can: every rank of the host gets its sum.
    if (shm_allreduce(ch, data, data, count, wire, ReduceOp::sum)) {
      if (inter_size() > 1) {
        if (intra_rank() == 0) allreduce_in_place(ch.inter.get(), data, count, wire);
        RENSA_MPI_CHECK(MPI_Bcast(data, n, type, 0, ch.intra.get()));
      }
      return;
    }
    if (intra_size() > 1) {
      if (intra_rank() == 0) {
        RENSA_MPI_CHECK(MPI_Reduce(MPI_IN_PLACE, data, n, type, op, 0, ch.intra.get()));
      } else {
        RENSA_MPI_CHECK(MPI_Reduce(data, nullptr, n, type, op, 0, ch.intra.get()));
      }
    }
    // ch.inter of intra_rank 0 holds the first rank of every host.
    if (intra_rank() == 0 && inter_size() > 1) allreduce_in_place(ch.inter.get(), data, count, wire);
    if (intra_size() > 1) RENSA_MPI_CHECK(MPI_Bcast(data, n, type, 0, ch.intra.get()));
  }
};

// Reduce-scatter within each host, allreduce of each slice across hosts (by the ranks holding it),
// allgather within each host: every rank talks across hosts, each for 1/intra_size of the data.
class TwoDimensionalCommunicator : public CommunicatorImpl {
 public:
  TwoDimensionalCommunicator(std::string name, MPI_Comm base, const CommunicatorOptions& options, std::string host)
      : CommunicatorImpl(std::move(name), base, options, std::move(host)) {
    const auto& sizes = host_sizes();
    if (std::any_of(sizes.begin(), sizes.end(), [&](int s) { return s != sizes[0]; })) {
      std::ostringstream os;
      for (std::size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
      RENSA_THROW(ValueError,
                  "create_communicator: two_dimensional needs the same number of ranks on every host, got (", os.str(),
                  ") ranks on ", sizes.size(), " hosts; use hierarchical");
    }
  }
  void reduce_wire(Channel& ch, void* data, int64_t count, Dtype wire) override {
    const int k = intra_size();
    if (k == 1) {
      allreduce_in_place(ch.inter.get(), data, count, wire);
      return;
    }
    const MPI_Datatype type = mpi_type(wire);
    const MPI_Op op = mpi_op(wire, ReduceOp::sum);
    std::vector<int> counts(static_cast<std::size_t>(k)), displs(static_cast<std::size_t>(k));
    int64_t off = 0;
    for (int i = 0; i < k; ++i) {
      counts[static_cast<std::size_t>(i)] = static_cast<int>(count / k + (i < count % k ? 1 : 0));
      displs[static_cast<std::size_t>(i)] = static_cast<int>(off);
      off += counts[static_cast<std::size_t>(i)];
    }
    const int me = intra_rank();
    const std::size_t isz = itemsize(wire);
    char* mine = static_cast<char*>(data) + static_cast<std::size_t>(displs[static_cast<std::size_t>(me)]) * isz;
    // Within the host through shared memory when it can (every rank then has the host's sum, of
    // which it owns one slice across hosts).
    if (shm_allreduce(ch, data, data, count, wire, ReduceOp::sum)) {
      if (inter_size() > 1) {
        if (counts[static_cast<std::size_t>(me)] > 0) {
          allreduce_in_place(ch.inter.get(), mine, counts[static_cast<std::size_t>(me)], wire);
        }
        RENSA_MPI_CHECK(
            MPI_Allgatherv(MPI_IN_PLACE, 0, type, data, counts.data(), displs.data(), type, ch.intra.get()));
      }
      return;
    }
    Array slice = Array::empty({std::max(counts[static_cast<std::size_t>(me)], 1)}, wire);
    RENSA_MPI_CHECK(MPI_Reduce_scatter(data, slice.raw_data(), counts.data(), type, op, ch.intra.get()));
    if (inter_size() > 1 && counts[static_cast<std::size_t>(me)] > 0) {
      allreduce_in_place(ch.inter.get(), slice.raw_data(), counts[static_cast<std::size_t>(me)], wire);
    }
    std::copy_n(static_cast<const char*>(slice.raw_data()),
                static_cast<std::size_t>(counts[static_cast<std::size_t>(me)]) * isz, mine);
    RENSA_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, type, data, counts.data(), displs.data(), type, ch.intra.get()));
  }
};

// Packs and unpacks like flat but sends nothing: the cost of everything but the network. Gradients
// keep their local values (not divided by size).
class DummyCommunicator : public CommunicatorImpl {
 public:
  using CommunicatorImpl::CommunicatorImpl;
  void reduce_wire(Channel&, void*, int64_t, Dtype) override {}
  bool averages() const override { return false; }
  bool reduces_within_host() const override { return false; }
};

}  // namespace

std::shared_ptr<CommunicatorImpl> make_communicator_impl(std::string_view name, MPI_Comm base,
                                                         const CommunicatorOptions& options, std::string host) {
  // The background thread calls the variant's virtual functions: stop it while the object is whole.
  auto make = [&]<class T>() {
    return std::shared_ptr<CommunicatorImpl>(new T(std::string(name), base, options, host), [](CommunicatorImpl* p) {
      p->shutdown();
      delete p;
    });
  };
  if (name == "naive") return make.operator()<NaiveCommunicator>();
  if (name == "flat") return make.operator()<FlatCommunicator>();
  if (name == "hierarchical") return make.operator()<HierarchicalCommunicator>();
  if (name == "two_dimensional") return make.operator()<TwoDimensionalCommunicator>();
  if (name == "single_node") return make.operator()<SingleNodeCommunicator>();
  if (name == "dummy") return make.operator()<DummyCommunicator>();
  RENSA_THROW(ValueError, "create_communicator: unknown communicator '", name, "'");
}

}  // namespace rensa::mn::detail
