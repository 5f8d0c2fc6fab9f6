// CommunicatorImpl's collectives on Arrays (allreduce, bcast, gather, allgather, scatter, alltoall,
// barrier) and its point-to-point send and recv: arrays travel after fixed header records.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "src/mn/communicator_helpers.h"
#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {
namespace {

// Array headers travel as fixed records: status, dtype, ndim, then up to kMaxDims extents.
constexpr int kMaxDims = 32;
constexpr int kHeader = 3 + kMaxDims;
enum HeaderStatus : int64_t { kOk = 0, kNull = 1, kTooManyDims = 2, kWrongCount = 3, kTooLarge = 4 };

void fill_header(int64_t* h, const Array& x) {
  std::fill(h, h + kHeader, 0);
  if (x.is_null()) {
    h[0] = kNull;
    return;
  }
  if (x.ndim() > kMaxDims) {
    h[0] = kTooManyDims;
    return;
  }
  h[1] = static_cast<int64_t>(x.dtype());
  h[2] = x.ndim();
  for (int64_t i = 0; i < x.ndim(); ++i) h[3 + i] = x.shape()[static_cast<std::size_t>(i)];
}
Dtype header_dtype(const int64_t* h) {
  return static_cast<Dtype>(h[1]);
}
Shape header_shape(const int64_t* h) {
  return Shape(std::vector<int64_t>(h + 3, h + 3 + h[2]));
}
int64_t header_bytes(const int64_t* h) {
  return header_shape(h).numel() * static_cast<int64_t>(itemsize(header_dtype(h)));
}
std::string status_text(int64_t status) {
  switch (status) {
    case kNull:
      return "a null array";
    case kTooManyDims:
      return "an array of more than 32 dimensions";
    default:
      return "an invalid array";
  }
}

// Every rank's header of its `x` (kHeader values per rank, in `headers`) and its byte count, for `op`
// (gather, allgather): ValueError when a rank passed no valid array, DtypeError when a rank's dtype
// differs from rank 0's. Collective over `comm`.
std::vector<int64_t> exchange_headers(const Array& x, const char* op, int size, MPI_Comm comm,
                                      std::vector<int64_t>& headers) {
  headers.assign(static_cast<std::size_t>(size) * kHeader, 0);
  int64_t mine[kHeader];
  fill_header(mine, x);
  RENSA_MPI_CHECK(MPI_Allgather(mine, kHeader, MPI_INT64_T, headers.data(), kHeader, MPI_INT64_T, comm));
  std::vector<int64_t> bytes(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const int64_t* h = &headers[static_cast<std::size_t>(r) * kHeader];
    RENSA_CHECK(h[0] == kOk, ValueError, op, ": rank ", r, " passed ", status_text(h[0]));
    RENSA_CHECK(h[1] == headers[1], DtypeError, op, ": rank 0 passes ", dtype_name(header_dtype(headers.data())),
                " but rank ", r, " passes ", dtype_name(header_dtype(h)));
    bytes[static_cast<std::size_t>(r)] = header_bytes(h);
  }
  return bytes;
}

// The ranks' arrays in `all` (their bytes back to back at `displs`), shaped by their headers and
// moved to `device`.
std::vector<Array> split_gathered(const Array& all, const std::vector<int64_t>& headers,
                                  const std::vector<int64_t>& bytes, const std::vector<int>& displs, Device device) {
  const int64_t isz = static_cast<int64_t>(all.itemsize());
  std::vector<Array> out;
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    const int64_t* h = &headers[r * kHeader];
    const int64_t begin = displs[r] / isz;
    out.push_back(to_device(all.slice(0, begin, begin + bytes[r] / isz).reshape(header_shape(h)), device));
  }
  return out;
}

void check_not_null(const char* op, const Array& x) {
  RENSA_CHECK(!x.is_null(), ValueError, op, ": null array");
}

}  // namespace

// ---- collectives on Arrays ---------------------------------------------------------------------------

