# Smoke test of examples/train_mnist with two ranks: one short epoch with --communicator flat, rank 0's
# log and every rank's snapshot, then a resume from the newest snapshot both ranks have. Run by CTest
# with -DMPI_COMMAND="<mpiexec ... train_mnist>" (space-separated) -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")

set(common --communicator flat --batchsize 1000 --unit 50 --out result)
smoke_run(TRUE ${cmd} ${common} --epoch 1)
# 60000 examples on 2 ranks in batches of 1000: 30 iterations per epoch.
smoke_expect_outputs(result snapshot_mn_iter_30_rank_0_of_2.npz snapshot_mn_iter_30_rank_1_of_2.npz)

smoke_run(TRUE ${cmd} ${common} --epoch 2 --resume result)
smoke_expect_file(result/snapshot_mn_iter_60_rank_1_of_2.npz "the resumed run with 2 ranks did not reach iteration 60")
