# Smoke test of examples/train_cnn: a few iterations of each architecture on the first examples of
# Fashion-MNIST, their outputs, a resume, the large-batch flags, and clear errors for bad flag values.
# Run by CTest with -DTRAIN_CNN=<exe> -DWORK_DIR=<dir>.
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

# Large-batch flags: LARS with the scaling rule (lr 1.0 x 64 / 32) and a warm-up before the step
# decay, resumed mid-schedule; LAMB; bad values named.
smoke_run(TRUE "${TRAIN_CNN}" --arch cnn --epoch 1 --limit 256 --batchsize 64 --out lars --optimizer lars
          --base-batchsize 32 --warmup-epochs 1.5)
if(NOT smoke_output MATCHES "lars, lr 2,")
  message(FATAL_ERROR "--optimizer lars --base-batchsize 32 at batch 64 must train at lr 2, got: ${smoke_output}")
endif()
smoke_expect_outputs(lars loss.png accuracy.png snapshot_iter_4)
smoke_run(TRUE "${TRAIN_CNN}" --arch cnn --epoch 2 --limit 256 --batchsize 64 --out lars --optimizer lars
          --base-batchsize 32 --warmup-epochs 1.5 --resume lars/snapshot_iter_4)
smoke_expect_file(lars/snapshot_iter_8 "the resumed LARS run did not reach iteration 8")
smoke_run(TRUE "${TRAIN_CNN}" --arch cnn --epoch 1 --limit 128 --batchsize 64 --out lamb --optimizer lamb)
smoke_expect_outputs(lamb snapshot_iter_2)
smoke_run(FALSE "${TRAIN_CNN}" --optimizer sgd)
if(NOT smoke_output MATCHES "--optimizer")
  message(FATAL_ERROR "a bad --optimizer value must fail with a message naming the flag, got: ${smoke_output}")
endif()
smoke_run(FALSE "${TRAIN_CNN}" --lr 0)
if(NOT smoke_output MATCHES "--lr: must be a positive number, got 0")
  message(FATAL_ERROR "--lr 0 must fail with a message naming the flag, got: ${smoke_output}")
endif()

smoke_run(FALSE "${TRAIN_CNN}" --arch vgg)
if(NOT smoke_output MATCHES "arch")
  message(FATAL_ERROR "a bad --arch value must fail with a message naming the flag, got: ${smoke_output}")
endif()
