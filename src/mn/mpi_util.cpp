#include "src/mn/mpi_util.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <type_traits>

#include "rensa/core/error.h"
#include "rensa/core/half.h"
#include "src/mn/half_convert.h"

namespace rensa::mn::detail {
namespace {

// The 16-bit floats have no MPI type: a committed 2-byte type each, and ops computing in float.
struct HalfTypes {
  MPI_Datatype half = MPI_DATATYPE_NULL, bfloat16 = MPI_DATATYPE_NULL;
  MPI_Op half_sum = MPI_OP_NULL, half_max = MPI_OP_NULL, half_min = MPI_OP_NULL;
  MPI_Op bf16_sum = MPI_OP_NULL, bf16_max = MPI_OP_NULL, bf16_min = MPI_OP_NULL;
};

template <class T, class Combine>
void reduce16(void* in, void* inout, int* len, Combine combine) {
  const T* operands[2] = {static_cast<const T*>(in), static_cast<const T*>(inout)};
  reduce_in_float(
      2, [&](int q) { return operands[q]; }, static_cast<T*>(inout), 0, static_cast<std::size_t>(*len), combine);
}
struct Add {
  float operator()(float a, float b) const { return a + b; }
};
struct Max {  // NaN propagates
  float operator()(float a, float b) const { return (a != a || a > b) ? a : b; }
};
struct Min {
  float operator()(float a, float b) const { return (a != a || a < b) ? a : b; }
};
template <class T, class Combine>
void reduce16_fn(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce16<T>(in, inout, len, Combine{});
}

const HalfTypes& half_types() {
  // Created once after MPI_Init and kept until the process ends (MPI frees them at finalize).
  static HalfTypes* types = [] {
    auto* t = new HalfTypes();
    RENSA_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &t->half));
    RENSA_MPI_CHECK(MPI_Type_commit(&t->half));
    RENSA_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &t->bfloat16));
    RENSA_MPI_CHECK(MPI_Type_commit(&t->bfloat16));
    RENSA_MPI_CHECK(MPI_Op_create(reduce16_fn<Half, Add>, 1, &t->half_sum));
    RENSA_MPI_CHECK(MPI_Op_create(reduce16_fn<Half, Max>, 1, &t->half_max));
    RENSA_MPI_CHECK(MPI_Op_create(reduce16_fn<Half, Min>, 1, &t->half_min));
    RENSA_MPI_CHECK(MPI_Op_create(reduce16_fn<BFloat16, Add>, 1, &t->bf16_sum));
    RENSA_MPI_CHECK(MPI_Op_create(reduce16_fn<BFloat16, Max>, 1, &t->bf16_max));
    RENSA_MPI_CHECK(MPI_Op_create(reduce16_fn<BFloat16, Min>, 1, &t->bf16_min));
    return t;
  }();
  return *types;
}

// The type arithmetic between a gradient of type G and its wire type W happens in.
template <class G, class W>
using pack_compute_t = std::conditional_t<std::is_same_v<G, double> || std::is_same_v<W, double>, double, float>;

}  // namespace

void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) [[likely]]
    return;
  char msg[MPI_MAX_ERROR_STRING + 1] = {};
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) std::snprintf(msg, sizeof(msg), "MPI error %d", rc);
  std::string name(call);
  name = name.substr(0, name.find('('));
  RENSA_THROW(CommunicationError, name, " failed (", file, ":", line, "): ", msg);
}

MPI_Datatype mpi_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32:
      return MPI_FLOAT;
    case Dtype::float64:
      return MPI_DOUBLE;
    case Dtype::float16:
      return half_types().half;
    case Dtype::bfloat16:
      return half_types().bfloat16;
    case Dtype::int32:
      return MPI_INT32_T;
    case Dtype::int64:
      return MPI_INT64_T;
    case Dtype::uint8:
      return MPI_UINT8_T;
    case Dtype::bool_:
      return MPI_C_BOOL;
    case Dtype::mixed16:
    case Dtype::mixed_bf16:
      break;
  }
  RENSA_THROW(DtypeError, "mpi_type: ", dtype_name(dtype), " is not an array dtype");
}

MPI_Op mpi_op(Dtype dtype, ReduceOp op) {
  if (dtype == Dtype::bool_) return op == ReduceOp::min ? MPI_LAND : MPI_LOR;
  if (is_half(dtype)) {
    const HalfTypes& t = half_types();
    const bool h = dtype == Dtype::float16;
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::mean:
        return h ? t.half_sum : t.bf16_sum;
      case ReduceOp::max:
        return h ? t.half_max : t.bf16_max;
      case ReduceOp::min:
        return h ? t.half_min : t.bf16_min;
    }
  }
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean:
      return MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
  }
  RENSA_THROW(ValueError, "mpi_op: invalid reduction code ", static_cast<int>(op));
}

void pack(const Array& src, void* dst, Dtype wire, double scale) {
  pack_range(src, 0, src.size(), dst, wire, scale);
}

void pack_range(const Array& src, int64_t begin, int64_t n, void* dst, Dtype wire, double scale) {
  dispatch_floating(src.dtype(), "pack", [&]<class G>() {
    const G* g = static_cast<const G*>(src.raw_data()) + begin;
    dispatch_floating(wire, "pack", [&]<class W>() {
      using C = pack_compute_t<G, W>;
      W* w = static_cast<W*>(dst);
      const C s = static_cast<C>(scale);
      if constexpr (std::is_same_v<G, float> && (std::is_same_v<W, Half> || std::is_same_v<W, BFloat16>)) {
        from_float(g, w, static_cast<std::size_t>(n), s);
      } else if (scale == 1.0) {
        for (int64_t i = 0; i < n; ++i) w[i] = W(static_cast<C>(g[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) w[i] = W(static_cast<C>(g[i]) * s);
      }
    });
  });
}

void unpack(const void* src_data, Dtype wire, const Array& dst) {
  unpack_range(src_data, wire, dst, 0, dst.size());
}

void unpack_range(const void* src_data, Dtype wire, const Array& dst, int64_t begin, int64_t n) {
  dispatch_floating(dst.dtype(), "unpack", [&]<class G>() {
    G* g = static_cast<G*>(dst.raw_data()) + begin;
    dispatch_floating(wire, "unpack", [&]<class W>() {
      using C = pack_compute_t<G, W>;
      const W* w = static_cast<const W*>(src_data);
      if constexpr (std::is_same_v<G, float> && (std::is_same_v<W, Half> || std::is_same_v<W, BFloat16>)) {
        to_float(w, g, static_cast<std::size_t>(n));
      } else {
        for (int64_t i = 0; i < n; ++i) g[i] = G(static_cast<C>(w[i]));
      }
    });
  });
}

std::string format_bytes(std::size_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1000)
    std::snprintf(buf, sizeof(buf), "%zu B", bytes);
  else if (b < 1e6)
    std::snprintf(buf, sizeof(buf), "%.1f kB", b / 1e3);
  else if (b < 1e9)
    std::snprintf(buf, sizeof(buf), "%.1f MB", b / 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%.1f GB", b / 1e9);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

void MpiComm::reset() {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace rensa::mn::detail
