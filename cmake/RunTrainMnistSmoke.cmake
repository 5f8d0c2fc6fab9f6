# Smoke test of examples/train_mnist: one short epoch on Fashion-MNIST, its outputs, a resume, and
# a clear error for a bad flag value. Run by CTest with -DTRAIN_MNIST=<exe> -DWORK_DIR=<dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_checked)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "train_mnist failed (${rc}): ${ARGN}")
  endif()
endfunction()

run_checked("${TRAIN_MNIST}" --epoch 1 --batchsize 1000 --unit 50 --out result)
foreach(f log loss.png accuracy.png snapshot_iter_60)
  if(NOT EXISTS "${WORK_DIR}/result/${f}")
    message(FATAL_ERROR "train_mnist did not write result/${f}")
  endif()
endforeach()
file(READ "${WORK_DIR}/result/log" log)
if(NOT log MATCHES "validation/main/accuracy")
  message(FATAL_ERROR "result/log lacks validation/main/accuracy:\n${log}")
endif()

run_checked("${TRAIN_MNIST}" --epoch 2 --batchsize 1000 --unit 50 --out result --resume result/snapshot_iter_60)
if(NOT EXISTS "${WORK_DIR}/result/snapshot_iter_120")
  message(FATAL_ERROR "the resumed run did not reach iteration 120")
endif()

execute_process(COMMAND "${TRAIN_MNIST}" --epoch abc WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "epoch")
  message(FATAL_ERROR "a bad --epoch value must fail with a message naming the flag, got (${rc}): ${out}${err}")
endif()
