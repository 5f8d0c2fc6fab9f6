# Smoke test of examples/train_mnist with two ranks: one short epoch with --communicator flat, rank 0's
# log and every rank's snapshot, then a resume from the newest snapshot both ranks have. Run by CTest
# with -DMPI_COMMAND="<mpiexec ... train_mnist>" (space-separated) -DWORK_DIR=<dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")

function(run_checked)
  execute_process(COMMAND ${cmd} ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 280)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "train_mnist under MPI failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(common --communicator flat --batchsize 1000 --unit 50 --out result)
run_checked(${common} --epoch 1)
# 60000 examples on 2 ranks in batches of 1000: 30 iterations per epoch.
foreach(f log snapshot_mn_iter_30_rank_0_of_2.npz snapshot_mn_iter_30_rank_1_of_2.npz)
  if(NOT EXISTS "${WORK_DIR}/result/${f}")
    message(FATAL_ERROR "train_mnist with 2 ranks did not write result/${f}")
  endif()
endforeach()
file(READ "${WORK_DIR}/result/log" log)
if(NOT log MATCHES "validation/main/accuracy")
  message(FATAL_ERROR "result/log lacks validation/main/accuracy:\n${log}")
endif()

run_checked(${common} --epoch 2 --resume result)
if(NOT EXISTS "${WORK_DIR}/result/snapshot_mn_iter_60_rank_1_of_2.npz")
  message(FATAL_ERROR "the resumed run with 2 ranks did not reach iteration 60")
endif()