Array CommunicatorImpl::allreduce(const Array& x, ReduceOp op) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::allreduce), x.is_null() ? -1 : static_cast<int64_t>(x.dtype()),
                       x.is_null() ? -1 : x.size(), -1, static_cast<int64_t>(op)};
  return run_op(fg_, OpCode::allreduce, x.is_null() ? 0 : x.nbytes(), fp, checking_, [&] {
    check_not_null("allreduce", x);
    RENSA_CHECK(op != ReduceOp::mean || is_floating(x.dtype()), DtypeError,
                "allreduce: mean needs a floating dtype, got ", dtype_name(x.dtype()), " (shape ", x.shape(), ")");
    const bool half = is_half(x.dtype());
    Array in = host_contiguous(x);
    if (op == ReduceOp::mean && half) {  // divide before the sum: half precision cannot overflow
      Array scaled = Array::empty(in.shape(), in.dtype(), in.device());
      pack(in, scaled.raw_data(), in.dtype(), 1.0 / topo_.size);
      in = scaled;
    }
    Array out = Array::empty(x.shape(), x.dtype(), host_device(x.device()));
    const MPI_Datatype type = mpi_type(x.dtype());
    const MPI_Op mop = mpi_op(x.dtype(), op);
    const auto* src = static_cast<const char*>(in.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    const int64_t n = x.size();
    if (n > 0 && !(topo_.inter_size == 1 && shm_allreduce(fg_, src, dst, n, x.dtype(), op))) {
      for (int64_t off = 0; off < n; off += kMaxCount) {
        const int count = static_cast<int>(std::min(kMaxCount, n - off));
        const std::size_t byte_off = static_cast<std::size_t>(off) * x.itemsize();
        RENSA_MPI_CHECK(MPI_Allreduce(src + byte_off, dst + byte_off, count, type, mop, fg_.world.get()));
      }
    }
    if (op == ReduceOp::mean && !half && n > 0) pack(out, out.raw_data(), out.dtype(), 1.0 / topo_.size);
    return to_device(out, x.device());
  });
}

Array CommunicatorImpl::bcast(const Array& x, int root) {
  const bool is_root = topo_.rank == root;
  Fingerprint fp{static_cast<int64_t>(OpCode::bcast), -1, -1, root, -1};
  if (is_root && !x.is_null()) {
    fp.dtype = static_cast<int64_t>(x.dtype());
    fp.count = x.size();
  }
  return run_op(fg_, OpCode::bcast, is_root && !x.is_null() ? x.nbytes() : 0, fp, checking_, [&] {
    check_root("bcast", root, topo_.size);
    int64_t h[kHeader];
    if (is_root) fill_header(h, x);
    RENSA_MPI_CHECK(MPI_Bcast(h, kHeader, MPI_INT64_T, root, fg_.world.get()));
    RENSA_CHECK(h[0] == kOk, ValueError, "bcast: the root (rank ", root, ") passed ", status_text(h[0]));
    const Device device = x.is_null() ? Device::cpu() : x.device();
    Array buf = is_root ? host_contiguous(x) : Array::empty(header_shape(h), header_dtype(h), host_device(device));
    bcast_raw(fg_.world.get(), buf.raw_data(), static_cast<int64_t>(buf.nbytes()), root);
    if (is_root && buf.shares_storage(x)) buf = x.copy();  // the result never aliases the input
    return to_device(buf, device);
  });
}

std::vector<Array> CommunicatorImpl::gather(const Array& x, int root) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::gather), x.is_null() ? -1 : static_cast<int64_t>(x.dtype()), -1,
                       root, -1};
  return run_op(fg_, OpCode::gather, x.is_null() ? 0 : x.nbytes(), fp, checking_, [&] {
    check_root("gather", root, topo_.size);
    std::vector<int64_t> headers;
    const std::vector<int64_t> bytes = exchange_headers(x, "gather", topo_.size, fg_.world.get(), headers);
    const std::vector<int> displs = displacements(bytes, "gather");
    const Dtype dtype = x.dtype();
    const int64_t total_bytes = displs.back() + bytes.back();
    Array in = host_contiguous(x);
    const bool is_root = topo_.rank == root;
    Array all =
        is_root ? Array::empty({total_bytes / static_cast<int64_t>(itemsize(dtype))}, dtype, host_device(x.device()))
                : Array();
    RENSA_MPI_CHECK(MPI_Gatherv(in.raw_data(), static_cast<int>(in.nbytes()), MPI_BYTE,
                                is_root ? all.raw_data() : nullptr, to_ints(bytes).data(), displs.data(), MPI_BYTE,
                                root, fg_.world.get()));
    if (!is_root) return std::vector<Array>();
    return split_gathered(all, headers, bytes, displs, x.device());
  });
}

