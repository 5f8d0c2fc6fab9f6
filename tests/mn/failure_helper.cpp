// An MPI program that fails on purpose, started under mpiexec by test_failure:
//   mn_failure_helper <scenario> [timeout_ms]
// The last rank misbehaves (scenario) while the others keep calling allreduce, which would block
// forever without rensa's failure handling. Scenarios: ok, throw, mismatch, sigkill, sigstop, segv,
// exit (the last rank leaves main with an error code while the others wait in a collective),
// background (the last rank stops while the others wait in a start_mean_grad request), recv (rank 0
// waits for a message from the last rank, which stops), unreceived (rank 0 sends the last rank a
// message it never receives; every rank then exits normally), mn_send (rank 0 backpropagates through
// mn::functions::send, whose receiver never runs backward), mn_shape (the gradient returned to rank 0's
// mn::functions::send has the wrong shape), recv_obj (rank 0 waits in recv_obj for the last rank, which
// never sends), split (the last rank calls allreduce where the others split), sub_stop (every rank
// splits into a communicator numbered in reverse; the last rank stops while the others wait in its
// allreduce), inside (the last rank stops inside an allreduce it entered first), background_inside
// (the same inside a start_mean_grad request's background allreduce). Without timeout_ms, the communicator's default
// (RENSA_MN_TIMEOUT) holds.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "rensa/mn/communicator.h"
#include "rensa/mn/functions.h"
#include "rensa/mn/object.h"

namespace mn = rensa::mn;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: mn_failure_helper <scenario> [timeout_ms]\n";
    return 2;
  }
  const std::string scenario = argv[1];
  mn::CommunicatorOptions options;
  options.check_collectives = 1;
  if (argc > 2) options.timeout = std::chrono::milliseconds(std::atol(argv[2]));
  auto comm = mn::create_communicator("flat", argc, argv, options);
  const bool culprit = comm.rank() == comm.size() - 1;
  rensa::Array x = rensa::Array::ones({1000});

  // A few healthy steps first, so the job is fully up.
  for (int i = 0; i < 3; ++i) comm.allreduce(x);
  if (comm.rank() == 0) std::cout << "helper: " << scenario << " running on " << comm.size() << " ranks" << std::endl;
  comm.barrier();

  if (scenario == "ok") return 0;
  const int last = comm.size() - 1;
  if (scenario == "unreceived") {
    if (comm.rank() == 0) comm.send(rensa::Array::ones({3}), last, 7);
    return 0;
  }
  if (scenario == "mn_send" || scenario == "mn_shape") {
    if (comm.rank() == 0) {
      rensa::Variable x(rensa::Array::ones({2, 3}), true);
      mn::functions::send(x, comm, last, 4).backward();
    } else if (comm.rank() == last && scenario == "mn_shape") {
      rensa::Array manifest = comm.recv(0, 4).copy();
      comm.recv(0, 4);
      manifest.data<int64_t>()[0] += 1;  // mn::functions' gradient kind
      comm.send(manifest, 0, 4);
      comm.send(rensa::Array::ones({3}), 0, 4);
    } else {
      if (comm.rank() == last) mn::functions::recv(comm, 0, {}, 4);  // and no backward through it
      std::this_thread::sleep_for(std::chrono::seconds(20));  // rank 0's watchdog ends the job first
    }
  }
  if (scenario == "recv_obj") {
    if (comm.rank() == 0) mn::recv_obj<std::string>(comm, last, 8);
    std::this_thread::sleep_for(std::chrono::seconds(20));  // rank 0's watchdog ends the job first
  }
  if (scenario == "split") {
    if (culprit) comm.allreduce(x);
    comm.split(0, comm.rank());
  }
  if (scenario == "sub_stop") {
    mn::Communicator sub = comm.split(0, last - comm.rank());
    if (culprit) raise(SIGSTOP);
    for (;;) sub.allreduce(x);
  }
  if (scenario == "inside" || scenario == "background_inside") {
    // The last rank enters the operation first and stops while it waits inside for the others, who
    // arrive later: every rank has entered it, so only the stopped process's silence can name it.
    std::thread stopper;
    if (culprit) {
      stopper = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raise(SIGSTOP);
      });
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    }
    rensa::Array g = rensa::Array::ones({1 << 16});
    if (scenario == "inside") {
      comm.allreduce(x);
    } else {
      comm.start_mean_grad({g}).wait();
    }
    stopper.join();
    return 0;
  }
  if (culprit) {
    if (scenario == "throw") throw std::runtime_error("boom on purpose");
    if (scenario == "mismatch") {
      comm.allreduce(rensa::Array::ones({7}));  // the others reduce 1000 elements
    } else if (scenario == "sigkill") {
      raise(SIGKILL);
    } else if (scenario == "sigstop" || scenario == "background" || scenario == "recv") {
      raise(SIGSTOP);
    } else if (scenario == "segv") {
      // A real fault, on a page that cannot be written: not a null store, which the undefined
      // behaviour sanitizer would report and abort on before any signal is raised.
      void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (page == MAP_FAILED) return 4;
      *static_cast<volatile int*>(page) = 1;
    } else if (scenario == "exit") {
      std::cerr << "helper: rank " << comm.rank() << " leaves with exit code 3" << std::endl;
      return 3;  // MPI_Finalize at exit would wait for the others forever
    }
  }
  if (scenario == "recv" && comm.rank() == 0) comm.recv(comm.size() - 1, 7);
  if (scenario == "background") {
    rensa::Array g = rensa::Array::ones({1 << 16});
    comm.start_mean_grad({g}).wait();
  }
  // The others wait here; rensa (or Open MPI) must end the job.
  for (;;) comm.allreduce(x);
}
