// CommunicatorImpl's collectives of training: bcast_data (parameters and persistent values from
// rank 0), multi_node_mean_grad, and mean_grads: each pack of the wire layout summed by the variant,
// or within the host's shared segment when every rank is on one host.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "rensa/core/timeline.h"
#include "src/mn/communicator_helpers.h"
#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {
namespace {

std::string describe_array(const Array& a) {
  std::ostringstream os;
  os << a.shape() << " " << dtype_name(a.dtype());
  return os.str();
}

}  // namespace

// ---- training ----------------------------------------------------------------------------------------

void CommunicatorImpl::bcast_data(Link& link) {
  const auto params = link.namedparams(true);
  const auto persistents = link.namedpersistents();
  // The structure every rank must share, one line per entry.
  std::string desc;
  std::vector<Array> arrays;
  for (const auto& [path, p] : params) {
    const bool init = !p.array().is_null();
    desc += "parameter " + path + " " + (init ? describe_array(p.array()) : std::string("(uninitialized)")) + "\n";
    if (init) arrays.push_back(p.array());
  }
  for (const auto& [path, a] : persistents) {
    const bool init = a != nullptr && !a->is_null();
    desc += "persistent " + path + " " + (init ? describe_array(*a) : std::string("(null)")) + "\n";
    if (init) arrays.push_back(*a);
  }
  std::size_t nbytes = 0;
  for (const Array& a : arrays) nbytes += a.nbytes();
  const Fingerprint fp{static_cast<int64_t>(OpCode::bcast_data),
                       -1,
                       static_cast<int64_t>(params.size() + persistents.size()),
                       0,
                       -1,
                       &desc,
                       "bcast_data",
                       "parameters and persistent values"};
  const bool check = checking_;
  run_op(fg_, OpCode::bcast_data, nbytes, fp, check, [&] {
    // The structure check is always on: a mismatch here would otherwise corrupt parameters silently.
    if (!check) check_same_structure(fg_.world.get(), topo_.size, desc, "bcast_data", "parameters and persistent values");
    // One buffer per dtype, in order of first appearance.
    std::vector<Dtype> dtypes;
    for (const Array& a : arrays) {
      if (std::find(dtypes.begin(), dtypes.end(), a.dtype()) == dtypes.end()) dtypes.push_back(a.dtype());
    }
    for (Dtype dtype : dtypes) {
      int64_t total = 0;
      for (const Array& a : arrays) total += a.dtype() == dtype ? a.size() : 0;
      Array buf = Array::empty({total}, dtype);
      const std::size_t isz = itemsize(dtype);
      auto* base = static_cast<char*>(buf.raw_data());
      if (topo_.rank == 0) {
        int64_t off = 0;
        for (const Array& a : arrays) {
          if (a.dtype() != dtype) continue;
          Array c = host_contiguous(a);
          if (c.nbytes() > 0) std::memcpy(base + off * isz, c.raw_data(), c.nbytes());
          off += a.size();
        }
      }
      bcast_raw(fg_.world.get(), base, total * static_cast<int64_t>(isz), 0);
      if (topo_.rank != 0) {
        int64_t off = 0;
        for (const Array& a : arrays) {
          if (a.dtype() != dtype) continue;
          a.assign(buf.slice(0, off, off + a.size()).reshape(a.shape()));
          off += a.size();
        }
      }
    }
  });
}

void CommunicatorImpl::multi_node_mean_grad(Link& link, bool zero_fill) {
  // The training thread waits for all of it: exposed communication.
  timeline::Span wait("multi_node_mean_grad", timeline::Category::wait);
  const auto params = link.namedparams(false);
  std::vector<Array> grads;       // what is averaged (host, contiguous)
  std::vector<Array> write_back;  // the gradient each staged copy goes back to (null: averaged in place)
  const bool check = checking_;
  std::string desc;  // for the fingerprint check only: a model's worth of formatting per step otherwise
  for (const auto& [path, p] : params) {
    Variable g = p.grad();
    if (g.is_null()) {
      if (!zero_fill) continue;
      p.set_grad(Variable(Array::zeros(p.shape(), p.dtype(), p.device())));
      g = p.grad();
    }
    const Array& a = g.array();
    RENSA_CHECK(is_floating(a.dtype()), DtypeError, "multi_node_mean_grad: gradient of ", path, " has dtype ",
                dtype_name(a.dtype()), "; only floating gradients can be averaged");
    if (check) desc += "gradient " + path + " " + describe_array(a) + "\n";
    if (a.device().is_host() && a.is_contiguous()) {
      grads.push_back(a);
      write_back.emplace_back();
    } else {
      grads.push_back(host_contiguous(a).copy());
      write_back.push_back(a);
    }
  }
  const WireLayout lay = layout(grads);
  const Fingerprint fp{static_cast<int64_t>(OpCode::mean_grad),
                       static_cast<int64_t>(options_.allreduce_grad_dtype),
                       lay.count,
                       -1,
                       static_cast<int64_t>(grads.size()),
                       &desc,
                       "multi_node_mean_grad",
                       "gradients"};
  run_op(fg_, OpCode::mean_grad, lay.nbytes, fp, check, [&] {
    timeline::Span span("allreduce", timeline::Category::comm, static_cast<int64_t>(fg_.seq));
    mean_grads(fg_, grads, lay);
  });
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!write_back[i].is_null()) write_back[i].assign(grads[i]);
  }
  after_first_step();
}

