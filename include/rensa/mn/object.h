#pragma once
/// \file
/// Collectives and point-to-point messages on plain C++ values (ChainerMN's bcast_obj, gather_obj,
/// allreduce_obj, send_obj, recv_obj): arithmetic types, std::string, and std::vector, std::pair and
/// std::map of those, nested freely. Values are serialized to bytes (all ranks must share one
/// architecture, as MPI jobs do) and travel through the communicator's *_bytes collectives, or its
/// send and recv.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

namespace detail {
template <class T>
struct ObjCodec;

/// True for the types the object collectives carry.
template <class T>
concept Serializable = requires {
  ObjCodec<T>::kSupported;
};

/// Appends the encoding of values to a byte string.
class ObjWriter {
 public:
  template <class T>
  void put(const T& v) {
    ObjCodec<T>::put(*this, v);
  }
  void put_raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// Reads values back; CommunicationError when the bytes end early or are left over.
class ObjReader {
 public:
  explicit ObjReader(const std::string& in) : in_(in) {}
  template <class T>
  T get() {
    return ObjCodec<T>::get(*this);
  }
  void get_raw(void* p, std::size_t n) {
    RENSA_CHECK(n <= in_.size() - pos_, CommunicationError, "object collective: the message ended early (", in_.size(),
                " bytes)");
    if (n > 0) std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }
  std::size_t remaining() const { return in_.size() - pos_; }
  void finish() const {
    RENSA_CHECK(pos_ == in_.size(), CommunicationError, "object collective: ", in_.size() - pos_,
                " bytes left over after the value");
  }

 private:
  const std::string& in_;
  std::size_t pos_ = 0;
};

template <class T>
requires std::is_arithmetic_v<T>
struct ObjCodec<T> {
  static constexpr bool kSupported = true;
  /// The name a message of send_obj carries, checked by recv_obj ("int32", "map<string, float64>").
  static std::string type_name() {
    const std::string bits = std::to_string(sizeof(T) * 8);
    if constexpr (std::is_same_v<T, bool>) return "bool";
    if constexpr (std::is_same_v<T, char>) return "char";
    if constexpr (std::is_floating_point_v<T>) return std::string("float").append(bits);
    return std::string(std::is_signed_v<T> ? "int" : "uint").append(bits);
  }
  static void put(ObjWriter& w, const T& v) { w.put_raw(&v, sizeof(T)); }
  static T get(ObjReader& r) {
    T v;
    r.get_raw(&v, sizeof(T));
    return v;
  }
};

template <>
struct ObjCodec<std::string> {
  static constexpr bool kSupported = true;
  static std::string type_name() { return "string"; }
  static void put(ObjWriter& w, const std::string& s) {
    w.put<uint64_t>(s.size());
    w.put_raw(s.data(), s.size());
  }
  static std::string get(ObjReader& r) {
    const auto n = r.get<uint64_t>();
    RENSA_CHECK(n <= r.remaining(), CommunicationError, "object collective: a string of ", n,
                " bytes runs past the message");
    std::string s(static_cast<std::size_t>(n), '\0');
    r.get_raw(s.data(), s.size());
    return s;
  }
};

template <Serializable T>
struct ObjCodec<std::vector<T>> {
  static constexpr bool kSupported = true;
  static std::string type_name() { return std::string("vector<").append(ObjCodec<T>::type_name()).append(">"); }
  static void put(ObjWriter& w, const std::vector<T>& v) {
    w.put<uint64_t>(v.size());
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      w.put_raw(v.data(), v.size() * sizeof(T));
    } else {
      for (const T& x : v) w.put(x);
    }
  }
  static std::vector<T> get(ObjReader& r) {
    const auto n = r.get<uint64_t>();
    RENSA_CHECK(n <= r.remaining(), CommunicationError, "object collective: a vector of ", n,
                " elements runs past the message");
    std::vector<T> v;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      v.resize(static_cast<std::size_t>(n));
      r.get_raw(v.data(), v.size() * sizeof(T));
    } else {
      v.reserve(static_cast<std::size_t>(n));
      for (uint64_t i = 0; i < n; ++i) v.push_back(r.get<T>());
    }
    return v;
  }
};

