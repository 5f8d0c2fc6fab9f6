// The explicit backend registry: each backend is constructed and fills its kernel table on first use.
#include <memory>

#include "rensa/core/backend.h"

namespace rensa {
namespace backends {
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_reference_backend();
}  // namespace backends

namespace {
struct Registry {
  std::unique_ptr<Backend> cpu = backends::make_cpu_backend();
  std::unique_ptr<Backend> reference = backends::make_reference_backend();
};
const Registry& registry() {
  static const Registry r;
  return r;
}
}  // namespace

// Names from the op lists: a switch per list, so a value outside the enum gets "?".
#define RENSA_X(name) \
  case Op::name:      \
    return #name;
std::string_view op_name(UnaryOp op) {
  using Op = UnaryOp;
  switch (op) { RENSA_UNARY_OPS(RENSA_X) }
  return "?";
}
std::string_view op_name(BinaryOp op) {
  using Op = BinaryOp;
  switch (op) { RENSA_BINARY_OPS(RENSA_X) }
  return "?";
}
std::string_view op_name(ReduceOp op) {
  using Op = ReduceOp;
  switch (op) { RENSA_REDUCE_OPS(RENSA_X) }
  return "?";
}
#undef RENSA_X

Backend& get_backend(Device device) {
  switch (device.type) {
    case DeviceType::cpu: return *registry().cpu;
    case DeviceType::reference: return *registry().reference;
    case DeviceType::cuda: break;
  }
  RENSA_THROW(DeviceError, "get_backend: no backend for device ", device, " (this build has cpu and reference)");
}

}  // namespace rensa
