# Smoke test of examples/train_cnn: a few iterations of each architecture on the first examples of
# Fashion-MNIST, their outputs, a resume, and a clear error for a bad flag value. Run by CTest with
# -DTRAIN_CNN=<exe> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# 256 examples in batches of 64: 4 iterations per epoch.
smoke_run(TRUE "${TRAIN_CNN}" --arch cnn --epoch 1 --limit 256 --batchsize 64 --out cnn)
smoke_expect_outputs(cnn loss.png accuracy.png snapshot_iter_4)
smoke_run(TRUE "${TRAIN_CNN}" --arch cnn --epoch 2 --limit 256 --batchsize 64 --out cnn --resume cnn/snapshot_iter_4)
smoke_expect_file(cnn/snapshot_iter_8 "the resumed run did not reach iteration 8")

smoke_run(TRUE "${TRAIN_CNN}" --arch resnet --epoch 1 --limit 128 --batchsize 32 --out resnet --bn-population)
smoke_expect_outputs(resnet loss.png accuracy.png snapshot_iter_4)

smoke_run(FALSE "${TRAIN_CNN}" --arch vgg)
if(NOT smoke_output MATCHES "arch")
  message(FATAL_ERROR "a bad --arch value must fail with a message naming the flag, got: ${smoke_output}")
endif()
