// send_obj and recv_obj: a value travels as one uint8 array through Communicator's point-to-point
// path (watchdog, both ranks and the tag in errors), behind a magic number and its type's name, so
// that a receiver of another type, or of a plain Communicator::send, fails instead of misreading.
#include "rensa/mn/object.h"

#include <cstring>
#include <string>

#include "src/mn/communicator_impl.h"

namespace rensa::mn::detail {
namespace {

constexpr uint64_t kObjectMagic = 0x524e534f424a0001;  // "RNSOBJ", version 1

void check_peer(const char* op, const Communicator& comm, const char* role, int peer, int tag) {
  RENSA_CHECK(comm.valid(), ValueError, op, ": null communicator (default-constructed)");
  RENSA_CHECK(peer >= 0 && peer < comm.size() && peer != comm.rank(), ValueError, op, ": ", role, " ", peer,
              " must be another rank of a communicator of size ", comm.size(), " (this is rank ", comm.rank(), ")");
  RENSA_CHECK(tag >= 0, ValueError, op, ": tag ", tag, " is negative");
}

}  // namespace

void send_obj_bytes(Communicator& comm, const std::string& type, const std::string& encoded, int dest, int tag) {
  check_peer("send_obj", comm, "destination", dest, tag);
  ObjWriter w;
  w.put(kObjectMagic);
  w.put(type);
  w.put_raw(encoded.data(), encoded.size());
  const std::string bytes = w.take();
  Array message = Array::empty({static_cast<int64_t>(bytes.size())}, Dtype::uint8);
  if (!bytes.empty()) std::memcpy(message.raw_data(), bytes.data(), bytes.size());
  comm.impl().send(message, dest, tag, "send_obj: ");
}

std::string recv_obj_bytes(Communicator& comm, const std::string& type, int source, int tag) {
  check_peer("recv_obj", comm, "source", source, tag);
  const Array message = comm.impl().recv(source, tag, "recv_obj: ");
  const int me = comm.rank();
  const bool bytes = message.dtype() == Dtype::uint8 && message.ndim() == 1;
  std::string in;
  if (bytes) in.assign(static_cast<const char*>(message.raw_data()), static_cast<std::size_t>(message.nbytes()));
  uint64_t magic = 0;
  if (in.size() >= sizeof(magic)) std::memcpy(&magic, in.data(), sizeof(magic));
  RENSA_CHECK(bytes && magic == kObjectMagic, CommunicationError, "recv_obj: rank ", me, " expected a ", type,
              " from send_obj of rank ", source, " with tag ", tag, " but got a ", dtype_name(message.dtype()), " ",
              message.shape(), " array that send_obj did not send (a plain Communicator::send?)");
  ObjReader r(in);
  r.get<uint64_t>();
  const std::string sent = r.get<std::string>();
  RENSA_CHECK(sent == type, CommunicationError, "recv_obj: rank ", me, " receives a ", type, " from rank ", source,
              " with tag ", tag, " but rank ", source, " sent a ", sent);
  return in.substr(in.size() - r.remaining());
}

}  // namespace rensa::mn::detail
