# Smoke test of examples/train_vae: three short epochs must lower the validation loss (the negative
# ELBO) well below the first epoch's and write the five image grids; --binary runs; bad flags fail
# naming them. Run by CTest with -DTRAIN_VAE=<exe> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

smoke_run(TRUE "${TRAIN_VAE}" --epoch 3 --limit 3000 --dim-h 200 --out result)
foreach(f log train.png train_reconstructed.png test.png test_reconstructed.png sampled.png)
  smoke_expect_file(result/${f} "the run did not write result/${f}")
endforeach()
file(READ "${WORK_DIR}/result/log" log)
string(JSON first GET "${log}" 0 validation/main/loss)
string(JSON last GET "${log}" 2 validation/main/loss)
string(JSON kl GET "${log}" 2 main/kl_penalty)
# An untrained decoder scores about 784 log 2 = 543 nats per image; a VAE that learned anything, far less.
if(NOT last LESS 400 OR NOT last LESS first OR NOT kl GREATER 0)
  message(FATAL_ERROR "the validation loss must fall below 400 and below the first epoch's (${first}), got ${last} "
                      "(KL term ${kl})")
endif()

smoke_run(TRUE "${TRAIN_VAE}" --epoch 1 --limit 200 --dim-h 50 --binary -k 2 --out binary)
smoke_expect_file(binary/sampled.png "the --binary run did not write binary/sampled.png")

smoke_run(FALSE "${TRAIN_VAE}" --dim-z 0)
if(NOT smoke_output MATCHES "--dim-z")
  message(FATAL_ERROR "--dim-z 0 must fail with a message naming the flag, got: ${smoke_output}")
endif()
smoke_run(FALSE "${TRAIN_VAE}" --beta nan)
if(NOT smoke_output MATCHES "--beta")
  message(FATAL_ERROR "--beta nan must fail with a message naming the flag, got: ${smoke_output}")
endif()
