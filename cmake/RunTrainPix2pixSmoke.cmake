# Smoke test of examples/train_pix2pix on a made-up facade set in the CMP Facade Database's layout
# (make_facades: palette PNG label maps and JPEG photos whose colours follow the classes). A short
# run with small networks must lower the L1 term (dec/loss_rec) and bring the test set's
# (validation/main/loss_rec) below a bar an untrained generator (about 45) does not reach; it writes
# the previews, the log with every network's loss, and snapshots; it resumes; a bad --crop, a label
# PNG without a palette and a missing label file fail naming them. The data stay in WORK_DIR/data
# for the resume test. Run by CTest with -DTRAIN_PIX2PIX=<exe> -DMAKE_FACADES=<exe> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

smoke_run(TRUE "${MAKE_FACADES}" data --count 12 --width 72 --height 64)
# 8 training pairs in batches of 2: 4 iterations per epoch. The images' shorter side is resized to
# 143 for the crop of 128, whose encoder ends at 1 x 1 pixels: a batch of 2 gives its last batch
# normalization two values per channel (one would leave test mode's running variance near 0).
set(common --train-range 1 9 --test-range 9 13 --crop 128 --ch 8 --batchsize 2
           --display-interval 20 --snapshot-interval 80)
smoke_run(TRUE "${TRAIN_PIX2PIX}" --dataset data ${common} --epoch 40 --out one)
foreach(f snapshot_iter_160 preview/image_in_00000080.png preview/image_gen_00000080.png preview/image_gt_00000080.png
          preview/image_gen_00000160.png)
  smoke_expect_file(one/${f} "train_pix2pix did not write one/${f}")
endforeach()
file(READ "${WORK_DIR}/one/preview/image_gen_00000160.png" png LIMIT 8 HEX)
if(NOT png STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "the preview is not a PNG file (starts with ${png})")
endif()
file(READ "${WORK_DIR}/one/log" log)
string(JSON entries LENGTH "${log}")
math(EXPR last "${entries} - 1")
foreach(key enc/loss dec/loss dis/loss dec/loss_rec dec/loss_adv validation/main/loss_rec)
  string(JSON value ERROR_VARIABLE missing GET "${log}" ${last} ${key})
  if(missing)
    message(FATAL_ERROR "one/log lacks ${key}:\n${log}")
  endif()
endforeach()
string(JSON first GET "${log}" 0 dec/loss_rec)
string(JSON final GET "${log}" ${last} dec/loss_rec)
string(JSON val GET "${log}" ${last} validation/main/loss_rec)
string(REGEX REPLACE "\\..*" "" first_int "${first}")
math(EXPR bar "${first_int} * 6 / 10")
if(NOT final LESS bar OR NOT val LESS 20)
  message(FATAL_ERROR "dec/loss_rec must fall to under 60% of its first value and validation/main/loss_rec below "
                      "20, got dec/loss_rec ${first} then ${final}, validation/main/loss_rec ${val}")
endif()

smoke_run(TRUE "${TRAIN_PIX2PIX}" --dataset data ${common} --epoch 45 --out one --resume one)
smoke_expect_file(one/snapshot_iter_180 "the resumed run did not reach iteration 180")

smoke_run(FALSE "${TRAIN_PIX2PIX}" --dataset data ${common} --crop 100)
if(NOT smoke_output MATCHES "--crop")
  message(FATAL_ERROR "--crop 100 must fail naming the flag, got: ${smoke_output}")
endif()
# A label map without a palette (an RGB PNG: a preview) and a missing one.
file(COPY "${WORK_DIR}/data/" DESTINATION "${WORK_DIR}/bad")
file(COPY_FILE "${WORK_DIR}/one/preview/image_gt_00000080.png" "${WORK_DIR}/bad/cmp_b0003.png")
smoke_run(FALSE "${TRAIN_PIX2PIX}" ${common} --dataset bad --out bad_out)
if(NOT smoke_output MATCHES "cmp_b0003.png")
  message(FATAL_ERROR "a label PNG without a palette must fail naming the file, got: ${smoke_output}")
endif()
file(REMOVE "${WORK_DIR}/bad/cmp_b0003.png" "${WORK_DIR}/bad/cmp_b0011.png")
file(COPY_FILE "${WORK_DIR}/data/cmp_b0003.png" "${WORK_DIR}/bad/cmp_b0003.png")
smoke_run(FALSE "${TRAIN_PIX2PIX}" ${common} --dataset bad --out bad_out)
if(NOT smoke_output MATCHES "cmp_b0011.png not found" OR NOT smoke_output MATCHES "cmp.felk.cvut.cz")
  message(FATAL_ERROR "a missing label file must fail naming it and the dataset, got: ${smoke_output}")
endif()
