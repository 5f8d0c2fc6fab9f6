# Smoke test of examples/train_cnn with two ranks: a ResNet epoch on the first examples of
# Fashion-MNIST with multi-node batch normalization and population statistics, rank 0's log and every
# rank's snapshot, a resume from the newest snapshot both ranks have, and the error for --mnbn with the
# cnn. Run by CTest with -DMPI_COMMAND="<mpiexec ... train_cnn>" (space-separated) -DWORK_DIR=<dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")

function(run_mpi expect_ok)
  execute_process(COMMAND ${cmd} ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 280)
  message("${out}${err}")
  set(run_output "${out}${err}" PARENT_SCOPE)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "train_cnn under MPI failed (${rc}): ${ARGN}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "train_cnn under MPI should have failed: ${ARGN}")
  endif()
endfunction()

# 128 examples on 2 ranks in batches of 32: 2 iterations per epoch.
set(common --arch resnet --communicator flat --mnbn --bn-population --limit 128 --batchsize 32 --out result)
run_mpi(TRUE ${common} --epoch 1)
foreach(f log snapshot_mn_iter_2_rank_0_of_2.npz snapshot_mn_iter_2_rank_1_of_2.npz)
  if(NOT EXISTS "${WORK_DIR}/result/${f}")
    message(FATAL_ERROR "train_cnn with 2 ranks did not write result/${f}")
  endif()
endforeach()
file(READ "${WORK_DIR}/result/log" log)
if(NOT log MATCHES "validation/main/accuracy")
  message(FATAL_ERROR "result/log lacks validation/main/accuracy:\n${log}")
endif()

run_mpi(TRUE ${common} --epoch 2 --resume result)
if(NOT EXISTS "${WORK_DIR}/result/snapshot_mn_iter_4_rank_1_of_2.npz")
  message(FATAL_ERROR "the resumed run with 2 ranks did not reach iteration 4")
endif()

run_mpi(FALSE --arch cnn --communicator flat --mnbn --limit 64 --epoch 1 --out bad)
if(NOT run_output MATCHES "--mnbn needs --arch resnet")
  message(FATAL_ERROR "--mnbn with the cnn must fail naming the flag, got: ${run_output}")
endif()
