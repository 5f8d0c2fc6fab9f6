# Smoke test of examples/your_own_model (docs/your_own_model.md): one short epoch in one process and
# with two ranks, and every C++ block of the guide found verbatim in the example, so the two cannot
# drift apart. Run by CTest with -DMPI_COMMAND="<mpiexec ... your_own_model>" -DPROGRAM=<the program>
# -DGUIDE=<docs/your_own_model.md> -DSOURCE=<examples/your_own_model.cpp> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")

smoke_run(TRUE "${PROGRAM}" --epoch 1 --limit 2000 --out one)
smoke_expect_outputs(one log snapshot_iter_20)
smoke_run(TRUE ${cmd} --epoch 1 --limit 2000 --communicator flat --out two)
smoke_expect_outputs(two log snapshot_mn_iter_10_rank_0_of_2.npz snapshot_mn_iter_10_rank_1_of_2.npz)

file(READ "${GUIDE}" guide)
file(READ "${SOURCE}" source)
string(REGEX MATCHALL "```cpp\n[^`]*```" blocks "${guide}")
list(LENGTH blocks n)
if(n LESS 4)
  message(FATAL_ERROR "${GUIDE}: expected the guide's C++ blocks, found ${n}")
endif()
foreach(block IN LISTS blocks)
  string(REGEX REPLACE "^```cpp\n" "" code "${block}")
  string(REGEX REPLACE "```$" "" code "${code}")
  string(FIND "${source}" "${code}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${GUIDE} shows code that ${SOURCE} does not hold:\n${code}")
  endif()
endforeach()
