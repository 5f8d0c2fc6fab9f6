# Smoke test of examples/train_imagenet, compute_mean and make_image_dataset: a small ImageNet-layout
# dataset of JPEGs from Fashion-MNIST, its mean, an epoch of ResNet-50 on 32 x 32 crops in one process
# and a resume, an epoch on 2 ranks with ChainerMN's per-pixel mean (only the root reads the pairs
# file), and what a corrupt image and a bad pairs file get. Run by CTest with -DTRAIN_IMAGENET=<exe>
# -DCOMPUTE_MEAN=<exe> -DMAKE_DATASET=<exe> -DMPI_COMMAND="<mpiexec ... train_imagenet>" -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(mpi UNIX_COMMAND "${MPI_COMMAND}")

# 4 training and 2 validation images per class: 40 and 20.
smoke_run(TRUE "${MAKE_DATASET}" --out data --per-class 4 --val-per-class 2 --size 36)
smoke_expect_file(data/train/coat/3.jpg "make_image_dataset wrote no data/train/coat/3.jpg")
smoke_expect_file(data/mean.npy "make_image_dataset wrote no mean.npy")
smoke_run(TRUE "${COMPUTE_MEAN}" data/train.txt --root data --output mean.npy)
if(NOT smoke_output MATCHES "the mean of 40 images, shape \\(3, 36, 36\\)")
  message(FATAL_ERROR "compute_mean must report 40 images of (3, 36, 36), got: ${smoke_output}")
endif()

# Batches of 8: 5 iterations per epoch.
set(common data/train.txt data/val.txt --root data --arch resnet50 --crop 32 --batchsize 8 --val-batchsize 10
    --loaderjob 2)
smoke_run(TRUE "${TRAIN_IMAGENET}" ${common} --epoch 1 --out one)
smoke_expect_outputs(one snapshot_iter_5)
file(READ "${WORK_DIR}/one/log" log)
if(NOT log MATCHES "main/data_wait")
  message(FATAL_ERROR "one/log lacks main/data_wait (the time the step waited for data):\n${log}")
endif()
smoke_run(TRUE "${TRAIN_IMAGENET}" ${common} --epoch 2 --out one --resume one)
smoke_expect_file(one/snapshot_iter_10 "the resumed run did not reach iteration 10")

smoke_run(TRUE ${mpi} ${common} --mean mean.npy --communicator flat --epoch 1 --out two)
smoke_expect_outputs(two snapshot_mn_iter_3_rank_0_of_2.npz snapshot_mn_iter_3_rank_1_of_2.npz)

# A corrupt image is an error naming it; --skip-unreadable skips it with a warning.
file(WRITE "${WORK_DIR}/data/train/coat/broken.jpg" "not a jpeg")
file(READ "${WORK_DIR}/data/train.txt" pairs)
file(WRITE "${WORK_DIR}/data/broken.txt" "train/coat/broken.jpg 4\n${pairs}")
smoke_run(FALSE "${TRAIN_IMAGENET}" data/broken.txt data/val.txt --root data --crop 32 --batchsize 8 --epoch 1
          --out broken)
if(NOT smoke_output MATCHES "broken.jpg: not a JPEG or PNG file")
  message(FATAL_ERROR "a corrupt image must fail naming the file, got: ${smoke_output}")
endif()
smoke_run(TRUE "${TRAIN_IMAGENET}" data/broken.txt data/val.txt --root data --crop 32 --batchsize 8 --epoch 1
          --out skipped --skip-unreadable)
if(NOT smoke_output MATCHES "skipped an unreadable image .*broken.jpg")
  message(FATAL_ERROR "--skip-unreadable must warn naming the file, got: ${smoke_output}")
endif()
file(WRITE "${WORK_DIR}/data/bad.txt" "train/coat/0.jpg 4\ntrain/coat/1.jpg\n")
smoke_run(FALSE "${TRAIN_IMAGENET}" data/bad.txt data/val.txt --root data --crop 32 --epoch 1 --out bad)
if(NOT smoke_output MATCHES "bad.txt' line 2: expected \"path label\"")
  message(FATAL_ERROR "a bad pairs file must fail naming the line, got: ${smoke_output}")
endif()

# ChainerMN's other two networks, at their 224 x 224: two iterations each.
smoke_run(TRUE "${MAKE_DATASET}" --out data224 --per-class 1 --val-per-class 1 --size 224)
foreach(arch googlenetbn resnext50)
  smoke_run(TRUE "${TRAIN_IMAGENET}" data224/train.txt data224/val.txt --root data224 --arch ${arch} --batchsize 2
            --val-batchsize 2 --limit 4 --epoch 1 --loaderjob 1 --out ${arch})
  smoke_expect_outputs(${arch} snapshot_iter_2)
endforeach()