WireLayout CommunicatorImpl::layout(const std::vector<Array>& grads) const {
  return WireLayout(grads, options_.allreduce_grad_dtype, variant_.per_array);
}

void CommunicatorImpl::mean_grads(Channel& ch, const std::vector<Array>& grads, const WireLayout& layout) {
  const bool averages = variant_.info.communicates;
  const double scale = averages ? 1.0 / topo_.size : 1.0;
  ReduceContext context(topo_, ch, options_.shared_memory);
  for (const WireLayout::Pack& p : layout.packs) {
    if (averages && topo_.inter_size == 1 && mean_grads_in_segment(ch, grads, p, scale)) continue;
    const std::size_t isz = itemsize(p.wire);
    const int64_t need = p.count * static_cast<int64_t>(isz);
    if (ch.pack.is_null() || ch.pack.size() < need) ch.pack = Array::empty({need}, Dtype::uint8);
    auto* base = static_cast<char*>(ch.pack.raw_data());
    timeline::Span pack_span("pack", timeline::Category::copy);
    for (const auto& m : p.members) pack(grads[m.index], base + m.start * isz, p.wire, scale);
    pack_span.end();
    for (int64_t o = 0; o < p.count; o += kMaxCount) {
      variant_.reduce(context, base + o * isz, std::min(kMaxCount, p.count - o), p.wire);
    }
    timeline::Span unpack_span("unpack", timeline::Category::copy);
    for (const auto& m : p.members) unpack(base + m.start * isz, p.wire, grads[m.index]);
  }
}

bool CommunicatorImpl::shm_allreduce(Channel& ch, const void* in, void* out, int64_t n, Dtype dtype, ReduceOp op) {
  ShmAllreduce* shm = ch.host_reducer(options_.shared_memory, topo_.intra_size);
  if (!shm) return false;
  shm->allreduce(in, out, n, dtype, op);
  return true;
}

bool CommunicatorImpl::mean_grads_in_segment(Channel& ch, const std::vector<Array>& grads,
                                             const WireLayout::Pack& pack, double scale) {
  ShmAllreduce* shm = ch.host_reducer(options_.shared_memory, topo_.intra_size);
  if (!shm) return false;
  const auto& members = pack.members;
  // Calls fn(gradient, first element, count, position in the chunk) for each piece of [off, off + m).
  auto pieces = [&](int64_t off, int64_t m, auto&& fn) {
    auto j = static_cast<std::size_t>(
        std::upper_bound(members.begin(), members.end(), off, [](int64_t o, const auto& x) { return o < x.start; }) -
        members.begin() - 1);
    for (; j < members.size() && members[j].start < off + m; ++j) {
      const Array& g = grads[members[j].index];
      const int64_t start = members[j].start;
      const int64_t b = std::max(off, start), e = std::min(off + m, start + g.size());
      fn(g, b - start, e - b, b - off);
    }
  };
  const Dtype wire = pack.wire;
  const std::size_t isz = itemsize(wire);
  shm->allreduce(
      pack.count, wire, ReduceOp::sum,
      [&](int64_t off, int64_t m, void* slot) {
        pieces(off, m, [&](const Array& g, int64_t b, int64_t count, int64_t at) {
          pack_range(g, b, count, static_cast<char*>(slot) + static_cast<std::size_t>(at) * isz, wire, scale);
        });
      },
      [&](int64_t off, int64_t m, const void* src) {
        pieces(off, m, [&](const Array& g, int64_t b, int64_t count, int64_t at) {
          unpack_range(static_cast<const char*>(src) + static_cast<std::size_t>(at) * isz, wire, g, b, count);
        });
      });
  return true;
}

}  // namespace rensa::mn::detail
