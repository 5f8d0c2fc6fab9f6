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

smoke_run(TRUE "${TRAIN_CNN}" --arch resnet --epoch 1 --limit 128 --batchsize 32 --out resnet --bn-population
          --profile)
smoke_expect_outputs(resnet loss.png accuracy.png snapshot_iter_4)
# --profile: the function and link timers' tables (4 training steps of 20 convolutions each, and
# the evaluation's).
if(NOT smoke_output MATCHES "FunctionName  ElapsedTime  Occurrence" OR NOT smoke_output MATCHES " convolution_2d +[0-9.]+(sec|ms|us) +[0-9]+"
   OR NOT smoke_output MATCHES "LinkName  ElapsedTime  Occurrence" OR NOT smoke_output MATCHES " Convolution2D +[0-9.]+")
  message(FATAL_ERROR "--profile must print the function and link time tables, got: ${smoke_output}")
endif()

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
# --ghost-batch: a ghost batch as large as the batch is plain batch normalization (the same training
# loss; the running variance may round differently),
# a smaller one changes the statistics; with --bn-population the pass runs on batches of the ghost
# size (100 examples: no error for the partial last one). Bad values are named.
function(smoke_losses dir out)
  file(READ "${WORK_DIR}/${dir}/log" log)
  string(REGEX MATCHALL "\"main/loss\": [^,]*" losses "${log}")
  set(${out} "${losses}" PARENT_SCOPE)
endfunction()
smoke_run(TRUE "${TRAIN_CNN}" --arch resnet --epoch 1 --limit 64 --batchsize 32 --out ghost_none)
smoke_run(TRUE "${TRAIN_CNN}" --arch resnet --epoch 1 --limit 64 --batchsize 32 --out ghost_32 --ghost-batch 32)
smoke_run(TRUE "${TRAIN_CNN}" --arch resnet --epoch 1 --limit 64 --batchsize 32 --out ghost_8 --ghost-batch 8)
smoke_losses(ghost_none none)
smoke_losses(ghost_32 g32)
smoke_losses(ghost_8 g8)
if(NOT none STREQUAL g32 OR none STREQUAL g8 OR none STREQUAL "")
  message(FATAL_ERROR "--ghost-batch 32 at batch 32 must equal plain batch normalization and 8 must differ: "
                      "plain ${none}, 32: ${g32}, 8: ${g8}")
endif()
smoke_run(TRUE "${TRAIN_CNN}" --arch resnet --epoch 1 --limit 100 --batchsize 64 --out ghost_pop --ghost-batch 32
          --bn-population)
smoke_expect_outputs(ghost_pop snapshot_iter_2)
smoke_run(FALSE "${TRAIN_CNN}" --arch resnet --limit 64 --batchsize 32 --ghost-batch 24)
if(NOT smoke_output MATCHES "--ghost-batch 24: the batch size 32 is not a multiple of it")
  message(FATAL_ERROR "--ghost-batch 24 at batch 32 must fail naming the flag, got: ${smoke_output}")
endif()
smoke_run(FALSE "${TRAIN_CNN}" --arch cnn --limit 64 --batchsize 32 --ghost-batch 16)
if(NOT smoke_output MATCHES "--ghost-batch 16: the model has no BatchNormalization layer")
  message(FATAL_ERROR "--ghost-batch on the cnn (no batch normalization) must fail naming the flag, got: ${smoke_output}")
endif()

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
