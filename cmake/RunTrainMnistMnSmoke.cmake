# Smoke test of examples/train_mnist with two ranks: one short epoch with --communicator flat, rank 0's
# log and every rank's snapshot, then a resume from the newest snapshot both ranks have; --timeline on. Run by CTest
# with -DMPI_COMMAND="<mpiexec ... train_mnist>" (space-separated) -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")

set(common --communicator flat --batchsize 1000 --unit 50 --out result --timeline tl.json)
smoke_run(TRUE ${cmd} ${common} --epoch 1 --timeout 120)
# 60000 examples on 2 ranks in batches of 1000: 30 iterations per epoch.
smoke_expect_outputs(result snapshot_mn_iter_30_rank_0_of_2.npz snapshot_mn_iter_30_rank_1_of_2.npz)

smoke_run(TRUE ${cmd} ${common} --epoch 2 --resume result)
smoke_expect_file(result/snapshot_mn_iter_60_rank_1_of_2.npz "the resumed run with 2 ranks did not reach iteration 60")
# --timeline: a file per rank, the merged one, and the summary in the log.
smoke_expect_outputs(result tl.json tl.rank0.json tl.rank1.json)
file(READ "${WORK_DIR}/result/log" log)
if(NOT log MATCHES "\"timeline/exposed\"" OR NOT log MATCHES "\"timeline/slowest_rank\"")
  message(FATAL_ERROR "--timeline's summary is missing from the log: ${log}")
endif()

# Two ranks without --communicator would each train alone into the same --out: refused.
smoke_run(FALSE ${cmd} --epoch 1 --out alone)
if(NOT smoke_output MATCHES "rank [01]: train_mnist: this is process [01] of 2 started by an MPI launcher, but --communicator is not given")
  message(FATAL_ERROR "two ranks without --communicator must be refused, got: ${smoke_output}")
endif()
if(EXISTS "${WORK_DIR}/alone")
  message(FATAL_ERROR "the refused run wrote alone/")
endif()
# An error on every rank: one whole line each, prefixed with the rank.
smoke_run(FALSE ${cmd} --communicator nosuch --epoch 1)
foreach(rank 0 1)
  if(NOT smoke_output MATCHES "(^|\n)rank ${rank}: train_mnist: create_communicator[^\n]*nosuch")
    message(FATAL_ERROR "rank ${rank}'s error line is missing or broken, got: ${smoke_output}")
  endif()
endforeach()