std::vector<Array> CommunicatorImpl::allgather(const Array& x) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::allgather), x.is_null() ? -1 : static_cast<int64_t>(x.dtype()), -1,
                       -1, -1};
  return run_op(fg_, OpCode::allgather, x.is_null() ? 0 : x.nbytes(), fp, checking_, [&] {
    std::vector<int64_t> headers;
    const std::vector<int64_t> bytes = exchange_headers(x, "allgather", topo_.size, fg_.world.get(), headers);
    const std::vector<int> displs = displacements(bytes, "allgather");
    const Dtype dtype = x.dtype();
    const int64_t isz = static_cast<int64_t>(itemsize(dtype));
    const int64_t total_bytes = displs.back() + bytes.back();
    Array in = host_contiguous(x);
    Array all = Array::empty({total_bytes / isz}, dtype, host_device(x.device()));
    RENSA_MPI_CHECK(MPI_Allgatherv(in.raw_data(), static_cast<int>(in.nbytes()), MPI_BYTE, all.raw_data(),
                                   to_ints(bytes).data(), displs.data(), MPI_BYTE, fg_.world.get()));
    return split_gathered(all, headers, bytes, displs, x.device());
  });
}

Array CommunicatorImpl::scatter(const std::vector<Array>& xs, int root) {
  const bool is_root = topo_.rank == root;
  const Fingerprint fp{static_cast<int64_t>(OpCode::scatter), -1, -1, root,
                       is_root ? static_cast<int64_t>(xs.size()) : -1};
  std::size_t nbytes = 0;
  if (is_root) {
    for (const Array& a : xs) nbytes += a.is_null() ? 0 : a.nbytes();
  }
  return run_op(fg_, OpCode::scatter, nbytes, fp, checking_, [&] {
    check_root("scatter", root, topo_.size);
    // status, then one header per rank
    std::vector<int64_t> headers(1 + static_cast<std::size_t>(topo_.size) * kHeader, 0);
    if (is_root) {
      if (xs.size() != static_cast<std::size_t>(topo_.size)) {
        headers[0] = kWrongCount;
        headers[1] = static_cast<int64_t>(xs.size());
      } else {
        for (int r = 0; r < topo_.size; ++r) {
          int64_t* h = &headers[1 + static_cast<std::size_t>(r) * kHeader];
          fill_header(h, xs[static_cast<std::size_t>(r)]);
          if (h[0] != kOk && headers[0] == kOk) {
            headers[0] = h[0];
            headers[1] = r;
          }
        }
      }
    }
    RENSA_MPI_CHECK(MPI_Bcast(headers.data(), static_cast<int>(headers.size()), MPI_INT64_T, root, fg_.world.get()));
    RENSA_CHECK(headers[0] != kWrongCount, ValueError, "scatter: the root (rank ", root, ") passed ", headers[1],
                " arrays for ", topo_.size, " ranks");
    RENSA_CHECK(headers[0] == kOk, ValueError, "scatter: the root (rank ", root, ") passed ", status_text(headers[0]),
                " for rank ", headers[1]);
    std::vector<int64_t> bytes(static_cast<std::size_t>(topo_.size));
    for (int r = 0; r < topo_.size; ++r) bytes[static_cast<std::size_t>(r)] = header_bytes(&headers[1 + r * kHeader]);
    const std::vector<int> displs = displacements(bytes, "scatter");
    Array send;
    if (is_root) {
      send = Array::empty({displs.back() + bytes.back()}, Dtype::uint8);
      for (int r = 0; r < topo_.size; ++r) {
        Array part = host_contiguous(xs[static_cast<std::size_t>(r)]);
        if (part.nbytes() > 0) {
          std::memcpy(static_cast<char*>(send.raw_data()) + displs[r], part.raw_data(), part.nbytes());
        }
      }
    }
    const int64_t* h = &headers[1 + static_cast<std::size_t>(topo_.rank) * kHeader];
    const Device device = is_root ? xs[static_cast<std::size_t>(topo_.rank)].device() : Device::cpu();
    Array out = Array::empty(header_shape(h), header_dtype(h), host_device(device));
    RENSA_MPI_CHECK(MPI_Scatterv(is_root ? send.raw_data() : nullptr, to_ints(bytes).data(), displs.data(), MPI_BYTE,
                                 out.raw_data(), static_cast<int>(out.nbytes()), MPI_BYTE, root, fg_.world.get()));
    return to_device(out, device);
  });
}

