// The Serializer helpers for scalars and strings, and the in-memory dictionary (de)serializers
// behind save_npz / load_npz.

#include "rensa/serializers/serializer.h"

#include <bit>
#include <cstring>

#include "rensa/serializers/npz.h"

namespace rensa::serializers {
namespace {

std::string_view strip_leading(std::string_view s) {
  while (!s.empty() && s.front() == '/') s.remove_prefix(1);
  return s;
}

std::string_view strip_both(std::string_view s) {
  s = strip_leading(s);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

// Saves `value` as a 0-d array of `dtype`, or loads into it: the 0-d target makes the deserializer
// check the shape and convert the dtype; a missing key in non-strict mode leaves `value` as it is.
template <class T>
void scalar_impl(Serializer& s, std::string_view key, T& value, Dtype dtype) {
  Array a = Array::zeros(Shape{}, dtype);
  *a.data<T>() = value;
  s.array(key, a);
  if (s.is_loading()) value = *a.data<T>();
}

}  // namespace

// ---- Serializer helpers ------------------------------------------------------------------------

void Serializer::scalar(std::string_view key, double& value) {
  scalar_impl(*this, key, value, Dtype::float64);
}
void Serializer::scalar(std::string_view key, int64_t& value) {
  scalar_impl(*this, key, value, Dtype::int64);
}
void Serializer::scalar(std::string_view key, bool& value) {
  scalar_impl(*this, key, value, Dtype::bool_);
}

void Serializer::scalar(std::string_view key, uint64_t& value) {
  // NumPy files hold it as int64 with the same bits (values above 2^63 - 1 read as negative there).
  auto bits = std::bit_cast<int64_t>(value);
  scalar_impl(*this, key, bits, Dtype::int64);
  value = std::bit_cast<uint64_t>(bits);
}

void Serializer::string(std::string_view key, std::string& value) {
  if (!is_loading()) {
    Array a = Array::empty(Shape{static_cast<int64_t>(value.size())}, Dtype::uint8);
    if (!value.empty()) std::memcpy(a.raw_data(), value.data(), value.size());
    array(key, a);
    return;
  }
  Array a;
  array(key, a);  // adopts the stored array; stays null when a non-strict load misses the key
  if (a.is_null()) return;
  RENSA_CHECK(a.ndim() == 1 && a.dtype() == Dtype::uint8, IOError, "Serializer::string: '", path(), strip_leading(key),
              "' holds an array of shape ", a.shape(), " and dtype ", a.dtype(), ", not a 1-d uint8 array");
  const Array c = a.to(Device::cpu()).contiguous();
  value.assign(static_cast<const char*>(c.raw_data()), static_cast<std::size_t>(c.size()));
}

// ---- DictionarySerializer ----------------------------------------------------------------------

DictionarySerializer::DictionarySerializer()
    : DictionarySerializer(std::make_shared<std::map<std::string, Array>>(), std::string()) {}

DictionarySerializer::DictionarySerializer(std::shared_ptr<std::map<std::string, Array>> target, std::string path)
    : target_(std::move(target)), path_(std::move(path)) {}

Serializer& DictionarySerializer::child(std::string_view name) {
  const std::string_view n = strip_both(name);
  auto it = children_.find(n);
  if (it == children_.end()) {
    std::unique_ptr<DictionarySerializer> c(new DictionarySerializer(target_, path_ + std::string(n) + "/"));
    it = children_.emplace(std::string(n), std::move(c)).first;
  }
  return *it->second;
}

void DictionarySerializer::array(std::string_view key, Array& value) {
  // A null array (a parameter not initialized yet) has nothing to save.
  if (value.is_null()) return;
  (*target_)[path_ + std::string(strip_leading(key))] = value;
}

// ---- DictionaryDeserializer --------------------------------------------------------------------

DictionaryDeserializer::DictionaryDeserializer(std::map<std::string, Array> values, const std::string& file, bool strict,
                                               const std::string& op)
    : DictionaryDeserializer(std::make_shared<const std::map<std::string, Array>>(std::move(values)),
                             std::make_shared<const std::string>(op + ": '" + file + "'"), std::string(), strict) {}

DictionaryDeserializer::DictionaryDeserializer(std::shared_ptr<const std::map<std::string, Array>> values,
                                               std::shared_ptr<const std::string> file, std::string path, bool strict)
    : values_(std::move(values)), file_(std::move(file)), path_(std::move(path)), strict_(strict) {}

Serializer& DictionaryDeserializer::child(std::string_view name) {
  const std::string_view n = strip_both(name);
  auto it = children_.find(n);
  if (it == children_.end()) {
    std::unique_ptr<DictionaryDeserializer> c(
        new DictionaryDeserializer(values_, file_, path_ + std::string(n) + "/", strict_));
    it = children_.emplace(std::string(n), std::move(c)).first;
  }
  return *it->second;
}

bool DictionaryDeserializer::contains(std::string_view key) const {
  return values_->count(path_ + std::string(strip_leading(key))) > 0;
}

void DictionaryDeserializer::array(std::string_view key, Array& value) {
  const std::string full = path_ + std::string(strip_leading(key));
  const auto it = values_->find(full);
  if (it == values_->end()) {
    RENSA_CHECK(!strict_, IOError, *file_, ": key '", full, "' not found");
    return;
  }
  const Array& stored = it->second;
  if (stored.is_null()) return;  // stored as None (an uninitialized parameter): the target stays as it is
  if (value.is_null()) {
    value = stored;
    return;
  }
  RENSA_CHECK(stored.shape() == value.shape(), IOError, *file_, ": key '", full, "' has shape ",
              stored.shape(), " in the file but the target has shape ", value.shape());
  // Copy into the target's memory (converting the dtype), so views of it and parameters alias on.
  value.assign(stored.device() == value.device() ? stored : stored.to(value.device()));
}

}  // namespace rensa::serializers