template <Serializable A, Serializable B>
struct ObjCodec<std::pair<A, B>> {
  static constexpr bool kSupported = true;
  static std::string type_name() {
    return std::string("pair<")
        .append(ObjCodec<A>::type_name())
        .append(", ")
        .append(ObjCodec<B>::type_name())
        .append(">");
  }
  static void put(ObjWriter& w, const std::pair<A, B>& p) {
    w.put(p.first);
    w.put(p.second);
  }
  static std::pair<A, B> get(ObjReader& r) {
    A a = r.get<A>();
    B b = r.get<B>();
    return {std::move(a), std::move(b)};
  }
};

template <Serializable K, Serializable V>
struct ObjCodec<std::map<K, V>> {
  static constexpr bool kSupported = true;
  static std::string type_name() {
    return std::string("map<")
        .append(ObjCodec<K>::type_name())
        .append(", ")
        .append(ObjCodec<V>::type_name())
        .append(">");
  }
  static void put(ObjWriter& w, const std::map<K, V>& m) {
    w.put<uint64_t>(m.size());
    for (const auto& [k, v] : m) {
      w.put(k);
      w.put(v);
    }
  }
  static std::map<K, V> get(ObjReader& r) {
    const auto n = r.get<uint64_t>();
    RENSA_CHECK(n <= r.remaining(), CommunicationError, "object collective: a map of ", n,
                " entries runs past the message");
    std::map<K, V> m;
    for (uint64_t i = 0; i < n; ++i) {
      K k = r.get<K>();
      V v = r.get<V>();
      m.emplace(std::move(k), std::move(v));
    }
    return m;
  }
};

template <Serializable T>
std::string encode_obj(const T& value) {
  ObjWriter w;
  w.put(value);
  return w.take();
}

template <Serializable T>
T decode_obj(const std::string& bytes) {
  ObjReader r(bytes);
  T v = r.get<T>();
  r.finish();
  return v;
}

template <class T>
T reduce_scalar(const std::vector<T>& values, ReduceOp op) {
  T acc = values[0];
  for (std::size_t i = 1; i < values.size(); ++i) {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::mean:
        acc = static_cast<T>(acc + values[i]);
        break;
      case ReduceOp::max:
        acc = std::max(acc, values[i]);
        break;
      case ReduceOp::min:
        acc = std::min(acc, values[i]);
        break;
    }
  }
  if (op == ReduceOp::mean) acc = static_cast<T>(acc / static_cast<T>(values.size()));
  return acc;
}

/// Sends `encoded` (a value of type `type`) to `dest` with `tag`, as one message.
void send_obj_bytes(Communicator& comm, const std::string& type, const std::string& encoded, int dest, int tag);
/// Receives what send_obj_bytes sent, checking that it carries a value of type `type`.
std::string recv_obj_bytes(Communicator& comm, const std::string& type, int source, int tag);
}  // namespace detail

/// Sends `value` to rank `dest` with `tag` (ChainerMN's send_obj), through Communicator::send: the
/// watchdog names both ranks and the tag when no recv comes. The message carries the type's name, so
/// recv_obj of another type is a CommunicationError instead of garbage. ValueError for a null
/// communicator, a `dest` that is not another rank, or a tag outside 0..MPI_TAG_UB.
template <detail::Serializable T>
void send_obj(Communicator comm, const T& value, int dest, int tag = 0) {
  detail::send_obj_bytes(comm, detail::ObjCodec<T>::type_name(), detail::encode_obj(value), dest, tag);
}

/// Receives the value rank `source` sent with send_obj and `tag` (ChainerMN's recv_obj). A value of
/// another type (`recv_obj<std::vector<int64_t>>` of a `std::vector<int32_t>`), or a message that
/// send_obj did not send (a plain Communicator::send), is a CommunicationError naming both ranks, the
/// tag and both types; the array of a
/// send_obj or Communicator::send is read whole either way, so nothing is left behind. ValueError for bad arguments as
/// send_obj.
template <detail::Serializable T>
T recv_obj(Communicator comm, int source, int tag = 0) {
  return detail::decode_obj<T>(detail::recv_obj_bytes(comm, detail::ObjCodec<T>::type_name(), source, tag));
}