std::vector<Array> CommunicatorImpl::alltoall(const std::vector<Array>& xs) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::alltoall), -1, -1, -1, static_cast<int64_t>(xs.size())};
  std::size_t nbytes = 0;
  for (const Array& a : xs) nbytes += a.is_null() ? 0 : a.nbytes();
  return run_op(fg_, OpCode::alltoall, nbytes, fp, checking_, [&] {
    // 1. every rank's own status, so a bad argument anywhere fails everywhere
    int64_t status[2] = {kOk, 0};
    if (xs.size() != static_cast<std::size_t>(topo_.size)) {
      status[0] = kWrongCount;
      status[1] = static_cast<int64_t>(xs.size());
    } else {
      for (std::size_t j = 0; j < xs.size(); ++j) {
        if (xs[j].is_null() || xs[j].ndim() > kMaxDims) {
          status[0] = xs[j].is_null() ? kNull : kTooManyDims;
          status[1] = static_cast<int64_t>(j);
          break;
        }
      }
    }
    std::vector<int64_t> statuses(static_cast<std::size_t>(topo_.size) * 2);
    RENSA_MPI_CHECK(MPI_Allgather(status, 2, MPI_INT64_T, statuses.data(), 2, MPI_INT64_T, fg_.world.get()));
    for (int r = 0; r < topo_.size; ++r) {
      const int64_t s = statuses[static_cast<std::size_t>(r) * 2], v = statuses[static_cast<std::size_t>(r) * 2 + 1];
      RENSA_CHECK(s != kWrongCount, ValueError, "alltoall: rank ", r, " passed ", v, " arrays for ", topo_.size, " ranks");
      RENSA_CHECK(s == kOk, ValueError, "alltoall: rank ", r, " passed ", status_text(s), " for rank ", v);
    }
    // 2. headers
    std::vector<int64_t> send_h(static_cast<std::size_t>(topo_.size) * kHeader), recv_h(send_h.size());
    for (int j = 0; j < topo_.size; ++j) fill_header(&send_h[static_cast<std::size_t>(j) * kHeader], xs[j]);
    RENSA_MPI_CHECK(
        MPI_Alltoall(send_h.data(), kHeader, MPI_INT64_T, recv_h.data(), kHeader, MPI_INT64_T, fg_.world.get()));
    std::vector<int64_t> send_bytes(static_cast<std::size_t>(topo_.size)), recv_bytes(send_bytes.size());
    int64_t send_total = 0, recv_total = 0;
    for (int j = 0; j < topo_.size; ++j) {
      send_bytes[static_cast<std::size_t>(j)] = static_cast<int64_t>(xs[static_cast<std::size_t>(j)].nbytes());
      recv_bytes[static_cast<std::size_t>(j)] = header_bytes(&recv_h[static_cast<std::size_t>(j) * kHeader]);
      send_total += send_bytes[static_cast<std::size_t>(j)];
      recv_total += recv_bytes[static_cast<std::size_t>(j)];
    }
    // 3. one rank's totals too large for MPI fail every rank
    int64_t too_large = std::max(send_total, recv_total) > INT_MAX ? 1 : 0, any_too_large = 0;
    RENSA_MPI_CHECK(MPI_Allreduce(&too_large, &any_too_large, 1, MPI_INT64_T, MPI_MAX, fg_.world.get()));
    RENSA_CHECK(!any_too_large, ValueError, "alltoall: a rank sends or receives more than ", INT_MAX,
                " bytes, more than one MPI call moves");
    const std::vector<int> sdispls = displacements(send_bytes, "alltoall");
    const std::vector<int> rdispls = displacements(recv_bytes, "alltoall");
    std::vector<char> send(static_cast<std::size_t>(send_total)), recv(static_cast<std::size_t>(recv_total));
    for (int j = 0; j < topo_.size; ++j) {
      Array part = host_contiguous(xs[static_cast<std::size_t>(j)]);
      if (part.nbytes() > 0) std::memcpy(send.data() + sdispls[j], part.raw_data(), part.nbytes());
    }
    RENSA_MPI_CHECK(MPI_Alltoallv(send.data(), to_ints(send_bytes).data(), sdispls.data(), MPI_BYTE, recv.data(),
                                  to_ints(recv_bytes).data(), rdispls.data(), MPI_BYTE, fg_.world.get()));
    std::vector<Array> out;
    const Device device = xs.empty() ? Device::cpu() : xs[0].device();
    for (int j = 0; j < topo_.size; ++j) {
      const int64_t* h = &recv_h[static_cast<std::size_t>(j) * kHeader];
      Array a = Array::empty(header_shape(h), header_dtype(h), host_device(device));
      if (a.nbytes() > 0) std::memcpy(a.raw_data(), recv.data() + rdispls[j], a.nbytes());
      out.push_back(to_device(a, device));
    }
    return out;
  });
}

