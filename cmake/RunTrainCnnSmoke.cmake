# Smoke test of examples/train_cnn: a few iterations of each architecture on the first examples of
# Fashion-MNIST, their outputs, a resume, and a clear error for a bad flag value. Run by CTest with
# -DTRAIN_CNN=<exe> -DWORK_DIR=<dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_checked)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "train_cnn failed (${rc}): ${ARGN}")
  endif()
endfunction()

function(check_outputs dir snapshot)
  foreach(f log loss.png accuracy.png ${snapshot})
    if(NOT EXISTS "${WORK_DIR}/${dir}/${f}")
      message(FATAL_ERROR "train_cnn did not write ${dir}/${f}")
    endif()
  endforeach()
  file(READ "${WORK_DIR}/${dir}/log" log)
  if(NOT log MATCHES "validation/main/accuracy")
    message(FATAL_ERROR "${dir}/log lacks validation/main/accuracy:\n${log}")
  endif()
endfunction()

# 256 examples in batches of 64: 4 iterations per epoch.
run_checked("${TRAIN_CNN}" --arch cnn --epoch 1 --limit 256 --batchsize 64 --out cnn)
check_outputs(cnn snapshot_iter_4)
run_checked("${TRAIN_CNN}" --arch cnn --epoch 2 --limit 256 --batchsize 64 --out cnn --resume cnn/snapshot_iter_4)
if(NOT EXISTS "${WORK_DIR}/cnn/snapshot_iter_8")
  message(FATAL_ERROR "the resumed run did not reach iteration 8")
endif()

run_checked("${TRAIN_CNN}" --arch resnet --epoch 1 --limit 128 --batchsize 32 --out resnet --bn-population)
check_outputs(resnet snapshot_iter_4)

execute_process(COMMAND "${TRAIN_CNN}" --arch vgg WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "arch")
  message(FATAL_ERROR "a bad --arch value must fail with a message naming the flag, got (${rc}): ${out}${err}")
endif()
