# Smoke test of examples/train_mnist: one short epoch on Fashion-MNIST, its outputs, a resume, the
# large-batch flags, and clear errors for bad flag values. Run by CTest with -DTRAIN_MNIST=<exe> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

smoke_run(TRUE "${TRAIN_MNIST}" --epoch 1 --batchsize 1000 --unit 50 --out result)
smoke_expect_outputs(result loss.png accuracy.png snapshot_iter_60)

smoke_run(TRUE "${TRAIN_MNIST}" --epoch 2 --batchsize 1000 --unit 50 --out result --resume result/snapshot_iter_60)
smoke_expect_file(result/snapshot_iter_120 "the resumed run did not reach iteration 120")

# Large-batch flags: momentum SGD at 10 x the base batch (lr 0.01 x 10) with a warm-up, and RMSprop
# warm-up; bad values named.
smoke_run(TRUE "${TRAIN_MNIST}" --epoch 1 --batchsize 1000 --unit 50 --limit 4000 --out sgd --optimizer momentum_sgd
          --base-batchsize 100 --warmup-epochs 0.5)
if(NOT smoke_output MATCHES "momentum_sgd, lr 0.1, global batch 1000")
  message(FATAL_ERROR "the scaling rule must give lr 0.1 for batch 1000 from 0.01 at 100, got: ${smoke_output}")
endif()
smoke_expect_outputs(sgd snapshot_iter_4)
smoke_run(TRUE "${TRAIN_MNIST}" --epoch 1 --batchsize 1000 --unit 50 --limit 4000 --out rmsprop_warmup
          --optimizer rmsprop_warmup --warmup-epochs 0.5)
smoke_expect_outputs(rmsprop_warmup snapshot_iter_4)
smoke_run(FALSE "${TRAIN_MNIST}" --base-batchsize 0)
if(NOT smoke_output MATCHES "--base-batchsize")
  message(FATAL_ERROR "--base-batchsize 0 must fail with a message naming the flag, got: ${smoke_output}")
endif()

smoke_run(FALSE "${TRAIN_MNIST}" --limit 100 --ghost-batch 50)
if(NOT smoke_output MATCHES "--ghost-batch 50: the model has no BatchNormalization layer")
  message(FATAL_ERROR "--ghost-batch on the MLP (no batch normalization) must fail naming the flag, got: ${smoke_output}")
endif()
smoke_run(FALSE "${TRAIN_MNIST}" --epoch abc)
if(NOT smoke_output MATCHES "epoch")
  message(FATAL_ERROR "a bad --epoch value must fail with a message naming the flag, got: ${smoke_output}")
endif()

# Regressions: a negative seed was taken modulo 2^64; a regular file as --dataset-dir was reported
# as missing.
smoke_run(FALSE "${TRAIN_MNIST}" --seed -1)
if(NOT smoke_output MATCHES "--seed")
  message(FATAL_ERROR "a negative --seed must fail with a message naming the flag, got: ${smoke_output}")
endif()
file(WRITE "${WORK_DIR}/not_a_dir" "x")
smoke_run(FALSE "${TRAIN_MNIST}" --epoch 1 --dataset-dir not_a_dir)
if(NOT smoke_output MATCHES "not_a_dir is not a directory")
  message(FATAL_ERROR "a regular file as --dataset-dir must be named as not a directory, got: ${smoke_output}")
endif()