void CommunicatorImpl::send(const Array& x, int dest, int tag, const std::string& context) {
  check_not_null("send", x);
  RENSA_CHECK(dest >= 0 && dest < topo_.size && dest != topo_.rank, ValueError, "send: destination ", dest,
              " must be another rank of a communicator of size ", topo_.size, " (this is rank ", topo_.rank, ")");
  int* tag_ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);  // predefined on the world communicator
  const int max_tag = flag && tag_ub ? *tag_ub : 32767;
  RENSA_CHECK(tag >= 0 && tag <= max_tag, ValueError, "send: tag ", tag, " is outside 0..", max_tag);
  RENSA_CHECK(x.ndim() <= kMaxDims, ValueError, "send: arrays of more than ", kMaxDims, " dimensions cannot be sent");
  const std::string what = context + "send #" + std::to_string(++p2p_seq_) + " to rank " + std::to_string(dest) + " (" + name() +
                           ", tag " + std::to_string(tag) + ", " + format_bytes(x.nbytes()) + ")";
  run_p2p(what, dest, [&] {
    int64_t h[kHeader];
    fill_header(h, x);
    RENSA_MPI_CHECK(MPI_Send(h, kHeader, MPI_INT64_T, dest, tag, fg_.world.get()));
    Array in = host_contiguous(x);
    const auto* p = static_cast<const char*>(in.raw_data());
    const int64_t bytes = static_cast<int64_t>(in.nbytes());
    for (int64_t off = 0; off < bytes; off += kMaxCount) {
      const int n = static_cast<int>(std::min(kMaxCount, bytes - off));
      RENSA_MPI_CHECK(MPI_Send(p + off, n, MPI_BYTE, dest, tag, fg_.world.get()));
    }
  });
}

Array CommunicatorImpl::recv(int source, int tag, const std::string& context) {
  RENSA_CHECK(source >= 0 && source < topo_.size && source != topo_.rank, ValueError, "recv: source ", source,
              " must be another rank of a communicator of size ", topo_.size, " (this is rank ", topo_.rank, ")");
  RENSA_CHECK(tag >= 0, ValueError, "recv: tag ", tag, " is negative");
  const std::string what = context + "recv #" + std::to_string(++p2p_seq_) + " from rank " + std::to_string(source) + " (" +
                           name() + ", tag " + std::to_string(tag) + ")";
  return run_p2p(what, source, [&] {
    int64_t h[kHeader];
    RENSA_MPI_CHECK(MPI_Recv(h, kHeader, MPI_INT64_T, source, tag, fg_.world.get(), MPI_STATUS_IGNORE));
    RENSA_CHECK(h[0] == kOk && h[1] >= 0 && h[1] < kNumDtypes && h[2] >= 0 && h[2] <= kMaxDims, CommunicationError,
                "recv: malformed array header from rank ", source);
    Array out = Array::empty(header_shape(h), header_dtype(h));
    auto* p = static_cast<char*>(out.raw_data());
    const int64_t bytes = static_cast<int64_t>(out.nbytes());
    for (int64_t off = 0; off < bytes; off += kMaxCount) {
      const int n = static_cast<int>(std::min(kMaxCount, bytes - off));
      RENSA_MPI_CHECK(MPI_Recv(p + off, n, MPI_BYTE, source, tag, fg_.world.get(), MPI_STATUS_IGNORE));
    }
    return out;
  });
}

void CommunicatorImpl::barrier() {
  const Fingerprint fp{static_cast<int64_t>(OpCode::barrier), -1, -1, -1, -1};
  run_op(fg_, OpCode::barrier, 0, fp, checking_, [&] { RENSA_MPI_CHECK(MPI_Barrier(fg_.world.get())); });
}

}  // namespace rensa::mn::detail