/// `value` of `root` on every rank (other ranks' `value` is ignored). Collective.
template <detail::Serializable T>
T bcast_obj(Communicator comm, const T& value, int root = 0) {
  const bool is_root = comm.rank() == root;
  return detail::decode_obj<T>(comm.bcast_bytes(is_root ? detail::encode_obj(value) : std::string(), root));
}

/// On `root`: every rank's `value` in rank order; on other ranks: empty. Collective.
template <detail::Serializable T>
std::vector<T> gather_obj(Communicator comm, const T& value, int root = 0) {
  std::vector<T> out;
  for (const std::string& b : comm.gather_bytes(detail::encode_obj(value), root))
    out.push_back(detail::decode_obj<T>(b));
  return out;
}

/// Every rank's `value` in rank order, on every rank. Collective.
template <detail::Serializable T>
std::vector<T> allgather_obj(Communicator comm, const T& value) {
  std::vector<T> out;
  for (const std::string& b : comm.allgather_bytes(detail::encode_obj(value))) out.push_back(detail::decode_obj<T>(b));
  return out;
}

/// The reduction of every rank's `value`, the same on every rank (computed in rank order from the
/// gathered values, so it is bitwise identical everywhere). T is an arithmetic type (mean needs a
/// floating one), a std::vector of one (elementwise; every rank must pass the same length, ValueError
/// on every rank otherwise), or a std::map from keys to one: the union of the keys, each reduced over
/// the ranks that have it (mean divides by their number), as per-rank metrics need. Collective.
template <class T>
T allreduce_obj(Communicator comm, const T& value, ReduceOp op = ReduceOp::sum);

namespace detail {
template <class T>
inline constexpr bool kIsVector = false;
template <class T>
inline constexpr bool kIsVector<std::vector<T>> = true;
template <class T>
inline constexpr bool kIsMap = false;
template <class K, class V>
inline constexpr bool kIsMap<std::map<K, V>> = true;
}  // namespace detail

template <class T>
T allreduce_obj(Communicator comm, const T& value, ReduceOp op) {
  if constexpr (std::is_arithmetic_v<T>) {
    static_assert(!std::is_same_v<T, bool>, "allreduce_obj: bool has no sum; use int");
    RENSA_CHECK(op != ReduceOp::mean || std::is_floating_point_v<T>, DtypeError,
                "allreduce_obj: mean needs a floating type");
    return detail::reduce_scalar(allgather_obj(comm, value), op);
  } else if constexpr (detail::kIsVector<T>) {
    using E = typename T::value_type;
    static_assert(std::is_arithmetic_v<E> && !std::is_same_v<E, bool>,
                  "allreduce_obj: vectors of arithmetic types only");
    RENSA_CHECK(op != ReduceOp::mean || std::is_floating_point_v<E>, DtypeError,
                "allreduce_obj: mean needs a floating type");
    const std::vector<T> all = allgather_obj(comm, value);
    for (std::size_t r = 1; r < all.size(); ++r) {
      RENSA_CHECK(all[r].size() == all[0].size(), ValueError, "allreduce_obj: rank 0 passes ", all[0].size(),
                  " elements but rank ", r, " passes ", all[r].size());
    }
    T out(all[0].size());
    std::vector<E> column(all.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      for (std::size_t r = 0; r < all.size(); ++r) column[r] = all[r][i];
      out[i] = detail::reduce_scalar(column, op);
    }
    return out;
  } else if constexpr (detail::kIsMap<T>) {
    using V = typename T::mapped_type;
    static_assert(std::is_arithmetic_v<V> && !std::is_same_v<V, bool>, "allreduce_obj: maps to arithmetic types only");
    RENSA_CHECK(op != ReduceOp::mean || std::is_floating_point_v<V>, DtypeError,
                "allreduce_obj: mean needs a floating type");
    const std::vector<T> all = allgather_obj(comm, value);
    std::map<typename T::key_type, std::vector<V>> columns;
    for (const T& m : all) {
      for (const auto& [k, v] : m) columns[k].push_back(v);
    }
    T out;
    for (const auto& [k, col] : columns) out.emplace(k, detail::reduce_scalar(col, op));
    return out;
  } else {
    static_assert(sizeof(T) == 0, "allreduce_obj: arithmetic types, vectors and maps of them only");
  }
}

}  // namespace rensa::mn
