# Smoke test of examples/train_mnist: one short epoch on Fashion-MNIST, its outputs, a resume, and
# a clear error for a bad flag value. Run by CTest with -DTRAIN_MNIST=<exe> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

smoke_run(TRUE "${TRAIN_MNIST}" --epoch 1 --batchsize 1000 --unit 50 --out result)
smoke_expect_outputs(result loss.png accuracy.png snapshot_iter_60)

smoke_run(TRUE "${TRAIN_MNIST}" --epoch 2 --batchsize 1000 --unit 50 --out result --resume result/snapshot_iter_60)
smoke_expect_file(result/snapshot_iter_120 "the resumed run did not reach iteration 120")

smoke_run(FALSE "${TRAIN_MNIST}" --epoch abc)
if(NOT smoke_output MATCHES "epoch")
  message(FATAL_ERROR "a bad --epoch value must fail with a message naming the flag, got: ${smoke_output}")
endif()
