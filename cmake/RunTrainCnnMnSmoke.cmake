# Smoke test of examples/train_cnn with two ranks: a ResNet epoch on the first examples of
# Fashion-MNIST with multi-node batch normalization and population statistics, rank 0's log and every
# rank's snapshot, a resume from the newest snapshot both ranks have, and the error for --mnbn with the
# cnn. Run by CTest with -DMPI_COMMAND="<mpiexec ... train_cnn>" (space-separated) -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")

# 128 examples on 2 ranks in batches of 32: 2 iterations per epoch.
set(common --arch resnet --communicator flat --mnbn --bn-population --limit 128 --batchsize 32 --out result)
smoke_run(TRUE ${cmd} ${common} --epoch 1)
smoke_expect_outputs(result snapshot_mn_iter_2_rank_0_of_2.npz snapshot_mn_iter_2_rank_1_of_2.npz)

smoke_run(TRUE ${cmd} ${common} --epoch 2 --resume result)
smoke_expect_file(result/snapshot_mn_iter_4_rank_1_of_2.npz "the resumed run with 2 ranks did not reach iteration 4")

smoke_run(FALSE ${cmd} --arch cnn --communicator flat --mnbn --limit 64 --epoch 1 --out bad)
if(NOT smoke_output MATCHES "--mnbn needs --arch resnet")
  message(FATAL_ERROR "--mnbn with the cnn must fail naming the flag, got: ${smoke_output}")
endif()
