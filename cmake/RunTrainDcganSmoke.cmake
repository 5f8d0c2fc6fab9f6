# Smoke test of examples/train_dcgan: a directory of JPEGs (make_image_dataset), a short run with
# small networks writing preview images, a resume, and a run on 2 ranks. Run by CTest with
# -DTRAIN_DCGAN=<exe> -DMAKE_DATASET=<exe> -DMPI_COMMAND="<mpiexec ... train_dcgan>" -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(mpi UNIX_COMMAND "${MPI_COMMAND}")

smoke_run(TRUE "${MAKE_DATASET}" --out data --per-class 2 --val-per-class 1 --size 40)
# 20 images in batches of 5: 4 iterations per epoch; a preview every 2.
set(common --image-dir data/train --ch 32 --n-hidden 16 --batchsize 5 --snapshot-interval 2)
smoke_run(TRUE "${TRAIN_DCGAN}" ${common} --epoch 1 --out one)
smoke_expect_file(one/preview/image00000002.png "train_dcgan wrote no preview at iteration 2")
smoke_expect_file(one/preview/image00000004.png "train_dcgan wrote no preview at iteration 4")
smoke_expect_file(one/snapshot_iter_4 "train_dcgan wrote no snapshot")
file(READ "${WORK_DIR}/one/preview/image00000004.png" png LIMIT 8 HEX)
if(NOT png STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "the preview is not a PNG file (starts with ${png})")
endif()
file(READ "${WORK_DIR}/one/log" log)
if(NOT log MATCHES "gen/loss" OR NOT log MATCHES "dis/loss")
  message(FATAL_ERROR "one/log lacks gen/loss or dis/loss:\n${log}")
endif()
smoke_run(TRUE "${TRAIN_DCGAN}" ${common} --epoch 2 --out one --resume one)
smoke_expect_file(one/snapshot_iter_8 "the resumed run did not reach iteration 8")
smoke_run(TRUE ${mpi} ${common} --epoch 1 --communicator flat --out two)
smoke_expect_file(two/preview/image00000002.png "the 2-rank run wrote no preview")
